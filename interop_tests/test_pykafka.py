"""pykafka 2.8 against wirekafka: producer and simple consumer, no ZooKeeper.

pykafka speaks old protocol versions: with ``broker_version="0.9.0"`` (its
default) it sends no ApiVersions and uses Metadata v0, Produce v0 (message
sets of magic 0), Fetch v0 and ListOffsets v0; with ``"0.10.0"`` it asks
ApiVersions v0 first and writes magic 1 with timestamps (Produce v2), but
still reads with Fetch v1 (magic 0, no timestamps) and asks ListOffsets v1. Either way it reads only magic 0
and 1, so everything it fetches has been converted down by the broker if it
was stored as record batches. No headers (magic 0/1 have none).

Consumers are SimpleConsumers with no consumer group (no offset commits).
Topics are auto-created (pykafka asks Metadata for the topic).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest
from kafka import KafkaConsumer, TopicPartition
from pykafka import KafkaClient
from pykafka.common import CompressionType, OffsetType
from pykafka.exceptions import UnknownTopicOrPartition

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.support import (
    PARTITIONS,
    RECORDS,
    Deadline,
    Got,
    Sample,
    assert_acknowledged_in_order,
    assert_same_records,
    make_samples,
)

CODECS = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
}
BROKER_VERSIONS = ["0.9.0", "0.10.0"]
TIMEOUT_S = 60.0


def new_client(bootstrap: str, broker_version: str) -> KafkaClient:
    return KafkaClient(hosts=bootstrap, broker_version=broker_version, socket_timeout_ms=30_000)


def timestamps_supported(broker_version: str) -> bool:
    return broker_version != "0.9.0"


def produce(
    client: KafkaClient,
    topic_name: str,
    samples: Sequence[Sample],
    codec: str = "none",
    *,
    timestamps: bool = True,
) -> list[tuple[int, int]]:
    """Produce every sample to its partition; the (partition, offset) of each, in order.

    pykafka routes by key through a partitioner, so keys must be unique and not null.
    """
    partition_of = {s.key: s.partition for s in samples}
    assert len(partition_of) == len(samples) and None not in partition_of

    def partitioner(partitions, key):
        (partition,) = [p for p in partitions if p.id == partition_of[key]]
        return partition

    topic = client.topics[topic_name]
    producer = topic.get_producer(
        sync=False,
        delivery_reports=True,
        compression=CODECS[codec],
        partitioner=partitioner,
        linger_ms=10,
        min_queued_messages=200,
        max_queued_messages=len(samples) + 1,
        required_acks=1,
        max_retries=0,  # a retry could reorder: any error should fail the test
    )
    try:
        for s in samples:
            producer.produce(
                s.value, partition_key=s.key, timestamp=s.timestamp if timestamps else None
            )
    finally:
        producer.stop()  # flushes everything queued
    acked: dict[bytes, tuple[int, int]] = {}
    while True:
        try:
            message, error = producer.get_delivery_report(block=False)
        except queue.Empty:
            break
        assert error is None, f"pykafka delivery failed: {error!r}"
        acked[message.partition_key] = (message.partition_id, message.offset)
    assert len(acked) == len(samples), f"{len(acked)} delivery reports for {len(samples)} records"
    return [acked[s.key] for s in samples]  # type: ignore[index]


@contextmanager
def simple_consumer(client: KafkaClient, topic_name: str, **config) -> Iterator:
    topic = client.topics[topic_name]
    consumer = topic.get_simple_consumer(
        consumer_group=None,
        auto_commit_enable=False,
        auto_offset_reset=OffsetType.EARLIEST,
        reset_offset_on_start=True,
        consumer_timeout_ms=500,
        **config,
    )
    try:
        yield consumer
    finally:
        consumer.stop()


def to_got(message) -> Got:
    return Got(
        partition=message.partition_id,
        offset=message.offset,
        key=message.partition_key,
        value=message.value,
        headers=(),
        timestamp=message.timestamp or None,
    )


def read(consumer, count: int, what: str) -> list[Got]:
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while len(got) < count:
        deadline.check(f"{what} (read {len(got)} of {count})")
        message = consumer.consume(block=True)
        if message is not None:
            got.append(to_got(message))
    return got


def without_headers(samples: Sequence[Sample]) -> list[Sample]:
    return [Sample(s.partition, s.key, s.value, (), s.timestamp) for s in samples]


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("broker_version", BROKER_VERSIONS)
def test_produce_read_back_and_seek(
    broker: Broker, topic_name: Callable[[str], str], broker_version: str, codec: str
) -> None:
    topic = topic_name()
    with_time = timestamps_supported(broker_version)
    samples = make_samples(
        RECORDS, f"pykafka-{codec}", headers=False, null_keys=False, timestamps=with_time
    )
    client = new_client(broker.bootstrap, broker_version)
    acks = produce(client, topic, samples, codec, timestamps=with_time)  # auto-creates the topic
    assert_acknowledged_in_order(samples, acks)
    assert sorted(client.topics[topic].partitions) == list(range(PARTITIONS))
    counts = {p: sum(1 for s in samples if s.partition == p) for p in range(PARTITIONS)}

    # Fetch v1 carries magic 0, whose LZ4 framing is Kafka's old one (a wrong header
    # checksum); pykafka decodes by its broker_version, so only a "0.9.0" client reads LZ4.
    reader = client if codec != "lz4" else new_client(broker.bootstrap, "0.9.0")
    with simple_consumer(reader, topic) as consumer:
        got = read(consumer, len(samples), f"{topic}")
        # pykafka fetches with Fetch v1 at most, which carries magic 0: no timestamps. They
        # are checked below through ListOffsets v1.
        assert_same_records(samples, got, what=f"pykafka {broker_version}")

        topic_ = reader.topics[topic]
        earliest = topic_.earliest_available_offsets()
        latest = topic_.latest_available_offsets()
        assert {p: r.offset[0] for p, r in earliest.items()} == dict.fromkeys(range(PARTITIONS), 0)
        assert {p: r.offset[0] for p, r in latest.items()} == counts

        # To the end: nothing until a new record, which comes at the end offset.
        consumer.reset_offsets([(topic_.partitions[p], OffsetType.LATEST) for p in counts])
        assert consumer.consume(block=True) is None  # waits consumer_timeout_ms
        extra = [Sample(1, b"extra-key", b"after the end", (), None)]
        assert produce(reader, topic, extra) == [(1, counts[1])]
        (record,) = read(consumer, 1, "the record after the end")
        assert (record.partition, record.offset, record.key, record.value) == (
            1,
            counts[1],
            b"extra-key",
            b"after the end",
        )
        # Back to the beginning of partition 2; 0 and 1 at their ends (an integer sets the
        # last offset consumed, so the next fetch is from the one after it).
        consumer.reset_offsets(
            [
                (topic_.partitions[2], OffsetType.EARLIEST),
                (topic_.partitions[0], counts[0] - 1),
                (topic_.partitions[1], counts[1]),
            ]
        )
        again = read(consumer, counts[2], "partition 2 again")
        assert [(g.partition, g.offset) for g in again] == [(2, o) for o in range(counts[2])]

    if with_time:
        # The timestamps pykafka wrote (magic 1) are stored: ListOffsets v1 finds them.
        t0 = samples[0].timestamp
        assert t0 is not None
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
        try:
            found = consumer.offsets_for_times(
                {TopicPartition(topic, 0): t0 + 3 * 1500, TopicPartition(topic, 1): t0 + 3 * 40 + 2}
            )
        finally:
            consumer.close()
        assert found[TopicPartition(topic, 0)].offset == 1500
        assert found[TopicPartition(topic, 0)].timestamp == t0 + 3 * 1500
        assert found[TopicPartition(topic, 1)].offset == 41
        assert found[TopicPartition(topic, 1)].timestamp == t0 + 3 * 41 + 1

    # pykafka asks ListOffsets v0 even when it knows v1 (its own seek by time). Kafka answers
    # v0 from its segments: for a time after the last append, [log end offset].
    future = int(time.time() * 1000) + 3_600_000
    held = client.topics[topic]  # partitions refer to their topic weakly: keep it alive
    assert held.partitions[0].fetch_offset_limit(future) == [counts[0]]


@pytest.mark.parametrize("broker_version", BROKER_VERSIONS)
def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: Callable[[str], str], broker_version: str
) -> None:
    topic = topic_name()
    client = new_client(broker.bootstrap, broker_version)
    assert topic.encode() not in client.topics
    created = client.topics[topic]  # a Metadata request for the topic creates it
    assert sorted(created.partitions) == list(range(PARTITIONS))
    samples = make_samples(30, "pykafka-auto", headers=False, null_keys=False, timestamps=False)
    assert_acknowledged_in_order(samples, produce(client, topic, samples, timestamps=False))
    with simple_consumer(client, topic) as consumer:
        got = read(consumer, len(samples), topic)
    assert_same_records(samples, got)


@pytest.mark.parametrize("broker_version", BROKER_VERSIONS)
def test_unknown_topic_without_auto_create(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str], broker_version: str
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    topic = topic_name()
    client = new_client(broker.bootstrap, broker_version)
    with pytest.raises(UnknownTopicOrPartition):
        client.topics[topic]
    client.update_cluster()
    assert topic.encode() not in client.topics
