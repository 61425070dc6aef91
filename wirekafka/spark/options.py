"""The options of Spark's Kafka source and sink, read and checked.

The names are Spark's (``kafka.bootstrap.servers``, ``subscribe``,
``startingOffsets`` ...) so a query written for ``format("kafka")`` runs on
``format("wirekafka")`` with the same options. Options prefixed ``kafka.`` go
to the Kafka client (librdkafka), less the ones Spark also refuses because the
source manages them itself. A bad option raises :class:`OptionError` naming it.

Nothing here talks to a broker: offsets given as JSON are parsed into
:class:`OffsetSpec` values and resolved later against the partitions found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from wirekafka.java_client_settings import translate_java_settings

# The sentinels of Spark's offsets JSON.
EARLIEST = -2
LATEST = -1

DEFAULT_POLL_TIMEOUT_MS = 120_000

# kafka.* settings Spark refuses because the source or sink sets them itself.
_MANAGED_CLIENT_KEYS = {
    "auto.offset.reset": "set startingOffsets instead",
    "key.deserializer": "keys are always read as bytes",
    "value.deserializer": "values are always read as bytes",
    "key.serializer": "keys are always written as bytes",
    "value.serializer": "values are always written as bytes",
    "enable.auto.commit": "the source never commits offsets to Kafka",
    "interceptor.classes": "interceptors are not supported",
}

_SUBSCRIPTIONS = ("assign", "subscribe", "subscribePattern")


class OptionError(ValueError):
    """An option of the Kafka source or sink is missing or has a bad value."""


TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Subscribe:
    """``subscribe``: these topics, all their partitions."""

    topics: tuple[str, ...]

    def matches(self, topic: str) -> bool:
        return topic in self.topics


@dataclass(frozen=True, slots=True)
class SubscribePattern:
    """``subscribePattern``: every topic whose whole name matches the pattern."""

    pattern: str

    def matches(self, topic: str) -> bool:
        return re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True, slots=True)
class Assign:
    """``assign``: exactly these partitions."""

    partitions: frozenset[TopicPartition]

    def matches(self, topic: str) -> bool:
        return any(t == topic for t, _ in self.partitions)


Subscription = Subscribe | SubscribePattern | Assign


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """``earliest``, ``latest``, or an offset per partition (``EARLIEST``/``LATEST`` allowed)."""

    kind: Literal["earliest", "latest", "specific"]
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    client_config: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    client_config: Mapping[str, str]


def source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Read the options of a batch (``streaming=False``) or streaming read."""
    given = _case_insensitive(options)
    subscription = _subscription(given)
    starting = parse_offsets(
        given.get("startingoffsets", "latest" if streaming else "earliest"), "startingOffsets"
    )
    if streaming:
        if "endingoffsets" in given:
            raise OptionError("endingOffsets is for batch queries; a stream has no end")
        ending = OffsetSpec("latest")
    else:
        ending = parse_offsets(given.get("endingoffsets", "latest"), "endingOffsets")
        if starting.kind == "latest" or LATEST in starting.offsets.values():
            raise OptionError("startingOffsets cannot be latest in a batch query")
        if ending.kind == "earliest" or EARLIEST in ending.offsets.values():
            raise OptionError("endingOffsets cannot be earliest in a batch query")
    if isinstance(subscription, Assign):
        for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
            stray = set(spec.offsets) - subscription.partitions
            if stray:
                raise OptionError(
                    f"{name} names partitions that are not assigned: {partition_names(stray)}"
                )
    max_offsets = given.get("maxoffsetspertrigger")
    return SourceOptions(
        bootstrap_servers=_bootstrap_servers(given),
        subscription=subscription,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=None
        if max_offsets is None
        else _positive_int(max_offsets, "maxOffsetsPerTrigger"),
        fail_on_data_loss=_boolean(given.get("failondataloss", "true"), "failOnDataLoss"),
        include_headers=include_headers(options),
        poll_timeout_ms=_positive_int(
            given.get("kafkaconsumer.polltimeoutms", str(DEFAULT_POLL_TIMEOUT_MS)),
            "kafkaConsumer.pollTimeoutMs",
        ),
        client_config=_client_config(options),
    )


