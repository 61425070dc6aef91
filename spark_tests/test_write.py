"""Batch writes with ``df.write.format("wirekafka")``, read back by kafka-python."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from interop_tests.broker import Broker
from interop_tests.support import Got, Sample, make_samples
from spark_tests.kafka import create_topic, read_back

PARTITIONS = 3
ROW_SCHEMA = StructType(
    [
        StructField("partition", IntegerType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField(
            "headers",
            ArrayType(
                StructType([StructField("key", StringType()), StructField("value", BinaryType())])
            ),
        ),
    ]
)


def samples_frame(spark: SparkSession, samples: list[Sample]) -> DataFrame:
    rows = [
        (s.partition, s.key, s.value, [{"key": k, "value": v} for k, v in s.headers])
        for s in samples
    ]
    return spark.createDataFrame(rows, ROW_SCHEMA).repartition(4)  # several writing tasks


def contents(records: Sequence[Sample | Got]) -> list[tuple[object, ...]]:
    """Partition and content of each record, in a fixed order: tasks interleave their writes."""

    def nullable(data: bytes | None) -> tuple[bool, bytes]:
        return (data is None, data or b"")

    return sorted(
        [(r.partition, nullable(r.key), nullable(r.value), r.headers) for r in records],
        key=repr,
    )


def write(df: DataFrame, broker: Broker, **options: str) -> None:
    writer = df.write.format("wirekafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def test_written_records_read_back_identically_by_kafka_python(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, PARTITIONS)
    samples = make_samples(3_000, "spark-write", null_values=True)
    write(samples_frame(spark, samples), broker, topic=topic)

    counts = {p: sum(1 for s in samples if s.partition == p) for p in range(PARTITIONS)}
    got = read_back(broker.bootstrap, topic, counts)
    assert contents(got) == contents(samples)


def test_topic_column_and_string_columns(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    first, second = topic_name("one"), topic_name("two")
    for topic in (first, second):
        create_topic(broker.bootstrap, topic, 1)
    rows = [(first if i % 3 else second, f"key-{i}", f"value-{i}") for i in range(300)]
    df = spark.createDataFrame(rows, "topic string, key string, value string").coalesce(1)
    write(df, broker)  # no topic option: each row's topic column says where it goes

    for topic in (first, second):
        expected = [(k.encode(), v.encode()) for t, k, v in rows if t == topic]
        got = read_back(broker.bootstrap, topic, {0: len(expected)})
        assert [(g.key, g.value) for g in got] == expected


@pytest.mark.parametrize(
    ("ddl", "options", "message"),
    [
        ("key string", {"topic": "t"}, "needs a 'value' column"),
        ("value string", {}, "needs a 'topic' column or the 'topic' option"),
        ("value string, partition string", {"topic": "t"}, "column 'partition' must be int"),
        ("value int", {"topic": "t"}, "column 'value' must be string or binary"),
        ("value string", {"topic": " "}, "topic must not be empty"),
    ],
)
def test_frames_the_sink_cannot_write_are_refused(
    spark: SparkSession, broker: Broker, ddl: str, options: dict[str, str], message: str
) -> None:
    df = spark.createDataFrame([], ddl)
    with pytest.raises(Exception, match=message):
        write(df, broker, **options)
