"""Spark over SASL_SSL: Spark's own connector and the project's source, with the options
Spark users give (``kafka.security.protocol``, ``kafka.sasl.mechanism``,
``kafka.sasl.jaas.config``, a PEM trust store)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from interop_tests.broker import Broker
from interop_tests.security import MECHANISMS, credentials, secured_broker
from spark_tests.spark_kafka import read_kafka
from wirekafka.testing.certificates import Certificates, make_certificates

RECORDS = 50


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[Broker]:
    yield from secured_broker(tmp_path_factory.mktemp("secured"), certs)


def sasl_ssl_options(
    certs: Certificates, mechanism: str = "SCRAM-SHA-512", password: str | None = None
) -> dict[str, str]:
    user, right_password = credentials(mechanism)
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": mechanism,
        "kafka.sasl.jaas.config": (
            f"org.apache.kafka.common.security.{module} required "
            f'username="{user}" password="{password or right_password}";'
        ),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(certs.ca),
    }


@pytest.fixture(scope="module")
def topic(secured: Broker) -> str:
    name = "spark-sasl-ssl"
    producer = Producer({"bootstrap.servers": secured.bootstrap})
    for i in range(RECORDS):
        producer.produce(name, b"value-%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    return name


@pytest.mark.parametrize(
    ("source", "mechanism"),
    [*(("kafka", mechanism) for mechanism in MECHANISMS), ("wirekafka", "SCRAM-SHA-256")],
)
def test_a_batch_read_over_sasl_ssl(
    spark: SparkSession,
    secured: Broker,
    certs: Certificates,
    topic: str,
    source: str,
    mechanism: str,
) -> None:
    bootstrap = secured.listener_bootstrap("SASL_SSL")
    options = {"subscribe": topic, **sasl_ssl_options(certs, mechanism)}
    if source == "kafka":
        frame = read_kafka(spark, bootstrap, **options)
    else:
        reader = spark.read.format("wirekafka").option("kafka.bootstrap.servers", bootstrap)
        frame = reader.options(**options).load()
    values = sorted(bytes(row.value) for row in frame.select("value").collect())
    assert values == sorted(b"value-%d" % i for i in range(RECORDS))


def test_spark_writes_over_sasl_ssl_and_a_wrong_password_fails(
    spark: SparkSession, secured: Broker, certs: Certificates
) -> None:
    bootstrap = secured.listener_bootstrap("SASL_SSL")
    rows = spark.createDataFrame([(f"w{i}",) for i in range(10)], ["value"])
    (
        rows.write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "spark-sasl-ssl-written")
        .options(**sasl_ssl_options(certs))
        .save()
    )
    frame = read_kafka(
        spark, bootstrap, subscribe="spark-sasl-ssl-written", **sasl_ssl_options(certs)
    )
    assert sorted(str(bytes(r.value), "utf-8") for r in frame.collect()) == sorted(
        f"w{i}" for i in range(10)
    )
    with pytest.raises(Exception, match=r"(?i)authentication failed"):
        reader = spark.read.format("wirekafka").option("kafka.bootstrap.servers", bootstrap)
        reader.options(
            subscribe="spark-sasl-ssl-written", **sasl_ssl_options(certs, password="Wrong-5")
        ).load().collect()
