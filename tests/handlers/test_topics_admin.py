"""CreateTopics, DeleteTopics and DescribeConfigs."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.handlers.support import TestBroker, make_batch
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from wirekafka.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from wirekafka.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.storage.cluster_metadata import CLUSTER_METADATA_FILE
from wirekafka.storage.config import TOPIC_LOG_KEYS

SOURCE_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


def creatable(
    name: str,
    partitions: int = 1,
    replication: int = 1,
    configs: dict[str, str | None] | None = None,
    assignments: dict[int, list[int]] | None = None,
) -> CreatableTopic:
    return CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=replication,
        assignments=[
            CreatableReplicaAssignment(partition_index=index, broker_ids=ids)
            for index, ids in (assignments or {}).items()
        ],
        configs=[CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
    )


def create(broker: TestBroker, version: int, *topics: CreatableTopic, validate_only=False):
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=1000, validate_only=validate_only)
    return broker.call(ApiKey.CREATE_TOPICS, version, request).topics


def errors(results) -> list[tuple[str, int]]:
    return [(r.name, r.error_code) for r in results]


def metadata_names(broker: TestBroker) -> list[str]:
    response = broker.call(ApiKey.METADATA, 12, MetadataRequest(topics=None))
    return [t.name for t in response.topics]


# CreateTopics


@pytest.mark.parametrize("version", [0, 1, 4, 5, 7])
def test_create_topics_with_partitions(broker, version):
    results = create(broker, version, creatable("a", 3), creatable("b", 1))
    assert errors(results) == [("a", ErrorCode.NONE), ("b", ErrorCode.NONE)]
    assert metadata_names(broker) == ["a", "b"]
    topic = broker.ctx.topics.topic("a")
    assert topic is not None
    assert topic.partitions == 3
    assert [(broker.directory / f"a-{p}").is_dir() for p in range(4)] == [True, True, True, False]
    if version >= 5:
        assert (results[0].num_partitions, results[0].replication_factor) == (3, 1)


def test_created_topics_are_recorded_on_disk_and_survive_a_restart(broker):
    create(broker, 7, creatable("a", 2, configs={"retention.ms": "1234"}))
    document = json.loads((broker.directory / CLUSTER_METADATA_FILE).read_text())
    assert document["topics"] == {"a": {"partitions": 2, "configs": {"retention.ms": "1234"}}}
    broker.restart()
    assert metadata_names(broker) == ["a"]
    assert broker.log("a", 1).config.retention_ms == 1234


@pytest.mark.parametrize("version", [4, 5, 7])
def test_minus_one_takes_the_broker_defaults(make_broker, version):
    broker = make_broker({"num.partitions": "4"})
    [result] = create(broker, version, creatable("a", -1, -1))
    assert result.error_code == ErrorCode.NONE
    topic = broker.ctx.topics.topic("a")
    assert topic is not None
    assert topic.partitions == 4
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (4, 1)


def test_configs_are_applied(broker):
    configs = {
        "retention.ms": "60000",
        "segment.bytes": "100000",
        "cleanup.policy": "compact",
        "message.timestamp.type": "LogAppendTime",
    }
    [result] = create(broker, 7, creatable("a", 1, configs=configs))
    assert result.error_code == ErrorCode.NONE
    log_config = broker.log("a").config
    assert log_config.retention_ms == 60000
    assert log_config.segment_bytes == 100000
    assert log_config.cleanup_policy == frozenset({"compact"})
    reported = {c.name: (c.value, c.config_source) for c in result.configs}
    assert set(reported) == set(TOPIC_LOG_KEYS)
    assert reported["retention.ms"] == ("60000", SOURCE_TOPIC)
    assert reported["cleanup.policy"] == ("compact", SOURCE_TOPIC)
    assert reported["message.timestamp.type"] == ("LogAppendTime", SOURCE_TOPIC)
    assert reported["retention.bytes"] == ("-1", SOURCE_DEFAULT)
    assert reported["segment.ms"] == (str(7 * 24 * 3_600_000), SOURCE_DEFAULT)
    response = broker.produce("a", make_batch([b"x"], keys=[b"k"]))  # compacted: keys only
    assert response.log_append_time_ms == broker.clock.now_ms


@pytest.mark.parametrize(
    "configs",
    [
        {"retention.ms": "soon"},
        {"retention.ms": "-5"},
        {"no.such.config": "1"},
        {"log.retention.ms": "1000"},  # a broker key, not a topic key
        {"cleanup.policy": "forever"},
        {"segment.bytes": "1"},
    ],
)
def test_invalid_config_is_invalid_config(broker, configs):
    [result] = create(broker, 7, creatable("a", 1, configs=configs))
    assert result.error_code == ErrorCode.INVALID_CONFIG
    assert next(iter(configs)) in result.error_message
    assert broker.ctx.topics.topic("a") is None
    assert not (broker.directory / "a-0").exists()


@pytest.mark.parametrize(
    ("replication", "message"),
    [
        (2, "Replication factor: 2 larger than available brokers: 1."),
        (3, "Replication factor: 3 larger than available brokers: 1."),
        (0, "Replication factor must be larger than 0."),
        (-2, "Replication factor must be larger than 0."),
    ],
)
def test_replication_factor_other_than_one(broker, replication, message):
    # one broker: Kafka's refusal, in Kafka's words
    [result] = create(broker, 7, creatable("a", 1, replication))
    assert (result.error_code, result.error_message) == (
        ErrorCode.INVALID_REPLICATION_FACTOR,
        message,
    )
    assert broker.ctx.topics.topic("a") is None


def test_the_default_replication_factor_applies_to_creation_and_auto_creation(make_broker):
    broker = make_broker({"default.replication.factor": "3"})
    [result] = create(broker, 7, creatable("a", 1, -1))
    assert result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert result.error_message == "Replication factor: 3 larger than available brokers: 1."
    # auto-creation fails too, as Kafka's does with too few brokers alive
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="auto")], allow_auto_topic_creation=True
    )
    [topic] = broker.call(ApiKey.METADATA, 9, request).topics
    assert topic.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert broker.ctx.topics.topic("auto") is None


@pytest.mark.parametrize("partitions", [0, -2])
def test_bad_partition_count(broker, partitions):
    [result] = create(broker, 7, creatable("a", partitions))
    assert result.error_code == ErrorCode.INVALID_PARTITIONS
    assert broker.ctx.topics.topic("a") is None


@pytest.mark.parametrize("name", [".", "..", "a" * 250, "a/b", ""])
def test_invalid_topic_names(broker, name):
    [result] = create(broker, 7, creatable(name))
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert broker.ctx.topics.names() == []


@pytest.mark.parametrize("version", [0, 5, 7])
def test_existing_topic(broker, version):
    broker.create_topic("a", 2)
    [result] = create(broker, version, creatable("a", 5))
    assert result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    topic = broker.ctx.topics.topic("a")
    assert topic is not None
    assert topic.partitions == 2
    if version >= 1:
        assert result.error_message == "topic 'a' already exists"


@pytest.mark.parametrize("version", [1, 5, 7])
def test_validate_only_creates_nothing(broker, version):
    results = create(
        broker,
        version,
        creatable("good", 2, configs={"retention.ms": "1000"}),
        creatable("bad", 1, configs={"retention.ms": "x"}),
        validate_only=True,
    )
    assert errors(results) == [("good", ErrorCode.NONE), ("bad", ErrorCode.INVALID_CONFIG)]
    assert broker.ctx.topics.names() == []
    assert not (broker.directory / "good-0").exists()
    assert not (broker.directory / CLUSTER_METADATA_FILE).exists()


def test_duplicate_name_in_one_request_is_invalid_request(broker):
    results = create(broker, 7, creatable("a"), creatable("b"), creatable("a", 2))
    assert errors(results) == [
        ("a", ErrorCode.INVALID_REQUEST),
        ("b", ErrorCode.NONE),
        ("a", ErrorCode.INVALID_REQUEST),
    ]
    assert broker.ctx.topics.names() == ["b"]


def test_replica_assignments(broker):
    [result] = create(broker, 7, creatable("a", -1, -1, assignments={0: [0], 1: [0]}))
    assert result.error_code == ErrorCode.NONE
    topic = broker.ctx.topics.topic("a")
    assert topic is not None
    assert topic.partitions == 2


@pytest.mark.parametrize(
    ("partitions", "assignments", "code"),
    [
        (-1, {0: [1]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (-1, {0: [0, 0]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (-1, {1: [0]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (2, {0: [0]}, ErrorCode.INVALID_REQUEST),
        (-1, {0: []}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (-1, {0: [0], 1: [0], 2: [0, 1]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ],
)
def test_bad_replica_assignments(broker, partitions, assignments, code):
    [result] = create(broker, 7, creatable("a", partitions, -1, assignments=assignments))
    assert result.error_code == code
    assert broker.ctx.topics.topic("a") is None


# DeleteTopics


@pytest.mark.parametrize("version", [0, 1, 4, 5])
def test_delete_topics_by_name(broker, version):
    broker.create_topic("a", 2)
    broker.create_topic("b")
    broker.produce("a", make_batch([b"x"]))
    request = DeleteTopicsRequest(topic_names=["a", "nope"], timeout_ms=1000)
    response = broker.call(ApiKey.DELETE_TOPICS, version, request)
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("a", ErrorCode.NONE),
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert metadata_names(broker) == ["b"]
    assert not (broker.directory / "a-0").exists()
    assert not (broker.directory / "a-1").exists()
    renamed = sorted(p.name for p in broker.directory.iterdir() if p.name.endswith("-delete"))
    assert [name.split(".")[0] for name in renamed] == ["a-0", "a-1"]
    assert broker.ctx.logs.get_log("a", 0) is None
    assert broker.produce("a", make_batch()).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_topics_v6_by_topic_state(broker):
    broker.create_topic("a")
    request = DeleteTopicsRequest(
        topics=[
            DeleteTopicState(name="a", topic_id=uuid.UUID(int=0)),
            DeleteTopicState(name=None, topic_id=uuid.UUID(int=5)),
        ],
        timeout_ms=1000,
    )
    response = broker.call(ApiKey.DELETE_TOPICS, 6, request)
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("a", ErrorCode.NONE),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert metadata_names(broker) == []
    assert not (broker.directory / "a-0").exists()


def test_deleted_topics_stay_deleted_after_a_restart(broker):
    broker.create_topic("a")
    broker.produce("a", make_batch([b"x"]))
    broker.call(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(topic_names=["a"], timeout_ms=1))
    broker.restart()
    assert metadata_names(broker) == []
    assert [p.name for p in broker.directory.iterdir() if p.is_dir()] == []


def test_a_deleted_topic_can_be_created_again_empty(broker):
    broker.create_topic("a")
    broker.produce("a", make_batch([b"x", b"y"]))
    broker.call(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(topic_names=["a"], timeout_ms=1))
    [result] = create(broker, 7, creatable("a", 1))
    assert result.error_code == ErrorCode.NONE
    assert broker.log_end("a") == 0
    assert broker.produce("a", make_batch([b"z"])).base_offset == 0


# DescribeConfigs


def synonyms(config) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in config.synonyms]


def describe(broker: TestBroker, version: int, *resources: tuple[int, str, list[str] | None]):
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(resource_type=kind, resource_name=name, configuration_keys=keys)
            for kind, name, keys in resources
        ],
        include_synonyms=True,
        include_documentation=False,
    )
    return broker.call(ApiKey.DESCRIBE_CONFIGS, version, request).results


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_topic_configs(make_broker, version):
    broker = make_broker({"log.segment.bytes": "500000"})
    broker.create_topic("a", configs={"retention.ms": "1000"})
    [result] = describe(broker, version, (RESOURCE_TOPIC, "a", None))
    assert (result.error_code, result.resource_type, result.resource_name) == (
        ErrorCode.NONE,
        RESOURCE_TOPIC,
        "a",
    )
    configs = {c.name: c for c in result.configs}
    assert set(configs) == set(TOPIC_LOG_KEYS)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", SOURCE_TOPIC)
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("500000", SOURCE_STATIC_BROKER)
    policy = configs["cleanup.policy"]
    assert (policy.value, policy.config_source) == ("delete", SOURCE_DEFAULT)
    # Kafka's synonyms: the topic's own value, then the broker keys that set it,
    # those given before their defaults.
    assert synonyms(retention) == [
        ("retention.ms", "1000", SOURCE_TOPIC),
        ("log.retention.hours", "168", SOURCE_DEFAULT),
    ]
    assert synonyms(segment) == [
        ("log.segment.bytes", "500000", SOURCE_STATIC_BROKER),
        ("log.segment.bytes", str(1024**3), SOURCE_DEFAULT),
    ]
    assert synonyms(policy) == [("log.cleanup.policy", "delete", SOURCE_DEFAULT)]
    assert synonyms(configs["delete.retention.ms"]) == [
        ("log.cleaner.delete.retention.ms", "86400000", SOURCE_DEFAULT)
    ]


def test_describe_topic_configs_from_broker_keys_in_other_units(make_broker):
    broker = make_broker({"log.retention.minutes": "90", "log.roll.hours": "2"})
    broker.create_topic("a")
    [result] = describe(broker, 4, (RESOURCE_TOPIC, "a", ["retention.ms", "segment.ms"]))
    retention, segment = result.configs
    assert (retention.value, retention.config_source) == (str(90 * 60_000), SOURCE_STATIC_BROKER)
    assert synonyms(retention) == [
        ("log.retention.minutes", "90", SOURCE_STATIC_BROKER),
        ("log.retention.hours", "168", SOURCE_DEFAULT),
    ]
    assert (segment.value, segment.config_source) == (str(2 * 3_600_000), SOURCE_STATIC_BROKER)
    assert synonyms(segment) == [
        ("log.roll.hours", "2", SOURCE_STATIC_BROKER),
        ("log.roll.hours", "168", SOURCE_DEFAULT),
    ]


def test_describe_topic_configs_v0_is_default(broker):
    broker.create_topic("a", configs={"retention.ms": "1000"})
    [result] = describe(broker, 0, (RESOURCE_TOPIC, "a", ["retention.ms", "retention.bytes"]))
    assert [(c.name, c.value, c.is_default) for c in result.configs] == [
        ("retention.bytes", "-1", True),
        ("retention.ms", "1000", False),
    ]


def test_describe_configs_keys_filter(broker):
    broker.create_topic("a")
    [result] = describe(
        broker, 4, (RESOURCE_TOPIC, "a", ["segment.bytes", "no.such.key", "cleanup.policy"])
    )
    assert [(c.name, c.value) for c in result.configs] == [
        ("cleanup.policy", "delete"),
        ("segment.bytes", str(1024**3)),
    ]
    [empty] = describe(broker, 4, (RESOURCE_TOPIC, "a", []))
    assert empty.configs == []


def test_describe_unknown_topic(broker):
    broker.create_topic("a")
    results = describe(broker, 4, (RESOURCE_TOPIC, "nope", None), (RESOURCE_TOPIC, "a", None))
    assert [(r.resource_name, r.error_code) for r in results] == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("a", ErrorCode.NONE),
    ]
    assert results[0].configs == []
    assert results[0].error_message == "topic 'nope' does not exist"


def test_describe_broker_configs(make_broker):
    broker = make_broker({"num.partitions": "3", "log.retention.hours": "5"})
    [result] = describe(broker, 4, (RESOURCE_BROKER, "0", None))
    assert result.error_code == ErrorCode.NONE
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["num.partitions"] == ("3", SOURCE_STATIC_BROKER)
    assert configs["log.retention.hours"] == ("5", SOURCE_STATIC_BROKER)
    assert configs["log.dirs"] == (str(broker.directory), SOURCE_STATIC_BROKER)
    assert configs["auto.create.topics.enable"] == ("true", SOURCE_DEFAULT)
    assert configs["message.max.bytes"] == ("1048588", SOURCE_DEFAULT)
    assert configs["broker.id"] == ("0", SOURCE_DEFAULT)
    # Every log key, given or not; one of several units has a value only when given,
    # or when its default is on it (the coarsest unit).
    assert configs["log.retention.ms"] == (None, SOURCE_DEFAULT)
    assert configs["log.roll.hours"] == ("168", SOURCE_DEFAULT)
    assert configs["log.segment.bytes"] == (str(1024**3), SOURCE_DEFAULT)
    assert configs["log.cleanup.policy"] == ("delete", SOURCE_DEFAULT)
    by_name = {c.name: c for c in result.configs}
    assert synonyms(by_name["num.partitions"]) == [
        ("num.partitions", "3", SOURCE_STATIC_BROKER),
        ("num.partitions", "1", SOURCE_DEFAULT),
    ]
    assert synonyms(by_name["log.retention.hours"]) == [
        ("log.retention.hours", "5", SOURCE_STATIC_BROKER),
        ("log.retention.hours", "168", SOURCE_DEFAULT),
    ]
    assert synonyms(by_name["log.retention.ms"]) == []  # as Kafka: none from ms on
    assert synonyms(by_name["log.dirs"]) == [
        ("log.dirs", str(broker.directory), SOURCE_STATIC_BROKER)
    ]


def test_describe_cluster_default_broker_configs_are_none(make_broker):
    # The resource without a name is the cluster's defaults set at run time (Kafka's
    # dynamic defaults); broker configs are static, so there are none.
    broker = make_broker({"num.partitions": "3"})
    [result] = describe(broker, 4, (RESOURCE_BROKER, "", None))
    assert (result.error_code, result.configs) == (ErrorCode.NONE, [])


def test_describe_broker_configs_filter_and_other_broker(broker):
    results = describe(
        broker,
        4,
        (RESOURCE_BROKER, "0", ["num.partitions", "listeners"]),
        (RESOURCE_BROKER, "7", None),
        (99, "x", None),
    )
    assert [(c.name, c.value) for c in results[0].configs] == [
        ("listeners", "PLAINTEXT://127.0.0.1:9092"),
        ("num.partitions", "1"),
    ]
    assert [r.error_code for r in results] == [
        ErrorCode.NONE,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
