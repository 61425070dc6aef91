"""Spark's own Kafka connector (``format("kafka")``) as the tests drive it.

The connector's jars (spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,
kafka-clients, commons-pool2) are on the session's classpath: see conftest.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from interop_tests.support import Got


def read_kafka(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    """A batch read with ``spark.read.format("kafka")``."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def stream_kafka(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    """A streaming read with ``spark.readStream.format("kafka")``."""
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def as_got(df: DataFrame) -> list[Got]:
    """The rows of a Kafka source frame as :class:`Got` records, by partition and offset.

    Timestamps come out as milliseconds computed by Spark (``unix_millis``), so the
    Python side's time zone plays no part.
    """
    columns: list[Column | str] = [
        "partition",
        "offset",
        "key",
        "value",
        F.unix_millis("timestamp").alias("timestamp_ms"),
    ]
    has_headers = "headers" in df.columns
    if has_headers:
        columns.append("headers")
    rows = df.select(*columns).orderBy("partition", "offset").collect()
    return [
        Got(
            partition=r.partition,
            offset=r.offset,
            key=None if r.key is None else bytes(r.key),
            value=None if r.value is None else bytes(r.value),
            headers=tuple(
                (h.key, None if h.value is None else bytes(h.value)) for h in r.headers or ()
            )
            if has_headers
            else (),
            timestamp=r.timestamp_ms,
        )
        for r in rows
    ]
