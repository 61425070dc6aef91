"""Spark's own Kafka sink: ``df.write.format("kafka")`` and ``writeStream.format("kafka")``.

Keys, values, headers (null values, repeated keys), the topic and partition
columns; what was written is read back by kafka-python, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from interop_tests.broker import Broker
from interop_tests.support import Got, Sample
from spark_tests.kafka import create_topic, partition_counts, produce_samples, read_back
from spark_tests.spark_kafka import stream_kafka

PARTITIONS = 3
HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
ROW_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("headers", HEADERS),
    ]
)


def record_headers(i: int) -> tuple[tuple[str, bytes | None], ...]:
    return (
        (),
        (("index", str(i).encode()),),
        (("null", None), ("empty", b"")),
        (("dup", b"1"), ("dup", None), ("dup", b"3"), ("clé", "ü".encode())),
        (("bin", bytes((i + j) % 256 for j in range(300))),),
    )[i % 5]


def record(i: int) -> tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]:
    """Key, value and headers of record i: some null keys, some null values, never both."""
    key = None if i % 7 == 2 else f"key-{i}".encode()
    value = None if i % 11 == 5 and key is not None else f"value-{i}|".encode() + bytes([i % 256])
    return key, value, record_headers(i)


def by_topic_partition(
    records: Sequence[tuple[str, int, bytes | None, bytes | None, tuple]],
) -> dict[tuple[str, int], list[tuple]]:
    grouped: dict[tuple[str, int], list[tuple]] = {}
    for topic, partition, *content in records:
        grouped.setdefault((topic, partition), []).append(tuple(content))
    return grouped


def read_topics(broker: Broker, topics: Sequence[str]) -> dict[tuple[str, int], list[tuple]]:
    """Each (topic, partition)'s (key, value, headers) as kafka-python reads them, in order."""
    got: dict[tuple[str, int], list[tuple]] = {}
    for topic in topics:
        counts = partition_counts(broker.bootstrap, topic, range(PARTITIONS))
        records: list[Got] = read_back(broker.bootstrap, topic, counts)
        for g in sorted(records, key=lambda g: (g.partition, g.offset)):
            got.setdefault((topic, g.partition), []).append((g.key, g.value, g.headers))
    return got


def test_batch_write_with_topic_and_partition_columns(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topics = [topic_name("a"), topic_name("b")]
    for topic in topics:
        create_topic(broker.bootstrap, topic, PARTITIONS)
    records = [(topics[i % 2], (i // 2) % PARTITIONS, *record(i)) for i in range(2_000)]
    rows = [
        (topic, partition, key, value, [{"key": k, "value": v} for k, v in headers])
        for topic, partition, key, value, headers in records
    ]
    df = spark.createDataFrame(rows, ROW_SCHEMA).repartition(4)  # several writing tasks
    df.write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).save()

    got = read_topics(broker, topics)
    expected = by_topic_partition(records)
    assert sorted(got) == sorted(expected)
    for where, content in expected.items():
        # tasks interleave their writes: each partition holds the same records, in some order
        assert sorted(got[where], key=repr) == sorted(content, key=repr), where


def test_topic_option_wins_over_the_topic_column(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    target, ignored = topic_name("target"), topic_name("ignored")
    for topic in (target, ignored):
        create_topic(broker.bootstrap, topic, 1)
    rows = [(ignored, f"v{i}") for i in range(50)]
    (
        spark.createDataFrame(rows, "topic string, value string")
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", target)
        .save()
    )
    assert [g.value for g in read_back(broker.bootstrap, target, {0: 50})] == [
        f"v{i}".encode() for i in range(50)
    ]
    assert partition_counts(broker.bootstrap, ignored, [0]) == {0: 0}


@pytest.mark.slow
def test_stream_copies_records_exactly_once_across_restarts(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    source, even, odd = topic_name("in"), topic_name("even"), topic_name("odd")
    for topic in (source, even, odd):
        create_topic(broker.bootstrap, topic, PARTITIONS)
    samples = [Sample(i % PARTITIONS, *record(i)) for i in range(1_500)]

    def run() -> None:
        """Copy what is there (each record to partition 2 - p of the even or odd topic by
        offset), with Spark's sink, in micro-batches of at most 400 records, and stop."""
        query = (
            stream_kafka(
                spark,
                broker.bootstrap,
                subscribe=source,
                startingOffsets="earliest",
                includeHeaders="true",
                maxOffsetsPerTrigger="400",
            )
            .selectExpr(
                f"IF(offset % 2 = 0, '{even}', '{odd}') AS topic",
                f"{PARTITIONS - 1} - partition AS partition",
                "key",
                "value",
                "headers",
            )
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(240), "Trigger.AvailableNow did not finish"
        assert query.exception() is None, query.exception()

    produce_samples(broker.bootstrap, source, samples[:1_000])
    run()
    produce_samples(broker.bootstrap, source, samples[1_000:])
    run()  # from the checkpoint: only the 500 new records

    # record i is offset i // 3 of partition i % 3
    expected = by_topic_partition(
        [
            (
                even if (i // PARTITIONS) % 2 == 0 else odd,
                PARTITIONS - 1 - s.partition,
                s.key,
                s.value,
                s.headers,
            )
            for i, s in enumerate(samples)
        ]
    )
    # one task per source partition writes it in offset order: the order survives
    assert read_topics(broker, [even, odd]) == expected
