"""confluent-kafka (librdkafka 2.16) against wirekafka: produce, read back, seek, create topics.

librdkafka's consumer API wants a group.id, but these consumers never
subscribe: they assign() partitions, with auto-commit off, so no group
request is ever sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

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
    counts_of,
    make_samples,
)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TIMEOUT_S = 60.0


def produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], compression: str = "none", **config
) -> list[tuple[int, int]]:
    """Send every sample to its partition; the (partition, offset) of each, in order."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "linger.ms": 5,
            "acks": "all",
            "log_level": 3,
            **config,
        }
    )
    delivered: dict[int, tuple[int, int]] = {}
    errors: list[tuple[int, KafkaError]] = []

    def on_delivery(index: int, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append((index, error))
        else:
            delivered[index] = (message.partition(), message.offset())

    for index, s in enumerate(samples):
        kwargs = {} if s.timestamp is None else {"timestamp": s.timestamp}
        while True:
            try:
                producer.produce(
                    topic,
                    value=s.value,
                    key=s.key,
                    partition=s.partition,
                    headers=list(s.headers),
                    on_delivery=partial(on_delivery, index),
                    **kwargs,
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_S)
    assert remaining == 0, f"{remaining} messages not delivered within {TIMEOUT_S} s"
    assert not errors, f"{len(errors)} delivery errors, the first: {errors[0]}"
    return [delivered[i] for i in range(len(samples))]


@contextmanager
def consumer_for(bootstrap: str, **config) -> Iterator[Consumer]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "never-joined",  # required by the API; there is no subscribe()
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "check.crcs": True,
            "log_level": 3,
            **config,
        }
    )
    try:
        yield consumer
    finally:
        consumer.close()


def to_got(message: Message) -> Got:
    _, timestamp = message.timestamp()
    return Got(
        partition=message.partition(),
        offset=message.offset(),
        key=message.key(),
        value=message.value(),
        headers=tuple((k, v) for k, v in (message.headers() or [])),
        timestamp=timestamp,
    )


def poll_until(consumer: Consumer, done: Callable[[list[Got]], bool], what: str) -> list[Got]:
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while not done(got):
        deadline.check(f"{what} (read {len(got)} so far)")
        for message in consumer.consume(num_messages=1000, timeout=0.5):
            error = message.error()
            assert error is None, f"consumer error: {error}"
            got.append(to_got(message))
    return got


def read_all(consumer: Consumer, topic: str, counts: dict[int, int]) -> list[Got]:
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(counts)])
    total = sum(counts.values())
    got = poll_until(consumer, lambda got: len(got) >= total, f"{total} records of {topic}")
    assert len(got) == total
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_produce_read_back_and_seek(
    broker: Broker, topic_name: Callable[[str], str], codec: str
) -> None:
    topic = topic_name(codec)  # auto-created by the producer's Metadata request
    samples = make_samples(RECORDS, f"confluent-{codec}")
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples, codec))
    counts = counts_of(samples)

    with consumer_for(broker.bootstrap) as consumer:
        got = read_all(consumer, topic, counts)
        assert_same_records(samples, got, timestamps=True, what=f"confluent-kafka, {codec}")
        metadata = consumer.list_topics(topic, timeout=TIMEOUT_S)
        assert sorted(metadata.topics[topic].partitions) == list(range(PARTITIONS))
        for p in range(PARTITIONS):
            assert consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S) == (
                0,
                counts[p],
            )

        # Seek to the beginning of partition 0, to the end of 1 and 2.
        consumer.assign(
            [
                TopicPartition(topic, 0, OFFSET_BEGINNING),
                TopicPartition(topic, 1, OFFSET_END),
                TopicPartition(topic, 2, OFFSET_END),
            ]
        )
        again = poll_until(consumer, lambda got: len(got) >= counts[0], "partition 0 again")
        assert [g.offset for g in again] == list(range(counts[0]))
        assert consumer.consume(num_messages=10, timeout=0.3) == []
        assert samples[-1].timestamp is not None
        extra = Sample(2, b"after-the-end", b"new", (("h", b"v"),), samples[-1].timestamp + 10)
        assert produce(broker.bootstrap, topic, [extra], codec) == [(2, counts[2])]
        (record,) = poll_until(consumer, lambda got: len(got) >= 1, "the record after the end")
        assert (record.partition, record.offset, record.key, record.value, record.headers) == (
            2,
            counts[2],
            b"after-the-end",
            b"new",
            (("h", b"v"),),
        )

        # Seek by timestamp.
        t0 = samples[0].timestamp
        assert t0 is not None
        found = consumer.offsets_for_times(
            [
                TopicPartition(topic, 0, t0 + 3 * 3000),  # exactly record 3000 of partition 0
                TopicPartition(topic, 1, t0 + 3 * 99 + 2),  # between records: the next, 100
                TopicPartition(topic, 2, t0 + 3 * 5000),  # past the end (and the extra record)
            ],
            timeout=TIMEOUT_S,
        )
        assert [(tp.partition, tp.offset) for tp in found] == [(0, 3000), (1, 100), (2, -1)]
        assert all(tp.error is None for tp in found)
        consumer.assign([TopicPartition(topic, 1, found[1].offset)])
        first = poll_until(consumer, lambda got: len(got) >= 1, "the record at the timestamp")[0]
        assert (first.partition, first.offset, first.key, first.timestamp) == (
            1,
            100,
            samples[3 * 100 + 1].key,
            t0 + 3 * 100 + 1,
        )


