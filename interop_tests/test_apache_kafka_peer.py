"""The benchmark's Apache Kafka peer (tools/apache_kafka.py) starts, serves kafka-python, stops.

Apache Kafka 4.3 in KRaft mode from jar set ``kafka``: kafka-python 3 (its
defaults: idempotent, acks=all) writes records to a topic the broker creates
on first use and reads them back. Afterwards no JVM and no directory is left.
"""

from __future__ import annotations

import pytest

from interop_tests.clients import kafka_python
from interop_tests.conftest import HEAVY
from interop_tests.support import assert_same_records, counts_of, make_samples
from tools.apache_kafka import ApacheKafka

# With the other tests that push a broker to a resource's edge (interop_tests/conftest.py,
# HEAVY): one at a time, on one xdist worker.
pytestmark = HEAVY

RECORDS = 200


@pytest.mark.slow
def test_apache_kafka_serves_kafka_python_and_stops() -> None:
    samples = make_samples(RECORDS, "apache-kafka", partitions=1)
    with ApacheKafka() as kafka:
        metadata = kafka_python.produce(kafka.bootstrap, "peer", samples)
        kafka_python.assert_acknowledged_in_order(samples, metadata)
        with kafka_python.consumer_for(kafka.bootstrap) as consumer:
            got = kafka_python.read_all(consumer, "peer", counts_of(samples, partitions=1))
        assert_same_records(samples, got, timestamps=True, what="kafka-python 3 on Apache Kafka")
        jvm, directory = kafka.process, kafka.directory
        assert jvm is not None and directory is not None
    assert jvm.returncode is not None
    assert not directory.exists()
