"""Log settings from Kafka's keys."""

from __future__ import annotations

import pytest

from wirekafka.protocol.records.record import TimestampType
from wirekafka.storage.config import (
    HOUR_MS,
    MINUTE_MS,
    ConfigError,
    LogConfig,
    broker_log_defaults,
    broker_synonyms,
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
        ("log.cleaner.min.compaction.lag.ms", "-1"),
        ("log.cleaner.max.compaction.lag.ms", "0"),
    ],
)
def test_bad_values_name_their_key(key, value):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        log_config_from_properties({key: value})


def test_compaction_lags():
    assert (LogConfig().min_compaction_lag_ms, LogConfig().max_compaction_lag_ms) == (0, 2**63 - 1)
    broker = log_config_from_properties(
        {"log.cleaner.min.compaction.lag.ms": "5", "log.cleaner.max.compaction.lag.ms": "60000"}
    )
    assert (broker.min_compaction_lag_ms, broker.max_compaction_lag_ms) == (5, 60000)
    compacted = broker.with_overrides({"cleanup.policy": "compact", "segment.ms": "90000"})
    assert compacted.max_segment_ms == 60000  # segments roll in time to be cleaned
    assert broker.max_segment_ms == broker.roll_ms  # not compacted: segment.ms alone
    topic = broker.with_overrides({"min.compaction.lag.ms": "7", "max.compaction.lag.ms": "8"})
    assert (topic.min_compaction_lag_ms, topic.max_compaction_lag_ms) == (7, 8)
    with pytest.raises(ConfigError, match=r"min\.compaction\.lag\.ms=9 is more than max"):
        broker.with_overrides({"min.compaction.lag.ms": "9", "max.compaction.lag.ms": "8"})
    with pytest.raises(ConfigError, match=r"log\.cleaner\.min\.compaction\.lag\.ms=70000"):
        log_config_from_properties(
            {"log.cleaner.min.compaction.lag.ms": "70000", "log.cleaner.max.compaction.lag.ms": "1"}
        )


def test_broker_synonyms_finest_unit_first():
    retention = ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert broker_synonyms("retention.ms") == retention
    assert broker_synonyms("log.retention.hours") == retention
    assert broker_synonyms("segment.ms") == ["log.roll.ms", "log.roll.hours"]
    assert broker_synonyms("delete.retention.ms") == ["log.cleaner.delete.retention.ms"]
    assert broker_synonyms("log.segment.bytes") == ["log.segment.bytes"]


def test_broker_log_defaults_are_kafkas():
    defaults = broker_log_defaults()
    assert (defaults["log.retention.ms"], defaults["log.retention.minutes"]) == (None, None)
    assert defaults["log.retention.hours"] == "168"
    assert (defaults["log.roll.ms"], defaults["log.roll.hours"]) == (None, "168")
    assert defaults["log.segment.bytes"] == str(1024**3)
    assert defaults["log.cleanup.policy"] == "delete"
    assert defaults["log.cleaner.min.cleanable.ratio"] == "0.5"
    assert defaults["log.message.timestamp.type"] == "CreateTime"
    # Each default reads back as LogConfig's.
    given = {k: v for k, v in defaults.items() if v is not None}
    assert log_config_from_properties(given) == LogConfig()
