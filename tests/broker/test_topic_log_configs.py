"""A topic's log settings, as its open logs take them: made once while nothing
changes, so that the maintenance round's check of every log is by identity."""

from __future__ import annotations

from pathlib import Path

from tests.handlers.support import TestBroker


def test_a_topic_s_log_settings_are_the_same_object_until_its_configs_change(
    tmp_path: Path,
) -> None:
    broker = TestBroker(tmp_path)
    broker.create_topic("plain")
    broker.create_topic("own", 3, {"retention.ms": "60000"})
    topics = broker.ctx.topics
    assert topics.log_config("plain") is broker.ctx.config.log  # no keys of its own
    first = topics.log_config("own")
    assert first.retention_ms == 60_000 and topics.log_config("own") is first
    assert topics.set_topic_configs("own", {"retention.ms": "120000"}) is None
    changed = topics.log_config("own")
    assert changed.retention_ms == 120_000 and topics.log_config("own") is changed


def test_every_open_log_takes_its_topic_s_settings_and_keeps_them_while_unchanged(
    tmp_path: Path,
) -> None:
    broker = TestBroker(tmp_path)
    broker.create_topic("own", 3, {"retention.ms": "60000"})
    topics = broker.ctx.topics
    logs = [broker.ctx.logs.get_or_create_log("own", partition) for partition in range(3)]
    topics.apply_log_configs()  # a maintenance round's, in ZooKeeper mode
    shared = topics.log_config("own")
    assert all(log.config is shared for log in logs)
    topics.apply_log_configs()
    assert all(log.config is shared for log in logs)
    assert topics.set_topic_configs("own", {"retention.ms": "120000"}) is None
    assert {log.config.retention_ms for log in logs} == {120_000}