def test_idempotent_producer(broker: Broker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    samples = make_samples(3000, "confluent-idempotent")
    delivered = produce(broker.bootstrap, topic, samples, "zstd", **{"enable.idempotence": True})
    assert_acknowledged_in_order(samples, delivered)
    with consumer_for(broker.bootstrap) as consumer:
        got = read_all(consumer, topic, counts_of(samples))
    assert_same_records(samples, got, timestamps=True)


def test_admin_created_topic(broker: Broker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
    (future,) = admin.create_topics(
        [NewTopic(topic, num_partitions=6, replication_factor=1)]
    ).values()
    assert future.result(TIMEOUT_S) is None
    (future,) = admin.create_topics(
        [NewTopic(topic, num_partitions=6, replication_factor=1)]
    ).values()
    with pytest.raises(KafkaException) as raised:
        future.result(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    metadata = admin.list_topics(topic, timeout=TIMEOUT_S)
    assert metadata.topics[topic].error is None
    assert sorted(metadata.topics[topic].partitions) == list(range(6))

    samples = make_samples(1200, "confluent-admin", partitions=6)
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples, "snappy"))
    with consumer_for(broker.bootstrap) as consumer:
        got = read_all(consumer, topic, counts_of(samples, 6))
    assert_same_records(samples, got, timestamps=True)


def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name()
    samples = make_samples(30, "confluent-auto")
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples))
    with consumer_for(broker.bootstrap) as consumer:
        metadata = consumer.list_topics(topic, timeout=TIMEOUT_S)
        assert sorted(metadata.topics[topic].partitions) == list(range(PARTITIONS))
        got = read_all(consumer, topic, counts_of(samples))
    assert_same_records(samples, got, timestamps=True)


def test_unknown_topic_without_auto_create(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    topic = topic_name()
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "topic.metadata.propagation.max.ms": 2000,
            "message.timeout.ms": 10_000,
            "log_level": 3,
        }
    )
    errors: list[KafkaError | None] = []
    producer.produce(topic, b"value", on_delivery=lambda error, message: errors.append(error))
    assert producer.flush(TIMEOUT_S) == 0
    (error,) = errors
    assert error is not None
    assert error.code() in (KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART), error

    metadata = producer.list_topics(topic, timeout=TIMEOUT_S)
    assert metadata.topics[topic].error is not None
    assert metadata.topics[topic].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic not in producer.list_topics(timeout=TIMEOUT_S).topics

    with consumer_for(broker.bootstrap) as consumer:
        # A consumer's Metadata request does not ask for auto-creation either way.
        metadata = consumer.list_topics(topic, timeout=TIMEOUT_S)
        assert metadata.topics[topic].error is not None
        assert metadata.topics[topic].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
