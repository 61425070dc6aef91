"""Log settings from Kafka's keys."""

from __future__ import annotations

import pytest

from wirekafka.protocol.records.record import TimestampType
from wirekafka.storage.config import (
    HOUR_MS,
    MINUTE_MS,
    ConfigError,
    LogConfig,
    log_config_from_properties,
)


def test_defaults_are_kafkas():
    config = LogConfig()
    assert config.segment_bytes == 1024**3
    assert config.index_interval_bytes == 4096
    assert config.retention_ms == 7 * 24 * HOUR_MS
    assert config.retention_bytes == -1
    assert config.roll_ms == 7 * 24 * HOUR_MS
    assert config.delete and not config.compact


def test_retention_units_and_their_precedence():
    assert log_config_from_properties({"log.retention.hours": "2"}).retention_ms == 2 * HOUR_MS
    assert log_config_from_properties({"log.retention.minutes": "3"}).retention_ms == 3 * MINUTE_MS
    both = {"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "7"}
    assert log_config_from_properties(both).retention_ms == 7
    assert log_config_from_properties({"log.retention.ms": "-1"}).retention_ms == -1


def test_topic_overrides():
    base = log_config_from_properties({"log.segment.bytes": "1048576"})
    topic = base.with_overrides(
        {"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime", "segment.ms": "10"}
    )
    assert topic.segment_bytes == 1048576
    assert topic.compact and not topic.delete
    assert topic.message_timestamp_type == TimestampType.LOG_APPEND_TIME
    assert topic.roll_ms == 10


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("log.segment.bytes", "ten"),
        ("log.segment.bytes", "3"),
        ("log.segment.bytes", str(2**31)),
        ("log.cleanup.policy", "shred"),
        ("log.message.timestamp.type", "Now"),
        ("log.retention.ms", "-5"),
    ],
)
def test_bad_values_name_their_key(key, value):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        log_config_from_properties({key: value})