def include_headers(options: Mapping[str, str]) -> bool:
    """``includeHeaders``: whether reads have a ``headers`` column (default false)."""
    return _boolean(_case_insensitive(options).get("includeheaders", "false"), "includeHeaders")


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Read the options of a batch or streaming write."""
    given = _case_insensitive(options)
    topic = given.get("topic")
    if topic is not None and not topic.strip():
        raise OptionError("topic must not be empty")
    return SinkOptions(_bootstrap_servers(given), topic, _client_config(options))


def parse_offsets(text: str, name: str) -> OffsetSpec:
    """``earliest``, ``latest`` or ``{"topic": {"0": 23, "1": -2}}``."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        return OffsetSpec(word)  # type: ignore[arg-type]
    try:
        parsed = json.loads(text)
    except ValueError:
        raise OptionError(
            f'{name} must be earliest, latest or JSON such as {{"topic": {{"0": 23}}}}, got {text!r}'
        ) from None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f"{name} must map topics to partition offsets, got {text!r}")
    offsets: dict[TopicPartition, int] = {}
    for topic, per_partition in parsed.items():
        if not isinstance(per_partition, dict) or not per_partition:
            raise OptionError(f"{name}: topic {topic!r} must map partitions to offsets")
        for partition, offset in per_partition.items():
            if (
                not isinstance(offset, int)
                or isinstance(offset, bool)
                or offset < EARLIEST
                or not _is_partition_number(partition)
            ):
                raise OptionError(
                    f"{name}: {topic}-{partition} needs a partition number and an offset"
                    f" >= -2 (-2 earliest, -1 latest), got {offset!r}"
                )
            offsets[(topic, int(partition))] = offset
    return OffsetSpec("specific", offsets)


def offsets_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets in the shape of Spark's Kafka offsets: ``{"topic": {"0": 23}}``, sorted."""
    nested: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        nested.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return nested


def offsets_from_json(nested: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_json`, for offsets Spark hands back from a checkpoint."""
    return {
        (topic, int(partition)): int(offset)
        for topic, per_partition in nested.items()
        for partition, offset in per_partition.items()
    }


def _subscription(given: Mapping[str, str]) -> Subscription:
    chosen = [name for name in _SUBSCRIPTIONS if name.lower() in given]
    if len(chosen) != 1:
        raise OptionError(
            f"exactly one of assign, subscribe, subscribePattern must be given, got {chosen or 'none'}"
        )
    name = chosen[0]
    value = given[name.lower()]
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe must name at least one topic")
        return Subscribe(topics)
    if name == "subscribePattern":
        if not value.strip():
            raise OptionError("subscribePattern must not be empty")
        try:
            re.compile(value)
        except re.error as e:
            raise OptionError(f"subscribePattern {value!r} is not a valid pattern: {e}") from None
        return SubscribePattern(value)
    return Assign(_assigned(value))


def _assigned(text: str) -> frozenset[TopicPartition]:
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(f'assign must be JSON such as {{"topic": [0, 1]}}, got {text!r}')
    partitions: set[TopicPartition] = set()
    for topic, numbers in parsed.items():
        if not isinstance(numbers, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers
        ):
            raise OptionError(f"assign: topic {topic!r} must list partition numbers")
        partitions.update((topic, n) for n in numbers)
    if not partitions:
        raise OptionError("assign must name at least one partition")
    return frozenset(partitions)


def _client_config(options: Mapping[str, str]) -> dict[str, str]:
    config: dict[str, str] = {}
    for key, value in options.items():
        if not key.lower().startswith("kafka."):
            continue
        client_key = key[len("kafka.") :]
        if client_key in _MANAGED_CLIENT_KEYS:
            raise OptionError(
                f"kafka.{client_key} is not supported: {_MANAGED_CLIENT_KEYS[client_key]}"
            )
        config[client_key] = value
    try:
        return translate_java_settings(config)
    except ValueError as exc:
        raise OptionError(f"kafka.{exc}") from None


def _bootstrap_servers(given: Mapping[str, str]) -> str:
    servers = given.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        raise OptionError("kafka.bootstrap.servers must be given (host:port[,host:port...])")
    return servers


def _case_insensitive(options: Mapping[str, str]) -> dict[str, str]:
    # Spark's options are case-insensitive.
    return {key.lower(): value for key, value in options.items()}


def _boolean(text: str, name: str) -> bool:
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise OptionError(f"{name} must be true or false, got {text!r}")
    return word == "true"


def _positive_int(text: str, name: str) -> int:
    try:
        number = int(text.strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise OptionError(f"{name} must be a positive whole number, got {text!r}")
    return number


def _is_partition_number(text: str) -> bool:
    return text.isdigit() and text.isascii()


def partition_name(tp: TopicPartition) -> str:
    """``topic-partition``, as Kafka names a partition in its messages."""
    return f"{tp[0]}-{tp[1]}"


def partition_names(partitions: Collection[TopicPartition]) -> str:
    return ", ".join(partition_name(tp) for tp in sorted(partitions))
