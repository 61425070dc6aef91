"""aiokafka against wirekafka: produce, read back, seek, create topics.

Each test runs its own event loop (``asyncio.run``). Consumers assign
partitions and have no group (group_id=None).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import UnknownTopicOrPartitionError

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


async def produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], compression: str | None = None, **config
) -> list:
    """Send every sample to its partition; the RecordMetadata of each, in order."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=compression,
        linger_ms=5,
        acks="all",
        request_timeout_ms=30_000,
        **config,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                key=s.key,
                value=s.value,
                headers=list(s.headers),
                partition=s.partition,
                timestamp_ms=s.timestamp,
            )
            for s in samples
        ]
        await producer.flush()
        return list(await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S))
    finally:
        await producer.stop()


def assert_acknowledged_in_order(samples: Sequence[Sample], metadata: Sequence) -> None:
    """Per partition, the acknowledged offsets are 0, 1, 2... in send order."""
    support.assert_acknowledged_in_order(samples, [(m.partition, m.offset) for m in metadata])


def new_consumer(bootstrap: str, **config) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **config,
    )


async def poll_until(
    consumer: AIOKafkaConsumer, done: Callable[[list[Got]], bool], what: str
) -> list[Got]:
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while not done(got):
        deadline.check(f"{what} (read {len(got)} so far)")
        batches = await consumer.getmany(timeout_ms=500)
        for records in batches.values():
            got.extend(got_from_record(r) for r in records)
    return got


async def read_all(consumer: AIOKafkaConsumer, topic: str, counts: dict[int, int]) -> list[Got]:
    partitions = [TopicPartition(topic, p) for p in sorted(counts)]
    consumer.assign(partitions)
    await consumer.seek_to_beginning(*partitions)
    total = sum(counts.values())
    got = await poll_until(consumer, lambda got: len(got) >= total, f"{total} records of {topic}")
    assert len(got) == total
    for tp in partitions:
        assert await consumer.position(tp) == counts[tp.partition]
    return got


async def _produce_read_back_and_seek(bootstrap: str, topic: str, codec: str | None) -> None:
    samples = make_samples(RECORDS, f"aiokafka-{codec_id(codec)}")
    assert_acknowledged_in_order(samples, await produce(bootstrap, topic, samples, codec))
    counts = counts_of(samples)

    consumer = new_consumer(bootstrap)
    await consumer.start()
    try:
        got = await read_all(consumer, topic, counts)
        assert_same_records(samples, got, timestamps=True, what=f"aiokafka, {codec}")
        assert consumer.partitions_for_topic(topic) == set(range(PARTITIONS))

        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert await consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
        assert await consumer.end_offsets(tps) == {tp: counts[tp.partition] for tp in tps}

        await consumer.seek_to_beginning(*tps)
        for tp in tps:
            assert await consumer.position(tp) == 0
        await consumer.seek_to_end(*tps)
        for tp in tps:
            assert await consumer.position(tp) == counts[tp.partition]
        assert await consumer.getmany(timeout_ms=300) == {}
        assert samples[-1].timestamp is not None
        extra = Sample(2, b"after-the-end", b"new", (("h", b"v"),), samples[-1].timestamp + 10)
        (meta,) = await produce(bootstrap, topic, [extra], codec)
        assert (meta.partition, meta.offset) == (2, counts[2])
        (record,) = await poll_until(
            consumer, lambda got: len(got) >= 1, "the record after the end"
        )
        assert (record.partition, record.offset, record.key, record.value, record.headers) == (
            2,
            counts[2],
            b"after-the-end",
            b"new",
            (("h", b"v"),),
        )

        t0 = samples[0].timestamp
        assert t0 is not None
        queries = {
            TopicPartition(topic, 0): t0 + 3 * 2321,  # exactly record 2321 of partition 0
            TopicPartition(topic, 1): t0 + 3 * 17 + 2,  # between records: the next one, 18
            TopicPartition(topic, 2): t0 + 3 * 4000,  # past the end of partition 2
        }
        found = await consumer.offsets_for_times(queries)
        assert found[TopicPartition(topic, 0)].offset == 2321
        assert found[TopicPartition(topic, 0)].timestamp == t0 + 3 * 2321
        assert found[TopicPartition(topic, 1)].offset == 18
        assert found[TopicPartition(topic, 1)].timestamp == t0 + 3 * 18 + 1
        assert found[TopicPartition(topic, 2)] is None
        consumer.seek(TopicPartition(topic, 1), 18)
        consumer.seek(TopicPartition(topic, 0), counts[0])  # nothing more there
        consumer.seek(TopicPartition(topic, 2), counts[2] + 1)  # after the extra record
        first = (await poll_until(consumer, lambda got: len(got) >= 1, "the record at 18"))[0]
        assert (first.partition, first.offset, first.key, first.value) == (
            1,
            18,
            samples[3 * 18 + 1].key,
            samples[3 * 18 + 1].value,
        )
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", CODECS, ids=codec_id)
def test_produce_read_back_and_seek(
    broker: Broker, topic_name: Callable[[str], str], codec: str | None
) -> None:
    topic = topic_name(codec_id(codec))  # auto-created by the producer's Metadata request
    asyncio.run(_produce_read_back_and_seek(broker.bootstrap, topic, codec))


async def _admin_created_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(topic, 4, 1)])
        assert [(t[0], t[1]) for t in response.topic_errors] == [(topic, 0)]
        response = await admin.create_topics([NewTopic(topic, 4, 1)])
        assert [(t[0], t[1]) for t in response.topic_errors] == [(topic, 36)]  # already exists
        (description,) = await admin.describe_topics([topic])
        assert description["error_code"] == 0
        assert sorted(p["partition"] for p in description["partitions"]) == list(range(4))
        assert topic in await admin.list_topics()
    finally:
        await admin.close()

    samples = make_samples(800, "aiokafka-admin", partitions=4)
    assert_acknowledged_in_order(samples, await produce(bootstrap, topic, samples, "lz4"))
    consumer = new_consumer(bootstrap)
    await consumer.start()
    try:
        got = await read_all(consumer, topic, counts_of(samples, 4))
        assert consumer.partitions_for_topic(topic) == set(range(4))
    finally:
        await consumer.stop()
    assert_same_records(samples, got, timestamps=True)


def test_admin_created_topic(broker: Broker, topic_name: Callable[[str], str]) -> None:
    asyncio.run(_admin_created_topic(broker.bootstrap, topic_name()))


async def _auto_created_topic(bootstrap: str, topic: str) -> None:
    samples = make_samples(30, "aiokafka-auto")
    assert_acknowledged_in_order(samples, await produce(bootstrap, topic, samples))
    consumer = new_consumer(bootstrap)
    await consumer.start()
    try:
        got = await read_all(consumer, topic, counts_of(samples))
        assert consumer.partitions_for_topic(topic) == set(range(PARTITIONS))
    finally:
        await consumer.stop()
    assert_same_records(samples, got, timestamps=True)


def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: Callable[[str], str]
) -> None:
    asyncio.run(_auto_created_topic(broker.bootstrap, topic_name()))


async def _unknown_topic(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=3000)
    await producer.start()
    try:
        with pytest.raises(UnknownTopicOrPartitionError):
            await producer.send_and_wait(topic, b"value")
    finally:
        await producer.stop()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (description,) = await admin.describe_topics([topic])
        assert (description["topic"], description["error_code"]) == (topic, 3)
        assert topic not in await admin.list_topics()
    finally:
        await admin.close()


def test_unknown_topic_without_auto_create(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    asyncio.run(_unknown_topic(broker.bootstrap, topic_name()))
