"""max.broker.partitions: topics that would take the broker past it are refused
before any file is created; ``__consumer_offsets`` keeps its room."""

from __future__ import annotations

import logging

import pytest

from tests.handlers.support import TestBroker, make_batch
from tests.handlers.test_metadata import metadata
from tests.handlers.test_topics_admin import creatable, create
from tests.storage.helpers import FakeClock
from wirekafka.broker.cluster import BrokerEndpoint
from wirekafka.broker.topics import TopicManager
from wirekafka.config import broker_config_from_properties
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.cluster_metadata import ClusterMetadata, TopicDefinition
from wirekafka.storage.log_manager import LogManager

OFFSETS = "__consumer_offsets"
LIMITED = {"max.broker.partitions": "60", "offsets.topic.num.partitions": "5"}


def partition_dirs(broker: TestBroker, topic: str) -> list[str]:
    return sorted(p.name for p in broker.directory.iterdir() if p.name.startswith(f"{topic}-"))


@pytest.mark.parametrize("validate_only", [False, True])
def test_a_topic_past_the_limit_is_a_policy_violation(make_broker, validate_only):
    broker = make_broker(LIMITED)
    broker.create_topic("a", 50)
    [result] = create(broker, 7, creatable("b", 6), validate_only=validate_only)
    assert result.error_code == ErrorCode.POLICY_VIOLATION
    message = result.error_message
    assert "max.broker.partitions=60" in message
    assert "hosts 50 now" in message
    assert f"5 kept for {OFFSETS}" in message
    assert broker.ctx.topics.topic("b") is None
    assert partition_dirs(broker, "b") == []
    # What fits is created: 50 + 5 + 5 kept for the offsets topic.
    [fits] = create(broker, 7, creatable("c", 5), validate_only=validate_only)
    assert fits.error_code == ErrorCode.NONE
    assert len(partition_dirs(broker, "c")) == (0 if validate_only else 5)


def test_several_topics_in_one_request_count_one_after_another(make_broker):
    broker = make_broker(LIMITED)
    results = create(broker, 7, creatable("a", 30), creatable("b", 25), creatable("c", 1))
    assert [r.error_code for r in results] == [
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.POLICY_VIOLATION,
    ]
    assert "hosts 55 now" in results[2].error_message


def test_deleting_a_topic_makes_room(make_broker):
    broker = make_broker(LIMITED)
    broker.create_topic("a", 50)
    [refused] = create(broker, 7, creatable("b", 10))
    assert refused.error_code == ErrorCode.POLICY_VIOLATION
    assert broker.ctx.topics.delete_topic("a") is None
    [created] = create(broker, 7, creatable("b", 10))
    assert created.error_code == ErrorCode.NONE


def test_the_offsets_topic_counts_once_it_exists_and_is_never_refused(make_broker, caplog):
    broker = make_broker({"max.broker.partitions": "3", "offsets.topic.num.partitions": "5"})
    [refused] = create(broker, 7, creatable("a", 1))
    assert refused.error_code == ErrorCode.POLICY_VIOLATION  # 1 + 5 kept > 3
    with caplog.at_level(logging.WARNING, logger="wirekafka.topics"):
        broker.ctx.groups.offsets_log.ensure_topic()  # as the first group's coordinator does
    assert broker.ctx.topics.topic(OFFSETS) is not None
    assert "past max.broker.partitions=3" in caplog.text
    [still_refused] = create(broker, 7, creatable("a", 1))
    assert still_refused.error_code == ErrorCode.POLICY_VIOLATION
    assert "hosts 5 now" in still_refused.error_message
    assert "kept for" not in still_refused.error_message


def test_auto_creation_past_the_limit_is_a_topic_error(make_broker):
    broker = make_broker({**LIMITED, "num.partitions": "56"})
    response = metadata(broker, 9, ["auto"])
    [topic] = response.topics
    assert (topic.name, topic.error_code, topic.partitions) == (
        "auto",
        ErrorCode.POLICY_VIOLATION,
        [],
    )
    assert broker.ctx.topics.topic("auto") is None
    assert partition_dirs(broker, "auto") == []


