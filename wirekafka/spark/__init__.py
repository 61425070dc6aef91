"""Spark's Kafka source and sink for PySpark, offline: ``format("wirekafka")``.

Needs the ``spark`` extra (PySpark 4.3 with pyarrow, confluent-kafka). Register
the source once per session::

    from wirekafka.spark import register
    register(spark)
    spark.readStream.format("wirekafka").option("kafka.bootstrap.servers", ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCE_NAME = "wirekafka"


def register(spark: SparkSession) -> None:
    """Make ``format("wirekafka")`` available in this Spark session."""
    from wirekafka.spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
