"""Batch reads with ``spark.read.format("wirekafka")``: whole topics, offset ranges, bad options."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from interop_tests.broker import Broker
from interop_tests.clients.kafka_python import produce as kafka_python_produce
from interop_tests.support import Got, assert_same_records, make_samples
from spark_tests.kafka import TIMEOUT_S, create_topic, produce_values

RECORDS = 100_000
PARTITIONS = 3


def value_of(i: int) -> bytes:
    return f"view-{i:06d}-".encode() + bytes(i % 251 for _ in range(i % 37))


def read(spark: SparkSession, broker: Broker, **options: str) -> DataFrame:
    reader = spark.read.format("wirekafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.fixture(scope="module")
def big_topic(broker: Broker) -> str:
    """100,000 records round robin over 3 partitions; record i is at offset i // 3 of i % 3."""
    topic = "spark-batch-100k"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_values(
        broker.bootstrap,
        topic,
        ((i % PARTITIONS, str(i).encode(), value_of(i)) for i in range(RECORDS)),
    )
    return topic


def expected_value(partition: int, offset: int) -> bytes:
    return value_of(offset * PARTITIONS + partition)


@pytest.mark.slow
def test_whole_topic_count_and_checksum(
    spark: SparkSession, broker: Broker, big_topic: str
) -> None:
    df = read(spark, broker, subscribe=big_topic)
    assert df.rdd.getNumPartitions() == PARTITIONS  # one Spark partition per Kafka partition
    rows = (
        df.groupBy("partition", "topic", "timestampType")
        .agg(
            F.count("*").alias("records"),
            F.sum(F.crc32("value")).alias("checksum"),
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
            F.countDistinct("key").alias("keys"),
        )
        .collect()
    )
    got = {row["partition"]: row.asDict() for row in rows}
    assert sorted(got) == list(range(PARTITIONS))
    for partition, row in got.items():
        indexes = range(partition, RECORDS, PARTITIONS)
        assert row["topic"] == big_topic
        assert row["timestampType"] == 0  # CreateTime
        assert row["records"] == row["keys"] == len(indexes)
        assert (row["first"], row["last"]) == (0, len(indexes) - 1)
        assert row["checksum"] == sum(zlib.crc32(value_of(i)) for i in indexes)


def test_offset_json_selects_exact_ranges(
    spark: SparkSession, broker: Broker, big_topic: str
) -> None:
    starting = {big_topic: {"0": 100, "1": -2, "2": 30_000}}
    ending = {big_topic: {"0": 250, "1": 1_000, "2": -1}}
    df = read(
        spark,
        broker,
        subscribe=big_topic,
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    )
    got = sorted((r.partition, r.offset, bytes(r.value)) for r in df.collect())
    last_of_2 = len(range(2, RECORDS, PARTITIONS))
    expected = sorted(
        (p, o, expected_value(p, o))
        for p, first, end in ((0, 100, 250), (1, 0, 1_000), (2, 30_000, last_of_2))
        for o in range(first, end)
    )
    assert len(got) == len(expected) == 150 + 1_000 + (last_of_2 - 30_000)
    assert got == expected


def test_assign_reads_only_the_assigned_partitions(
    spark: SparkSession, broker: Broker, big_topic: str
) -> None:
    df = read(
        spark,
        broker,
        assign=json.dumps({big_topic: [1]}),
        startingOffsets=json.dumps({big_topic: {"1": 33_000}}),
    )
    rows = df.select("partition", "offset").collect()
    assert {r.partition for r in rows} == {1}
    assert sorted(r.offset for r in rows) == list(range(33_000, RECORDS // PARTITIONS))


def test_subscribe_pattern_covers_matching_topics(spark: SparkSession, broker: Broker) -> None:
    for name, count in (("pattern-a", 5), ("pattern-b", 7), ("other-c", 11)):
        create_topic(broker.bootstrap, name, 2)
        produce_values(broker.bootstrap, name, ((i % 2, None, b"x") for i in range(count)))
    rows = read(spark, broker, subscribePattern="pattern-.*").groupBy("topic").count().collect()
    assert {r.topic: r["count"] for r in rows} == {"pattern-a": 5, "pattern-b": 7}


@pytest.mark.slow
def test_keys_values_headers_timestamps_as_written_by_kafka_python(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    samples = make_samples(2_000, "spark-read")
    kafka_python_produce(broker.bootstrap, topic, samples)
    df = read(spark, broker, subscribe=topic, includeHeaders="true")
    assert "headers" in df.columns
    got = [
        Got(
            partition=r.partition,
            offset=r.offset,
            key=None if r.key is None else bytes(r.key),
            value=None if r.value is None else bytes(r.value),
            headers=tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers),
            timestamp=int(r.timestamp.timestamp() * 1000),
        )
        for r in df.orderBy("partition", "offset").collect()
    ]
    assert_same_records(samples, got, timestamps=True)


@pytest.mark.slow
def test_deleted_records_are_data_loss_unless_allowed(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 1)
    produce_values(broker.bootstrap, topic, ((0, None, str(i).encode()) for i in range(100)))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    future = admin.delete_records([TopicPartition(topic, 0, 40)])[TopicPartition(topic, 0)]
    future.result(timeout=TIMEOUT_S)
    from_zero = json.dumps({topic: {"0": 0}})

    with pytest.raises(Exception, match=rf"offsets 0\.\.39 of {topic}-0 are no longer in Kafka"):
        read(spark, broker, subscribe=topic, startingOffsets=from_zero).count()

    rows = read(
        spark, broker, subscribe=topic, startingOffsets=from_zero, failOnDataLoss="false"
    ).collect()
    assert sorted(r.offset for r in rows) == list(range(40, 100))
    # earliest means the log start offset, so nothing is lost there
    assert read(spark, broker, subscribe=topic).count() == 60


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "exactly one of assign, subscribe, subscribePattern"),
        ({"subscribe": "a", "assign": '{"a": [0]}'}, "exactly one of assign, subscribe"),
        ({"subscribe": "t", "startingOffsets": "latest"}, "startingOffsets cannot be latest"),
        ({"subscribe": "t", "endingOffsets": "earliest"}, "endingOffsets cannot be earliest"),
        ({"subscribe": "t", "startingOffsets": "{nope"}, "startingOffsets must be earliest"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "none"}, "set startingOffsets instead"),
        ({"assign": '{"t": [0]}', "startingOffsets": '{"t": {"1": 5}}'}, "not assigned: t-1"),
        ({"assign": '{"no-such-topic": [0]}'}, "assigned partitions do not exist: no-such-topic-0"),
        (
            {"subscribe": "t", "maxOffsetsPerTrigger": "0"},
            "maxOffsetsPerTrigger must be a positive",
        ),
    ],
)
def test_bad_options_are_named(
    spark: SparkSession, broker: Broker, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, broker, **options).count()


def test_ending_offsets_past_the_log_end_are_refused(
    spark: SparkSession, broker: Broker, big_topic: str
) -> None:
    ending = json.dumps({big_topic: {"0": 10**9, "1": -1, "2": -1}})
    with pytest.raises(Exception, match=rf"endingOffsets of {big_topic}-0 \(1000000000\) is past"):
        read(spark, broker, subscribe=big_topic, endingOffsets=ending).count()


def test_offsets_json_must_name_every_partition(
    spark: SparkSession, broker: Broker, big_topic: str
) -> None:
    starting = json.dumps({big_topic: {"0": 5}})
    with pytest.raises(Exception, match=rf"must name every partition read: missing {big_topic}-1"):
        read(spark, broker, subscribe=big_topic, startingOffsets=starting).count()
