"""kafka-python 3 against wirekafka: produce, read back, seek, create topics.

The producer keeps kafka-python 3's defaults: idempotent, acks=all (so it
needs InitProducerId and sequence checks). Consumers assign partitions and
have no group (group_id=None): groups are tested elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError, TopicAlreadyExistsError

from interop_tests import support
from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.support import (
    CODECS,
    PARTITIONS,
    RECORDS,
    Deadline,
    Got,
    Sample,
    assert_same_records,
    codec_id,
    counts_of,
    got_from_record,
    make_samples,
)

TIMEOUT_S = 60.0


def produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], compression: str | None = None, **config
) -> list:
    """Send every sample to its partition; the RecordMetadata of each, in order."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=compression,
        linger_ms=5,
        request_timeout_ms=30_000,
        **config,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=s.key,
                value=s.value,
                headers=list(s.headers),
                partition=s.partition,
                timestamp_ms=s.timestamp,
            )
            for s in samples
        ]
        producer.flush(timeout=TIMEOUT_S)
        return [future.get(timeout=TIMEOUT_S) for future in futures]
    finally:
        producer.close(timeout=10)


def assert_acknowledged_in_order(samples: Sequence[Sample], metadata: Sequence) -> None:
    """Per partition, the acknowledged offsets are 0, 1, 2... in send order."""
    support.assert_acknowledged_in_order(samples, [(m.partition, m.offset) for m in metadata])


@contextmanager
def consumer_for(bootstrap: str, **config) -> Iterator[KafkaConsumer]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **config,
    )
    try:
        yield consumer
    finally:
        consumer.close()


def poll_until(consumer: KafkaConsumer, done: Callable[[list[Got]], bool], what: str) -> list[Got]:
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while not done(got):
        deadline.check(f"{what} (read {len(got)} so far)")
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(got_from_record(r) for r in records)
    return got


def read_all(consumer: KafkaConsumer, topic: str, counts: dict[int, int]) -> list[Got]:
    """From the beginning of each partition until ``counts[p]`` records each."""
    partitions = [TopicPartition(topic, p) for p in sorted(counts)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()

    def done(got: list[Got]) -> bool:
        return all(consumer.position(tp) >= counts[tp.partition] for tp in partitions) and len(
            got
        ) >= sum(counts.values())

    got = poll_until(consumer, done, f"{sum(counts.values())} records of {topic}")
    assert len(got) == sum(counts.values())
    return got


@pytest.mark.parametrize("codec", CODECS, ids=codec_id)
def test_produce_read_back_and_seek(
    broker: Broker, topic_name: Callable[[str], str], codec: str | None
) -> None:
    topic = topic_name(codec_id(codec))  # auto-created by the producer's Metadata request
    samples = make_samples(RECORDS, f"kp3-{codec_id(codec)}")
    metadata = produce(broker.bootstrap, topic, samples, codec)
    assert_acknowledged_in_order(samples, metadata)
    counts = counts_of(samples)

    with consumer_for(broker.bootstrap) as consumer:
        assert consumer.partitions_for_topic(topic) == set(range(PARTITIONS))
        got = read_all(consumer, topic, counts)
        assert_same_records(samples, got, timestamps=True, what=f"kafka-python 3, {codec}")

        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
        assert consumer.end_offsets(tps) == {tp: counts[tp.partition] for tp in tps}

        # Seek to the beginning: the first record of each partition again.
        consumer.seek_to_beginning()
        for tp in tps:
            assert consumer.position(tp) == 0
        # Seek to the end: nothing until a new record arrives, which comes at the end offset.
        consumer.seek_to_end()
        for tp in tps:
            assert consumer.position(tp) == counts[tp.partition]
        assert consumer.poll(timeout_ms=300) == {}
        extra = Sample(1, b"after-the-end", b"new", (("h", b"v"),), samples[-1].timestamp + 10)
        (meta,) = produce(broker.bootstrap, topic, [extra], codec)
        assert (meta.partition, meta.offset) == (1, counts[1])
        (record,) = poll_until(consumer, lambda got: len(got) >= 1, "the record after the end")
        assert (record.partition, record.offset, record.key, record.value, record.headers) == (
            1,
            counts[1],
            b"after-the-end",
            b"new",
            (("h", b"v"),),
        )

        # Seek by timestamp: each partition's records have the timestamps t0 + 3i + p.
        t0 = samples[0].timestamp
        assert t0 is not None
        queries = {
            TopicPartition(topic, 0): t0 + 3 * 1234,  # exactly record 1234 of partition 0
            TopicPartition(topic, 1): t0 + 3 * 2000,  # between records: the next one, 2000
            TopicPartition(topic, 2): t0 + 3 * 5000,  # past the end of partition 2 (3333)
        }
        found = consumer.offsets_for_times(queries)
        assert found[TopicPartition(topic, 0)].offset == 1234
        assert found[TopicPartition(topic, 0)].timestamp == t0 + 3 * 1234
        assert found[TopicPartition(topic, 1)].offset == 2000
        assert found[TopicPartition(topic, 1)].timestamp == t0 + 3 * 2000 + 1
        assert found[TopicPartition(topic, 2)] is None
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), found[TopicPartition(topic, 0)].offset)
        first = poll_until(consumer, lambda got: len(got) >= 1, "the record at the timestamp")[0]
        assert (first.offset, first.key, first.value) == (
            1234,
            samples[3 * 1234].key,
            samples[3 * 1234].value,
        )


def test_admin_created_topic(broker: Broker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics({topic: {"num_partitions": 5, "replication_factor": 1}})
        (description,) = admin.describe_topics([topic])
        assert description["error_code"] == 0
        assert sorted(p["partition_index"] for p in description["partitions"]) == list(range(5))
        assert topic in admin.list_topics()
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({topic: {"num_partitions": 5, "replication_factor": 1}})
    finally:
        admin.close()

    samples = make_samples(1000, "kp3-admin", partitions=5)
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples, "gzip"))
    with consumer_for(broker.bootstrap) as consumer:
        assert consumer.partitions_for_topic(topic) == set(range(5))
        got = read_all(consumer, topic, {p: 200 for p in range(5)})
    assert_same_records(samples, got, timestamps=True)


def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name()
    with consumer_for(broker.bootstrap) as consumer:
        # Consumers do not ask for auto-creation: the topic is not there yet.
        assert not consumer.partitions_for_topic(topic)  # set() in kafka-python 3
    samples = make_samples(30, "kp3-auto")
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples))
    with consumer_for(broker.bootstrap) as consumer:
        assert consumer.partitions_for_topic(topic) == set(range(PARTITIONS))
        got = read_all(consumer, topic, counts_of(samples))
    assert_same_records(samples, got, timestamps=True)


def test_unknown_topic_without_auto_create(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    topic = topic_name()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=3000)
    try:
        with pytest.raises(KafkaTimeoutError, match="Failed to update metadata"):
            producer.send(topic, b"value")
    finally:
        producer.close(timeout=5)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (description,) = admin.describe_topics([topic])
        assert description["name"] == topic
        assert description["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
        assert topic not in admin.list_topics()
    finally:
        admin.close()
    with consumer_for(broker.bootstrap) as consumer:
        assert not consumer.partitions_for_topic(topic)  # set() in kafka-python 3
