"""Small Kafka chores of the examples: create topics, produce records, read a topic back."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from wirekafka.spark.client import KafkaMetadata, RowProducer, read_range
from wirekafka.spark.offsets import plan
from wirekafka.spark.options import Subscribe

TIMEOUT_MS = 30_000


def create_topics(bootstrap_servers: str, topics: Iterable[str], partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
    for topic, future in futures.items():
        try:
            future.result(timeout=TIMEOUT_MS / 1000)
        except KafkaException as e:
            raise SystemExit(f"cannot create topic {topic}: {e}") from None


def produce(bootstrap_servers: str, topic: str, records: Iterable[tuple[bytes, bytes]]) -> None:
    """Write (key, value) records and wait until all are acknowledged."""
    producer = RowProducer(bootstrap_servers, {})
    for key, value in records:
        producer.produce(topic, value=value, key=key, partition=None, headers=None)
    producer.flush(TIMEOUT_MS / 1000)


def read_values(bootstrap_servers: str, topic: str) -> Iterator[bytes]:
    """Every value in the topic now, partition by partition, in offset order."""
    metadata = KafkaMetadata(bootstrap_servers, {}, TIMEOUT_MS)
    bounds = metadata.bounds(metadata.partitions(Subscribe((topic,))))
    ranges = plan(
        bounds.earliest, dict(bounds.latest), bounds.earliest, fail_on_data_loss=True, warn=print
    )
    for offset_range in ranges:
        for records in read_range(
            offset_range, bootstrap_servers, {}, poll_timeout_ms=TIMEOUT_MS, fail_on_data_loss=True
        ):
            yield from (record.value() or b"" for record in records)
