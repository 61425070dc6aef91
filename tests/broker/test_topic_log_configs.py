"""A topic's log settings, as its open logs take them: made once while nothing
changes, so that the maintenance round's check of every log is by identity."""

from __future__ import annotations

from pathlib import Path

from tests.handlers.support import TestBroker
from wirekafka.protocol.errors import ErrorCode


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


def test_a_log_made_while_its_topic_s_configs_change_takes_the_new_ones(
    tmp_path: Path,
) -> None:
    """The change goes through the open logs while the new one is being made (its
    configs were read before): the log is given them once made. In ZooKeeper mode
    the maintenance round would not go through the logs again until the next change."""
    broker = TestBroker(tmp_path)
    broker.create_topic("own", 2, {"retention.ms": "60000"})
    topics, logs = broker.ctx.topics, broker.ctx.logs
    assert logs.delete_log("own", 1)  # made anew below, as a replica's log is made on demand
    make = logs.get_or_create_log

    def made_during_a_change(*args: object) -> object:
        assert topics.set_topic_configs("own", {"retention.ms": "120000"}) is None
        return make(*args)  # type: ignore[arg-type]

    logs.get_or_create_log = made_during_a_change  # type: ignore[assignment,method-assign]
    made = topics.open_log("own", 1)
    assert not isinstance(made, ErrorCode)
    assert made.config.retention_ms == 120_000 and made.config is topics.log_config("own")
