"""Fixtures: one local Spark session for the whole run, brokers in subprocesses.

The session is ``local[2]`` with two shuffle partitions and the ``wirekafka``
source registered. When ``WIREKAFKA_SPARK_KAFKA_JARS`` names the jars of Spark's
own Kafka connector (comma separated), they are put on the session's classpath
so the tests of ``format("kafka")`` can run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from interop_tests.conftest import broker, broker_factory, topic_name  # noqa: F401 (fixtures)
from wirekafka.spark.session import local_session

KAFKA_JARS_VARIABLE = "WIREKAFKA_SPARK_KAFKA_JARS"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    jars = os.environ.get(KAFKA_JARS_VARIABLE, "").strip()
    session = local_session("wirekafka-spark-tests", conf={"spark.jars": jars} if jars else None)
    try:
        yield session
    finally:
        session.stop()
