"""A partition log's settings, named as Kafka names them.

Broker-wide keys (``log.segment.bytes``, ``log.retention.hours``, ...) give the
defaults; a topic may override them with its own keys (``segment.bytes``,
``retention.ms``, ...). :func:`log_config_from_properties` reads either kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirekafka.protocol.records.record import TimestampType

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
NO_LIMIT = 2**63 - 1  # Kafka's Long.MAX_VALUE, "never"


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range; names the key."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024**3
    roll_ms: int = 168 * HOUR_MS
    index_interval_bytes: int = 4096
    index_max_bytes: int = 10 * 1024 * 1024
    flush_interval_messages: int = NO_LIMIT
    flush_interval_ms: int = NO_LIMIT
    retention_ms: int = 168 * HOUR_MS  # -1: keep forever
    retention_bytes: int = -1  # -1: no size limit
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = 24 * HOUR_MS
    min_cleanable_dirty_ratio: float = 0.5  # compact once this share of the log is uncleaned
    min_compaction_lag_ms: int = 0  # records stay uncompacted at least this long
    max_compaction_lag_ms: int = NO_LIMIT  # and are cleanable at most this long after written
    file_delete_delay_ms: int = 60_000
    message_timestamp_type: TimestampType = TimestampType.CREATE_TIME
    message_downconversion_enable: bool = True  # false: Fetch v0-v3 get UNSUPPORTED_VERSION
    max_message_bytes: int = 1048588  # largest record batch a produce may append
    min_insync_replicas: int = 1  # acks=all needs this many in the ISR
    unclean_leader_election_enable: bool = False  # a replica out of the ISR may lead

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """How long a segment stays active: ``segment.ms``, or less on a compacted
        topic, whose records must not wait in the active segment (which is never
        cleaned) past ``max.compaction.lag.ms``."""
        if self.compact:
            return min(self.roll_ms, self.max_compaction_lag_ms)
        return self.roll_ms

    def with_overrides(self, properties: Mapping[str, str]) -> LogConfig:
        """This config with a topic's own keys (``retention.ms``, ...) applied."""
        return log_config_from_properties(properties, base=self, topic_keys=True)


# key -> (field, multiplier to the field's unit); a topic's keys drop the "log." prefix
# except for the few Kafka named differently at topic level.
BROKER_LOG_KEYS: dict[str, tuple[str, int]] = {
    "log.segment.bytes": ("segment_bytes", 1),
    "log.roll.ms": ("roll_ms", 1),
    "log.roll.hours": ("roll_ms", HOUR_MS),
    "log.index.interval.bytes": ("index_interval_bytes", 1),
    "log.index.size.max.bytes": ("index_max_bytes", 1),
    "log.flush.interval.messages": ("flush_interval_messages", 1),
    "log.flush.interval.ms": ("flush_interval_ms", 1),
    "log.retention.ms": ("retention_ms", 1),
    "log.retention.minutes": ("retention_ms", MINUTE_MS),
    "log.retention.hours": ("retention_ms", HOUR_MS),
    "log.retention.bytes": ("retention_bytes", 1),
    "log.cleanup.policy": ("cleanup_policy", 1),
    "log.cleaner.delete.retention.ms": ("delete_retention_ms", 1),
    "log.cleaner.min.cleanable.ratio": ("min_cleanable_dirty_ratio", 1),
    "log.cleaner.min.compaction.lag.ms": ("min_compaction_lag_ms", 1),
    "log.cleaner.max.compaction.lag.ms": ("max_compaction_lag_ms", 1),
    "log.segment.delete.delay.ms": ("file_delete_delay_ms", 1),
    "log.message.timestamp.type": ("message_timestamp_type", 1),
    "log.message.downconversion.enable": ("message_downconversion_enable", 1),
    "message.max.bytes": ("max_message_bytes", 1),
    "min.insync.replicas": ("min_insync_replicas", 1),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", 1),
}
TOPIC_LOG_KEYS: dict[str, tuple[str, int]] = {
    "segment.bytes": ("segment_bytes", 1),
    "segment.ms": ("roll_ms", 1),
    "index.interval.bytes": ("index_interval_bytes", 1),
    "segment.index.bytes": ("index_max_bytes", 1),
    "flush.messages": ("flush_interval_messages", 1),
    "flush.ms": ("flush_interval_ms", 1),
    "retention.ms": ("retention_ms", 1),
    "retention.bytes": ("retention_bytes", 1),
    "cleanup.policy": ("cleanup_policy", 1),
    "delete.retention.ms": ("delete_retention_ms", 1),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", 1),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", 1),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", 1),
    "file.delete.delay.ms": ("file_delete_delay_ms", 1),
    "message.timestamp.type": ("message_timestamp_type", 1),
    "message.downconversion.enable": ("message_downconversion_enable", 1),
    "max.message.bytes": ("max_message_bytes", 1),
    "min.insync.replicas": ("min_insync_replicas", 1),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", 1),
}
# Kafka lets the finer unit win when several are given: ms over minutes over hours.
_PRECEDENCE = {HOUR_MS: 0, MINUTE_MS: 1, 1: 2}
_MINIMUMS = {
    "segment_bytes": 14,  # Kafka's smallest: one batch header must fit
    "roll_ms": 1,
    "index_interval_bytes": 0,
    "index_max_bytes": 8,
    "flush_interval_messages": 1,
    "flush_interval_ms": 0,
    "retention_ms": -1,
    "retention_bytes": -1,
    "delete_retention_ms": 0,
    "min_compaction_lag_ms": 0,
    "max_compaction_lag_ms": 1,
    "file_delete_delay_ms": 0,
    "max_message_bytes": 0,
    "min_insync_replicas": 1,
}
# positions in an index are int32; Kafka's sizes are ints
_MAXIMUMS = {
    "segment_bytes": 2**31 - 1,
    "max_message_bytes": 2**31 - 1,
    "min_insync_replicas": 2**31 - 1,
}
_BOOLEANS = frozenset({"message_downconversion_enable", "unclean_leader_election_enable"})