def test_the_limit_defaults_to_the_fd_budget(broker):
    budget = broker.ctx.fd_budget
    assert broker.ctx.topics.max_partitions == budget.max_partitions
    reserved = broker.ctx.config.offsets_topic_num_partitions
    [refused] = create(broker, 7, creatable("a", budget.max_partitions - reserved + 1))
    assert refused.error_code == ErrorCode.POLICY_VIOLATION
    assert f"max.broker.partitions={budget.max_partitions}" in refused.error_message
    assert partition_dirs(broker, "a") == []


def test_a_broker_past_its_limit_after_a_restart_serves_what_it_has(make_broker):
    broker = make_broker({"offsets.topic.num.partitions": "1"})
    broker.create_topic("a", 8)
    broker.properties["max.broker.partitions"] = "4"
    broker.restart()
    for partition in range(8):
        produced = broker.produce("a", make_batch([b"v%d" % partition]), partition=partition)
        assert produced.error_code == ErrorCode.NONE
        fetched = broker.fetch("a", partition=partition)
        assert fetched.error_code == ErrorCode.NONE
        assert fetched.high_watermark == 1
    [refused] = create(broker, 7, creatable("b", 1))
    assert refused.error_code == ErrorCode.POLICY_VIOLATION
    assert "hosts 8 now" in refused.error_message


class ThreeBrokers:
    """A ClusterView of three live brokers, partition p on broker p % 3 (as
    ZooKeeper mode's round robin puts them)."""

    def brokers(self, listener_name: str | None = None) -> list[BrokerEndpoint]:
        return [BrokerEndpoint(node, "localhost", 9092 + node) for node in range(3)]

    def controller_id(self) -> int:
        return 0

    def leader(self, topic: str, partition: int) -> int:
        return partition % 3

    def replicas(self, topic: str, partition: int) -> list[int]:
        return [partition % 3]

    def isr(self, topic: str, partition: int) -> list[int]:
        return [partition % 3]

    def leader_epoch(self, topic: str, partition: int) -> int:
        return 0


def test_in_a_cluster_a_broker_counts_its_replicas_and_its_share(tmp_path):
    config = broker_config_from_properties(
        {
            "log.dirs": str(tmp_path / "logs"),
            "offsets.topic.num.partitions": "3",
            "offsets.topic.replication.factor": "1",
        }
    )
    logs = LogManager(config.log_dirs, config.log, FakeClock(), broker_id=0)
    logs.startup()
    store = ClusterMetadata(tmp_path / "topics.json")
    store.put_topics([TopicDefinition("a", 9)])  # 3 of them on broker 0
    topics = TopicManager(config, store, logs, ThreeBrokers(), 0, max_partitions=10)
    assert topics.hosted_partitions() == 3
    # 18 partitions: 6 here, 1 of __consumer_offsets' 3 kept: 10.
    assert topics.check_new_topic("b", 18, 1, {}) is None
    refused = topics.check_new_topic("b", 19, 1, {})  # 7 here
    assert refused is not None and refused.code == ErrorCode.POLICY_VIOLATION
    assert "bring this broker to 10 partitions, with 1 kept" in refused.message
    # two replicas of 9 partitions spread over 3 brokers: 6 of them here
    assert topics.check_new_topic("b", 9, 2, {}) is None
    refused = topics.check_new_topic("b", 10, 2, {})  # 7 here
    assert refused is not None and refused.code == ErrorCode.POLICY_VIOLATION
    logs.shutdown()


@pytest.mark.parametrize(("configured", "replicas"), [("5", 3), ("3", 3), ("2", 2)])
def test_the_offsets_topic_has_at_most_as_many_replicas_as_live_brokers(
    tmp_path, configured, replicas
):
    config = broker_config_from_properties(
        {"log.dirs": str(tmp_path / "logs"), "offsets.topic.replication.factor": configured}
    )
    logs = LogManager(config.log_dirs, config.log, FakeClock(), broker_id=0)
    logs.startup()
    store = ClusterMetadata(tmp_path / "topics.json")
    topics = TopicManager(config, store, logs, ThreeBrokers(), 0)
    assert topics.offsets_topic_replication_factor() == replicas
    logs.shutdown()


def test_a_single_broker_gets_an_offsets_topic_of_one_replica(broker):
    assert broker.ctx.config.offsets_topic_replication_factor == 3
    assert broker.ctx.topics.offsets_topic_replication_factor() == 1
