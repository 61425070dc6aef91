"""Spark's built-in Kafka source and sink (``format("kafka")``) against the broker.

The connector's jars (spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,
kafka-clients, commons-pool2) are on the session's classpath: see conftest.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from interop_tests.broker import Broker
from spark_tests.kafka import create_topic, produce_values, read_back
from spark_tests.pipeline import check_page_view_pipeline


@pytest.mark.slow
def test_page_view_pipeline_through_spark_kafka(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    check_page_view_pipeline(spark, broker, tmp_path, topic_name, source_format="kafka")


@pytest.mark.slow
def test_both_sources_read_the_same(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 3)
    values = [f"record-{i}".encode() for i in range(10_000)]
    produce_values(broker.bootstrap, topic, ((i % 3, None, v) for i, v in enumerate(values)))
    summaries = []
    for source_format in ("kafka", "wirekafka"):
        df = (
            spark.read.format(source_format)
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .load()
        )
        summaries.append(
            df.groupBy("partition")
            .agg(F.count("*").alias("n"), F.sum(F.crc32("value")).alias("crc"))
            .orderBy("partition")
            .collect()
        )
    assert summaries[0] == summaries[1]
    assert sum(row.crc for row in summaries[1]) == sum(zlib.crc32(v) for v in values)


def test_spark_kafka_sink_output_read_by_kafka_python(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 1)
    rows = [(f"key-{i}", f"value-{i}") for i in range(500)]
    (
        spark.createDataFrame(rows, "key string, value string")
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .save()
    )
    got = read_back(broker.bootstrap, topic, {0: len(rows)})
    assert [(g.key, g.value) for g in got] == [(k.encode(), v.encode()) for k, v in rows]
