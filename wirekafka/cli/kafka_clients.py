"""confluent-kafka clients as the topic and record tools use them.

Their configs come from :func:`wirekafka.cli.client_options.client_config`
(which also sets the log policy). A request to the broker waits at most
``--timeout``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from concurrent.futures import Future
from typing import TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ClusterMetadata, TopicMetadata

from wirekafka.cli.client_options import LOGIN_FAILURES, client_config
from wirekafka.cli.errors import EXIT_USAGE, CommandError, from_kafka_error

T = TypeVar("T")


def kafka_config(
    args: argparse.Namespace,
    settings: Mapping[str, object] | None = None,
    *,
    defaults: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """The client config: the command config, then the tool's ``settings``; keys
    neither sets take their ``defaults``."""
    config = client_config(args)
    config.update(settings or {})
    for key, value in (defaults or {}).items():
        config.setdefault(key, value)
    return config


def timeout_ms(args: argparse.Namespace) -> int:
    return max(1, int(args.timeout * 1000))


def admin_client(args: argparse.Namespace) -> AdminClient:
    try:
        return AdminClient(kafka_config(args))  # type: ignore[arg-type]
    except (KafkaException, ValueError) as exc:
        raise config_error(exc) from exc


def producer(settings: dict[str, object]) -> Producer:
    try:
        return Producer(settings)
    except (KafkaException, ValueError) as exc:
        raise config_error(exc) from exc


def consumer(settings: dict[str, object]) -> Consumer:
    try:
        return Consumer(settings)
    except (KafkaException, ValueError) as exc:
        raise config_error(exc) from exc


def config_error(exc: KafkaException | ValueError) -> CommandError:
    """A config librdkafka refused (an unknown key, a bad value): a usage error."""
    error = exc.args[0] if exc.args else exc
    detail = error.str() if isinstance(error, KafkaError) else str(error)
    return CommandError(f"client config: {detail}", EXIT_USAGE)


def kafka_error(exc: KafkaException) -> KafkaError:
    """The :class:`KafkaError` a :class:`KafkaException` carries."""
    error = exc.args[0] if exc.args else None
    if isinstance(error, KafkaError):
        return error
    return KafkaError(KafkaError._FAIL, str(exc))


def wait(
    future: Future[T],
    args: argparse.Namespace,
    *,
    topic: str | None = None,
    group: str | None = None,
    doing: str,
) -> T:
    """The future's result, or the :class:`CommandError` naming its Kafka error."""
    try:
        return future.result()
    except KafkaException as exc:
        raise from_kafka_error(
            kafka_error(exc), broker=args.bootstrap_server, topic=topic, group=group, doing=doing
        ) from exc


def cluster_metadata(
    client: AdminClient | Producer | Consumer, args: argparse.Namespace, topic: str | None = None
) -> ClusterMetadata:
    """The cluster's metadata (of one topic, or of all), within ``--timeout``."""
    try:
        metadata: ClusterMetadata = client.list_topics(topic, timeout=args.timeout)
    except KafkaException as exc:
        client.poll(0)  # serves error_cb: a failed login says why the broker was lost
        error = LOGIN_FAILURES.last or kafka_error(exc)
        raise from_kafka_error(
            error, broker=args.bootstrap_server, topic=topic, doing="read metadata of"
        ) from exc
    return metadata


def existing_topic(
    client: Producer | Consumer, args: argparse.Namespace, topic: str, *, doing: str
) -> TopicMetadata:
    """The metadata of ``topic``; an error naming it (UNKNOWN_TOPIC_OR_PART) when
    the broker does not have it. LEADER_NOT_AVAILABLE (a topic being created) is
    no error: librdkafka waits for the leader."""
    metadata = cluster_metadata(client, args, topic).topics.get(topic)
    if metadata is None:
        error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        raise from_kafka_error(error, broker=args.bootstrap_server, topic=topic, doing=doing)
    if metadata.error is not None and metadata.error.code() != KafkaError.LEADER_NOT_AVAILABLE:
        raise from_kafka_error(
            metadata.error, broker=args.bootstrap_server, topic=topic, doing=doing
        )
    return metadata