def _parse(key: str, field: str, text: str, multiplier: int) -> Any:
    if field == "cleanup_policy":
        policies = frozenset(part.strip() for part in text.split(",") if part.strip())
        if not policies or not policies <= {"delete", "compact"}:
            raise ConfigError(f"{key}={text!r}: expected delete, compact or both")
        return policies
    if field == "message_timestamp_type":
        names = {
            "CreateTime": TimestampType.CREATE_TIME,
            "LogAppendTime": TimestampType.LOG_APPEND_TIME,
        }
        if text not in names:
            raise ConfigError(f"{key}={text!r}: expected CreateTime or LogAppendTime")
        return names[text]
    if field in _BOOLEANS:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"{key}={text!r}: expected true or false")
        return text.lower() == "true"
    if field == "min_cleanable_dirty_ratio":
        try:
            ratio = float(text)
        except ValueError:
            raise ConfigError(f"{key}={text!r}: not a number") from None
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(f"{key}={text!r}: must be between 0 and 1")
        return ratio
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{key}={text!r}: not an integer") from None
    if value < _MINIMUMS[field]:
        raise ConfigError(f"{key}={value}: must be at least {_MINIMUMS[field]}")
    scaled = value * multiplier if value >= 0 else value
    if scaled > _MAXIMUMS.get(field, NO_LIMIT):
        raise ConfigError(f"{key}={value}: must be at most {_MAXIMUMS[field]}")
    return scaled


def log_config_from_properties(
    properties: Mapping[str, str],
    *,
    base: LogConfig | None = None,
    topic_keys: bool = False,
) -> LogConfig:
    """A LogConfig from Kafka keys; keys this module does not know are ignored.

    Broker keys are read unless ``topic_keys`` is set; bad values raise
    :class:`ConfigError` naming the key.
    """
    table = TOPIC_LOG_KEYS if topic_keys else BROKER_LOG_KEYS
    chosen: dict[str, tuple[int, Any]] = {}
    for key, text in properties.items():
        if key not in table:
            continue
        field, multiplier = table[key]
        rank = _PRECEDENCE[multiplier]
        value = _parse(key, field, str(text).strip(), multiplier)
        if field not in chosen or rank > chosen[field][0]:
            chosen[field] = (rank, value)
    config = dataclasses.replace(base or LogConfig(), **{f: v for f, (_, v) in chosen.items()})
    if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
        prefix = "" if topic_keys else "log.cleaner."
        raise ConfigError(
            f"{prefix}min.compaction.lag.ms={config.min_compaction_lag_ms} is more than "
            f"{prefix}max.compaction.lag.ms={config.max_compaction_lag_ms}"
        )
    return config


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, frozenset):
        return ",".join(sorted(value))
    if isinstance(value, TimestampType):
        return "LogAppendTime" if value == TimestampType.LOG_APPEND_TIME else "CreateTime"
    return str(value)


def topic_properties(config: LogConfig) -> dict[str, str]:
    """The config as a topic's keys (``segment.bytes``, ``retention.ms``, ...)."""
    return {key: _render(getattr(config, field)) for key, (field, _) in TOPIC_LOG_KEYS.items()}


def check_topic_keys(properties: Mapping[str, str]) -> None:
    """Raise ConfigError for a key that is not a topic config this broker knows."""
    for key in properties:
        if key not in TOPIC_LOG_KEYS:
            raise ConfigError(f"unknown topic config {key!r}")


def broker_synonyms(key: str) -> list[str]:
    """The broker keys that set what ``key`` (a broker or a topic key) sets, finest
    unit first, as Kafka lists them: ``retention.ms`` -> ``log.retention.ms``,
    ``log.retention.minutes``, ``log.retention.hours``."""
    table = BROKER_LOG_KEYS if key in BROKER_LOG_KEYS else TOPIC_LOG_KEYS
    field = table[key][0]
    return [k for k, (f, _) in BROKER_LOG_KEYS.items() if f == field]


def broker_log_defaults() -> dict[str, str | None]:
    """The defaults of the broker's log keys, as Kafka gives them: a setting with keys
    in several units has its default on the coarsest (``log.retention.hours=168``),
    the others none (``log.retention.ms``, ``log.retention.minutes``)."""
    defaults = LogConfig()
    found: dict[str, str | None] = dict.fromkeys(BROKER_LOG_KEYS)
    coarsest = {field: key for key, (field, _) in BROKER_LOG_KEYS.items()}  # listed last
    for field, key in coarsest.items():
        value = getattr(defaults, field)
        multiplier = BROKER_LOG_KEYS[key][1]
        found[key] = _render(value // multiplier if multiplier != 1 else value)
    return found
