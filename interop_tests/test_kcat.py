"""What only kcat does: its command line's own ways to start and fail.

The shared scenarios (``test_round_trips.py``, ``test_cross_client.py``) run
kcat through its adapter (``interop_tests/clients/kcat.py``). Here: an offset
counted back from each partition's end (``-o -N``, which kcat resolves from
the end offset ListOffsets gives), and consuming a topic that does not exist,
which fails instead of waiting.
"""

from __future__ import annotations

from collections.abc import Callable

from interop_tests.broker import Broker
from interop_tests.clients import kcat
from interop_tests.conftest import BrokerFactory
from interop_tests.support import PARTITIONS, by_partition, counts_of


def test_offsets_counted_from_the_end(broker: Broker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    samples = kcat.ADAPTER.make_samples(300, "kcat-tail")
    kcat.ADAPTER.produce(broker.bootstrap, topic, samples, codec="gzip")
    counts = counts_of(samples)
    tail = kcat.consume(broker.bootstrap, topic, "-o", "-5")
    assert sorted((g.partition, g.offset) for g in tail) == sorted(
        (p, counts[p] - 5 + i) for p in range(PARTITIONS) for i in range(5)
    )
    written = by_partition(samples)
    for p, got in by_partition(tail).items():
        assert [(g.key, g.value) for g in got] == [(s.key, s.value) for s in written[p][-5:]]


def test_consuming_a_missing_topic_fails(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    topic = topic_name()
    consumed = kcat.run_kcat(
        ["-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-e", "-m", "5", *kcat.NO_WAIT],
        check=False,
    )
    assert consumed.returncode != 0, "kcat consumed from a topic that does not exist"
    assert "Unknown topic or partition" in consumed.stderr.decode(), consumed.stderr
