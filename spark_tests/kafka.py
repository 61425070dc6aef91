"""What the Spark tests do with Kafka outside Spark: topics, producing, reading back.

Records go in with confluent-kafka (fast enough for 100,000 records) or
kafka-python, and come back with kafka-python: the checks never read through
the code under test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from interop_tests.clients.kafka_python import consumer_for, read_all
from interop_tests.support import Got, Sample

TIMEOUT_S = 60.0


def create_topic(
    bootstrap: str, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new_topic = NewTopic(topic, partitions, 1, config=config or {})
    admin.create_topics([new_topic])[topic].result(timeout=TIMEOUT_S)


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


def produce_samples(bootstrap: str, topic: str, samples: Iterable[Sample]) -> None:
    """Write samples with confluent-kafka: partition, key, value, headers (null values and
    repeated keys as given, in order) and, where set, the timestamp; all acknowledged."""
    failures: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for s in samples:
        producer.produce(
            topic,
            s.value,
            s.key,
            s.partition,
            on_delivery=delivered,
            timestamp=0 if s.timestamp is None else s.timestamp,  # 0: the producer's now
            headers=list(s.headers),
        )
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0, "records left unacknowledged"
    assert not failures, failures[:3]


def delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> dict[int, int]:
    """DeleteRecords: each partition's log start moves to ``before[p]``; the new low marks."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, p, o) for p, o in before.items()])
    return {
        tp.partition: future.result(timeout=TIMEOUT_S).low_watermark
        for tp, future in futures.items()
    }


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
