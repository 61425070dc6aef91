"""Helpers for tests, on confluent-kafka: create a topic, read a topic's records."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaPartition
from confluent_kafka.admin import AdminClient, NewTopic

from wirekafka.testing.process import kafka_settings

TIMEOUT_S = 10.0
POLL_S = 0.05


class TopicError(AssertionError):
    """A topic could not be created, or did not hold what a test waited for."""


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    config: Mapping[str, object] | None = None,
    *,
    replication_factor: int = -1,
    timeout_s: float = TIMEOUT_S,
) -> None:
    """Create topic ``name`` with ``partitions`` and topic ``config`` (Kafka's keys,
    ``{"cleanup.policy": "compact"}``) and wait until every partition has a leader,
    so a producer can write to it at once. ``replication_factor`` -1: the broker's
    ``default.replication.factor``. Raises :class:`TopicError` with Kafka's error."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=kafka_settings(config),
    )
    future = admin.create_topics([topic], request_timeout=timeout_s)[name]
    try:
        future.result(timeout=timeout_s)
    except KafkaException as exc:
        error = exc.args[0]
        raise TopicError(
            f"cannot create topic {name!r} on {bootstrap}: {error.name()}: {error.str()}"
        ) from None
    deadline = time.monotonic() + timeout_s
    while True:
        found = admin.list_topics(name, timeout=timeout_s).topics.get(name)
        if (
            found is not None
            and found.error is None
            and len(found.partitions) == partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise TopicError(f"topic {name!r} on {bootstrap} has no leader for every partition")
        time.sleep(POLL_S)


def read_topic(bootstrap: str, name: str, count: int, timeout: float = TIMEOUT_S) -> list[Message]:
    """The first ``count`` records of topic ``name``, from every partition's start,
    in the order they arrive (each partition's in offset order). Raises
    :class:`TopicError` if the topic does not exist, or if fewer than ``count``
    arrive within ``timeout`` seconds."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"wirekafka-testing-{uuid.uuid4()}",  # commits nothing: assign below
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        deadline = time.monotonic() + timeout
        found = consumer.list_topics(name, timeout=timeout).topics.get(name)
        if found is None or found.error is not None:
            error = found.error if found is not None else None
            reason = error.name() if isinstance(error, KafkaError) else "not in the metadata"
            raise TopicError(f"cannot read topic {name!r} on {bootstrap}: {reason}")
        consumer.assign(
            [KafkaPartition(name, partition, OFFSET_BEGINNING) for partition in found.partitions]
        )
        records: list[Message] = []
        while len(records) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TopicError(
                    f"read {len(records)} of {count} records of topic {name!r} on {bootstrap} "
                    f"within {timeout} s"
                )
            message = consumer.poll(min(remaining, 1.0))
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.retriable() or error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise TopicError(f"reading topic {name!r} on {bootstrap}: {error.str()}")
            records.append(message)
        return records
    finally:
        consumer.close()
