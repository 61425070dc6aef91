"""What only pykafka does: ListOffsets v0, and its managed balanced consumer.

The shared scenarios run pykafka's producer and simple consumer through its
adapters (``interop_tests/clients/pykafka.py``, the 0.9 and the 0.10 protocol).
Here:

* pykafka asks ListOffsets v0 even when it knows v1 (its own seek by time).
  Kafka answers v0 from its segments: for a time after the last append, [the
  log end offset].
* pykafka 2.8's ``get_balanced_consumer(managed=True)`` is the Kafka-group
  path (JoinGroup/SyncGroup v0, OffsetCommit v1): it reads everything produced
  to a 3-partition topic as a member of a Stable group, commits, and the
  committed offsets are what kafka-python 3 reads back. (Its ZooKeeper-balanced
  consumer is in ``test_zk_pykafka.py``.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from kafka import KafkaAdminClient
from pykafka import KafkaClient
from pykafka.common import OffsetType

from interop_tests.broker import Broker
from interop_tests.clients import pykafka
from interop_tests.clients.adapter import ClientAdapter
from interop_tests.clients.registry import REFERENCE
from interop_tests.groups import (
    TIMEOUT_S,
    assert_keys_match,
    create_topic,
    group_name,
    produce,
    start_group_broker,
)
from interop_tests.support import PARTITIONS, counts_of


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


@pytest.mark.parametrize("client", [pytest.param(c, id=c.name) for c in pykafka.ADAPTERS])
def test_list_offsets_v0_after_the_last_append(
    broker: Broker, topic_name: Callable[[str], str], client: ClientAdapter
) -> None:
    assert isinstance(client, pykafka.PyKafka)
    topic = topic_name()
    samples = client.make_samples(300, f"{client.name}-v0")
    client.produce(broker.bootstrap, topic, samples, codec="gzip")
    counts = counts_of(samples)
    future = int(time.time() * 1000) + 3_600_000
    connected = client.client(broker.bootstrap)  # partitions refer to it weakly
    held = connected.topics[topic]
    assert [held.partitions[p].fetch_offset_limit(future) for p in range(PARTITIONS)] == [
        [counts[p]] for p in range(PARTITIONS)
    ]


def describe(bootstrap: str, group: str) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return admin.describe_groups([group])[group]
    finally:
        admin.close()


def test_managed_balanced_consumer(group_broker: Broker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    partitions = 3
    create_topic(group_broker.bootstrap, topic, partitions)
    produced = produce(group_broker.bootstrap, topic, 600, "pykafka", partitions=partitions)
    group = group_name("pykafka")
    got: list[tuple[int, int, str | None]] = []
    failure: list[BaseException] = []
    described: dict = {}

    def consume() -> None:
        try:
            client = KafkaClient(hosts=group_broker.bootstrap, socket_timeout_ms=30_000)
            consumer = client.topics[topic].get_balanced_consumer(
                consumer_group=group.encode(),
                managed=True,
                auto_commit_enable=False,
                auto_offset_reset=OffsetType.EARLIEST,
                consumer_timeout_ms=500,
                heartbeat_interval_ms=1000,
            )
            try:
                deadline = time.monotonic() + TIMEOUT_S
                while len({(p, o) for p, o, _ in got}) < len(produced):
                    if time.monotonic() > deadline:
                        raise AssertionError(f"pykafka read {len(got)} of {len(produced)} records")
                    message = consumer.consume(block=True)
                    if message is not None:
                        got.append(
                            (message.partition_id, message.offset, message.partition_key.decode())
                        )
                described.update(describe(group_broker.bootstrap, group))
                consumer.commit_offsets()
            finally:
                consumer.stop()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=consume, daemon=True, name="pykafka")
    thread.start()
    thread.join(TIMEOUT_S + 30)
    assert not thread.is_alive(), "pykafka's balanced consumer hung"
    if failure:
        raise failure[0]
    # pykafka was a member of a Kafka group while it read (not a simple consumer).
    assert (described["group_state"], described["protocol_type"], len(described["members"])) == (
        "Stable",
        "consumer",
        1,
    ), described
    assert sorted((p, o) for p, o, _ in got) == sorted((p, o) for p, o, _ in produced)
    assert_keys_match(produced, got)
    committed = REFERENCE.committed(group_broker.bootstrap, group, topic, range(partitions))
    assert committed == dict.fromkeys(range(partitions), 200)
