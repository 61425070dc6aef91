"""Fixtures: one local Spark session for the whole run, brokers in subprocesses.

The session is ``local[2]`` with two shuffle partitions, the ``wirekafka``
source registered, and Spark's own Kafka connector (``format("kafka")``) on its
classpath: the jars ``interop_tests/jvm/fetch`` has Maven bring, of the same
version as PySpark.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from interop_tests.conftest import broker, broker_factory, topic_name  # noqa: F401 (fixtures)
from interop_tests.jvm_jars import SPARK_KAFKA, jars
from wirekafka.spark.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    connector = ",".join(str(jar) for jar in jars(SPARK_KAFKA))
    session = local_session("wirekafka-spark-tests", conf={"spark.jars": connector})
    try:
        yield session
    finally:
        session.stop()
