"""A broker within its file descriptors (RLIMIT_NOFILE set for its process).

* At 4,096 descriptors, CreateTopics for 100,000 partitions (kafka-python's
  admin client, validate_only and for real) is refused with POLICY_VIOLATION
  naming max.broker.partitions, the limit fd_budget derives and the count;
  no file is created, a kafka-python producer and a confluent-kafka consumer
  go on working, and the broker stops and starts again cleanly.
* A broker started with more partitions on disk than it has descriptors
  (laid out by a broker with a higher limit, then restarted at 1,024) starts,
  keeps no more log files open than its budget, takes records on every
  partition and reads every partition back, refuses new topics, and its log
  never says "Too many open files" or that a partition went offline.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient

from interop_tests.broker import Broker
from interop_tests.clients import confluent_kafka as confluent
from interop_tests.clients import kafka_python
from interop_tests.conftest import HEAVY, BrokerFactory
from interop_tests.support import (
    Sample,
    assert_acknowledged_in_order,
    assert_same_records,
    counts_of,
    make_samples,
)
from wirekafka.fd_budget import fd_budget
from wirekafka.protocol.errors import ErrorCode

# With the other tests that push a broker to a resource's edge (interop_tests/conftest.py,
# HEAVY): one at a time, on one xdist worker.
pytestmark = HEAVY

LIMITED_FDS = 4096
LOW_FDS = 1024
HUGE_PARTITIONS = 100_000
ADMIN_TIMEOUT_MS = 120_000
TROUBLE = ("Too many open files", "out of file descriptors", "offline")


def create_topic(
    bootstrap: str, name: str, partitions: int, *, validate_only: bool = False
) -> dict:
    """CreateTopics through kafka-python's admin client; the topic's result."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=ADMIN_TIMEOUT_MS)
    try:
        response = admin.create_topics(
            {name: {"num_partitions": partitions, "replication_factor": 1}},
            timeout_ms=ADMIN_TIMEOUT_MS,
            validate_only=validate_only,
            raise_errors=False,
        )
    finally:
        admin.close()
    [topic] = response["topics"]
    assert topic["name"] == name
    return topic


def data_files_open(broker: Broker) -> list[str]:
    """The broker's descriptors on files in its data dir."""
    prefix = f"{broker.data_dir}/"
    return [target for target in broker.open_fds() if target.startswith(prefix)]


def assert_no_trouble(broker: Broker) -> None:
    log = broker.stderr_text()
    for words in TROUBLE:
        assert words not in log, f"the broker's log says {words!r}\n{broker.output()}"


def test_a_hundred_thousand_partitions_are_refused_and_the_broker_carries_on(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    budget = fd_budget(LIMITED_FDS)
    broker = broker_factory(fd_limit=LIMITED_FDS)
    assert broker.open_file_limit() == LIMITED_FDS
    huge = topic_name("huge")
    for validate_only in (True, False):
        refused = create_topic(broker.bootstrap, huge, HUGE_PARTITIONS, validate_only=validate_only)
        assert refused["error_code"] == ErrorCode.POLICY_VIOLATION, refused
        message = refused["error_message"]
        assert f"max.broker.partitions={budget.max_partitions}" in message, message
        assert "hosts 0 now" in message, message
    assert not [p for p in broker.data_dir.iterdir() if p.name.startswith(huge)]

    topic = topic_name("after")  # auto-created, 3 partitions
    samples = make_samples(300, "fd-limit")
    acknowledged = kafka_python.produce(broker.bootstrap, topic, samples, None)
    assert_acknowledged_in_order(samples, [(m.partition, m.offset) for m in acknowledged])
    with confluent.consumer_for(broker.bootstrap) as consumer:
        got = confluent.read_all(consumer, topic, counts_of(samples))
    assert_same_records(samples, got, what="confluent-kafka after the refusal")
    assert_no_trouble(broker)

    broker.restart()  # a clean stop (exit 0), and a start at the same limit
    assert broker.open_file_limit() == LIMITED_FDS
    with kafka_python.consumer_for(broker.bootstrap) as consumer:
        got = kafka_python.read_all(consumer, topic, counts_of(samples))
    assert_same_records(samples, got, what="kafka-python after the restart")
    broker.stop()
    assert_no_trouble(broker)


def produce_one_each(broker: Broker, topic: str, partitions: int, tag: str) -> list[Sample]:
    samples = make_samples(partitions, tag, partitions=partitions)
    acknowledged = kafka_python.produce(broker.bootstrap, topic, samples, None)
    assert sorted((m.partition, m.topic) for m in acknowledged) == [
        (p, topic) for p in range(partitions)
    ]
    return samples


@pytest.mark.slow
def test_more_partitions_on_disk_than_descriptors_start_and_are_served(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    low = fd_budget(LOW_FDS)
    # More partitions than the restarted process has descriptors, by the whole of
    # what its log files may keep open: one descriptor each would not do.
    partitions = low.fd_limit + low.open_files
    broker = broker_factory(settings={"max.broker.partitions": partitions + 100})
    topic = topic_name("wide")
    created = create_topic(broker.bootstrap, topic, partitions)
    assert created["error_code"] == ErrorCode.NONE, created
    first = produce_one_each(broker, topic, partitions, "first")
    broker.stop()

    del broker.overrides["max.broker.partitions"]  # from now on the limit follows the fds
    broker.fd_limit = LOW_FDS
    broker.start()
    assert broker.open_file_limit() == LOW_FDS
    assert len(data_files_open(broker)) <= low.open_files
    second = produce_one_each(broker, topic, partitions, "second")
    assert len(data_files_open(broker)) <= low.open_files

    # A fetch response holds one descriptor per partition it sends from until it
    # is written out: each consumer reads as many partitions as half the budget.
    expected = first + second
    chunk = low.open_files // 2
    with kafka_python.consumer_for(broker.bootstrap) as consumer:
        for start in range(0, partitions, chunk):
            wanted = range(start, min(start + chunk, partitions))
            got = kafka_python.read_all(consumer, topic, dict.fromkeys(wanted, 2))
            assert_same_records(
                [s for s in expected if s.partition in wanted],
                got,
                what=f"partitions {wanted.start}-{wanted.stop - 1} at {LOW_FDS} descriptors",
            )

    refused = create_topic(broker.bootstrap, topic_name("one-more"), 1)
    assert refused["error_code"] == ErrorCode.POLICY_VIOLATION, refused
    assert f"max.broker.partitions={low.max_partitions}" in refused["error_message"]
    assert f"hosts {partitions} now" in refused["error_message"]
    broker.stop()
    assert_no_trouble(broker)
