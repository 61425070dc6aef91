"""What the Spark tests do with Kafka outside Spark: topics, producing, reading back.

Records go in with confluent-kafka (fast enough for 100,000 records) or
kafka-python, and come back with kafka-python: the checks never read through
the code under test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from interop_tests.support import Got
from interop_tests.test_kafka_python import consumer_for, read_all

TIMEOUT_S = 60.0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=TIMEOUT_S)


def produce_values(
    bootstrap: str, topic: str, records: Iterable[tuple[int, bytes | None, bytes]]
) -> None:
    """Write (partition, key, value) records with confluent-kafka; all acknowledged."""
    failures: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, key, value in records:
        while True:
            try:
                producer.produce(topic, value, key, partition, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0, "records left unacknowledged"
    assert not failures, failures[:3]


def read_back(bootstrap: str, topic: str, counts: dict[int, int]) -> list[Got]:
    """Every record of the topic with kafka-python: ``counts[p]`` records from partition p."""
    with consumer_for(bootstrap) as consumer:
        return read_all(consumer, topic, counts)


def partition_counts(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    """Each partition's log end offset (kafka-python), for :func:`read_back`."""
    from kafka import TopicPartition

    with consumer_for(bootstrap) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in ends.items()}
