"""Spark's built-in Kafka source and sink (``format("kafka")``) against the broker.

Spark's connector is not part of PySpark: its jars come from Maven, which
these machines cannot reach. The tests run when ``WIREKAFKA_SPARK_KAFKA_JARS``
names them (comma separated: spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,
kafka-clients, commons-pool2, of the versions that go with PySpark 4.3), and are
reported as skipped otherwise. The README says how to fetch them where Maven
is reachable.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from interop_tests.broker import Broker
from spark_tests.conftest import KAFKA_JARS_VARIABLE
from spark_tests.kafka import create_topic, produce_values, read_back
from spark_tests.pipeline import check_page_view_pipeline

JARS = [jar.strip() for jar in os.environ.get(KAFKA_JARS_VARIABLE, "").split(",") if jar.strip()]

pytestmark = pytest.mark.skipif(
    not JARS,
    reason=f"Spark's Kafka connector jars are not here (Maven is unreachable): set"
    f" {KAFKA_JARS_VARIABLE} to the paths of spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,"
    " kafka-clients and commons-pool2 to run these",
)


def test_the_jars_named_exist() -> None:
    missing = [jar for jar in JARS if not Path(jar).is_file()]
    assert not missing, f"{KAFKA_JARS_VARIABLE} names jars that are not files: {missing}"


def test_page_view_pipeline_through_spark_kafka(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    check_page_view_pipeline(spark, broker, tmp_path, topic_name, source_format="kafka")


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
