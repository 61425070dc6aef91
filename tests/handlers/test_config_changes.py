"""IncrementalAlterConfigs and AlterConfigs: topic configs changed, recorded,
taken by the open logs at once and kept across a restart; Kafka's errors."""

from __future__ import annotations

import json

import pytest

from tests.handlers.support import TestBroker, make_batch
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages import alter_configs as legacy
from wirekafka.protocol.messages import incremental_alter_configs as inc
from wirekafka.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from wirekafka.protocol.messages.incremental_alter_configs import ConfigOperation
from wirekafka.storage.cluster_metadata import CLUSTER_METADATA_FILE

TOPIC, BROKER, LOGGER = 2, 4, 8
SOURCE_TOPIC_CONFIG, SOURCE_STATIC_BROKER_CONFIG, SOURCE_DEFAULT_CONFIG = 1, 4, 5
SET, DELETE, APPEND, SUBTRACT = (
    ConfigOperation.SET,
    ConfigOperation.DELETE,
    ConfigOperation.APPEND,
    ConfigOperation.SUBTRACT,
)


def alter(
    broker: TestBroker,
    *resources: tuple[int, str, list[tuple[str, int, str | None]]],
    version: int = 1,
    validate_only: bool = False,
) -> list[tuple[int, str | None]]:
    request = inc.IncrementalAlterConfigsRequest(
        resources=[
            inc.AlterConfigsResource(
                resource_type=kind,
                resource_name=name,
                configs=[
                    inc.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops
                ],
            )
            for kind, name, ops in resources
        ],
        validate_only=validate_only,
    )
    response = broker.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, request)
    assert [(r.resource_type, r.resource_name) for r in response.responses] == [
        (kind, name) for kind, name, _ in resources
    ]
    return [(r.error_code, r.error_message) for r in response.responses]


def codes(answers: list[tuple[int, str | None]]) -> list[int]:
    return [code for code, _ in answers]


def described(broker: TestBroker, topic: str) -> dict[str, tuple[str | None, int]]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=TOPIC, resource_name=topic, configuration_keys=None
            )
        ]
    )
    [result] = broker.call(ApiKey.DESCRIBE_CONFIGS, 4, request).results
    assert result.error_code == ErrorCode.NONE
    return {c.name: (c.value, c.config_source) for c in result.configs}


def overrides(broker: TestBroker, topic: str) -> dict[str, str]:
    found = broker.ctx.topics.topic(topic)
    assert found is not None
    return found.configs


@pytest.mark.parametrize("version", [0, 1])
def test_set_and_delete_are_recorded_and_described(broker, version):
    broker.create_topic("t", 2, {"retention.ms": "1000", "segment.bytes": "100000"})
    answer = alter(
        broker,
        (TOPIC, "t", [("retention.ms", SET, "5000"), ("segment.bytes", DELETE, None),
                      ("max.message.bytes", SET, "2048")]),
        version=version,
    )  # fmt: skip
    assert answer == [(ErrorCode.NONE, None)]
    assert overrides(broker, "t") == {"retention.ms": "5000", "max.message.bytes": "2048"}
    configs = described(broker, "t")
    assert configs["retention.ms"] == ("5000", 1)
    assert configs["segment.bytes"] == ("1073741824", 5)
    assert configs["max.message.bytes"] == ("2048", 1)
    document = json.loads((broker.directory / CLUSTER_METADATA_FILE).read_text())
    assert document["topics"]["t"]["configs"] == {
        "retention.ms": "5000",
        "max.message.bytes": "2048",
    }
    broker.restart()
    assert overrides(broker, "t") == {"retention.ms": "5000", "max.message.bytes": "2048"}
    assert broker.log("t", 1).config.retention_ms == 5000


def test_open_logs_take_the_new_configs_at_once(broker):
    broker.create_topic("t")
    batch = make_batch([b"x" * 500])
    assert broker.produce("t", batch).error_code == ErrorCode.NONE
    assert alter(broker, (TOPIC, "t", [("max.message.bytes", SET, "100")])) == [
        (ErrorCode.NONE, None)
    ]
    assert broker.produce("t", batch).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert alter(broker, (TOPIC, "t", [("cleanup.policy", SET, "compact")]))[0][0] == 0
    log = broker.log("t")
    assert log.config.compact and log.config.max_message_bytes == 100
    assert alter(broker, (TOPIC, "t", [("max.message.bytes", DELETE, None)]))[0][0] == 0
    # a compacted topic now: records need keys
    assert broker.produce("t", batch).error_code == ErrorCode.INVALID_RECORD
    keyed = make_batch([b"x" * 500], keys=[b"k"])
    assert broker.produce("t", keyed).error_code == ErrorCode.NONE
    assert alter(broker, (TOPIC, "t", [("segment.bytes", SET, "600")]))[0][0] == 0
    assert broker.produce("t", keyed).error_code == ErrorCode.NONE
    assert len(broker.log("t").segments) == 2  # the active segment rolled at the new size


def test_append_and_subtract_on_a_list_key(broker):
    broker.create_topic("t")
    assert codes(alter(broker, (TOPIC, "t", [("cleanup.policy", APPEND, "compact")]))) == [0]
    assert overrides(broker, "t") == {"cleanup.policy": "delete,compact"}
    assert codes(alter(broker, (TOPIC, "t", [("cleanup.policy", APPEND, "compact")]))) == [0]
    assert overrides(broker, "t") == {"cleanup.policy": "delete,compact"}
    assert codes(alter(broker, (TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")]))) == [0]
    assert overrides(broker, "t") == {"cleanup.policy": "compact"}
    assert broker.log("t").config.cleanup_policy == frozenset({"compact"})


@pytest.mark.parametrize(
    ("ops", "code", "message"),
    [
        ([("retention.ms", SET, "soon")], ErrorCode.INVALID_CONFIG, "retention.ms"),
        ([("no.such.key", SET, "1")], ErrorCode.INVALID_CONFIG, "no.such.key"),
        ([("cleanup.policy", SET, "forever")], ErrorCode.INVALID_CONFIG, "cleanup.policy"),
        ([("retention.ms", APPEND, "1")], ErrorCode.INVALID_CONFIG,
         "Config value append is not allowed for config key: retention.ms"),
        ([("retention.ms", SUBTRACT, "1")], ErrorCode.INVALID_CONFIG,
         "Config value subtract is not allowed for config key: retention.ms"),
        ([("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST,
         "Null value not supported for : retention.ms"),
        ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], ErrorCode.INVALID_REQUEST,
         "Error due to duplicate config keys"),
        ([("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST, "Unknown config operation 9"),
    ],
)  # fmt: skip
def test_refused_changes_change_nothing(broker, ops, code, message):
    broker.create_topic("t", configs={"retention.ms": "1000"})
    [(error, text)] = alter(broker, (TOPIC, "t", ops))
    assert error == code
    assert text is not None and message in text
    assert overrides(broker, "t") == {"retention.ms": "1000"}
    assert broker.log("t").config.retention_ms == 1000


def test_unknown_and_default_topics_and_other_resources(broker):
    assert alter(
        broker,
        (TOPIC, "missing", [("retention.ms", SET, "1")]),
        (TOPIC, "", [("retention.ms", SET, "1")]),
        (LOGGER, "0", [("kafka", SET, "DEBUG")]),
    ) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist."),
        (ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        (ErrorCode.INVALID_REQUEST,
         "AlterConfigs is only supported for topics and brokers, but resource type is 8"),
    ]  # fmt: skip


def test_broker_configs_are_static(broker):
    answers = alter(
        broker,
        (BROKER, "0", [("log.retention.ms", SET, "1")]),
        (BROKER, "", [("log.cleaner.threads", SET, "2")]),
        (BROKER, "7", []),
        (BROKER, "zero", []),
    )
    assert codes(answers) == [ErrorCode.INVALID_REQUEST] * 4
    assert answers[2][1] == "Unexpected broker id, expected 0, but received 7"
    assert answers[3][1] == "Broker id must be an integer, but it is: zero"
    assert alter(broker, (BROKER, "0", [])) == [(ErrorCode.NONE, None)]


def test_a_resource_named_twice_is_refused_both_times(broker):
    broker.create_topic("t")
    broker.create_topic("u")
    assert codes(
        alter(
            broker,
            (TOPIC, "t", [("retention.ms", SET, "1")]),
            (TOPIC, "u", [("retention.ms", SET, "2")]),
            (TOPIC, "t", [("retention.ms", SET, "3")]),
        )
    ) == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE, ErrorCode.INVALID_REQUEST]
    assert overrides(broker, "t") == {}
    assert overrides(broker, "u") == {"retention.ms": "2"}


def test_validate_only_changes_nothing(broker):
    broker.create_topic("t")
    ops = [("retention.ms", SET, "5")]
    assert codes(alter(broker, (TOPIC, "t", ops), validate_only=True)) == [ErrorCode.NONE]
    assert overrides(broker, "t") == {}
    bad = [("retention.ms", SET, "x")]
    assert codes(alter(broker, (TOPIC, "t", bad), validate_only=True)) == [ErrorCode.INVALID_CONFIG]


def test_internal_topics_stay_compacted(broker):
    assert broker.ctx.topics.create_internal_topic("__consumer_offsets", 1) is None
    ops = [("cleanup.policy", SET, "delete")]
    assert codes(alter(broker, (TOPIC, "__consumer_offsets", ops))) == [ErrorCode.POLICY_VIOLATION]
    ops = [("retention.ms", SET, "100000")]
    assert codes(alter(broker, (TOPIC, "__consumer_offsets", ops))) == [ErrorCode.NONE]
    assert overrides(broker, "__consumer_offsets")["cleanup.policy"] == "compact"


# AlterConfigs


def legacy_alter(
    broker: TestBroker, version: int, kind: int, name: str, configs: dict[str, str | None]
) -> tuple[int, str | None]:
    request = legacy.AlterConfigsRequest(
        resources=[
            legacy.AlterConfigsResource(
                resource_type=kind,
                resource_name=name,
                configs=[legacy.AlterableConfig(name=k, value=v) for k, v in configs.items()],
            )
        ],
        validate_only=False,
    )
    [answer] = broker.call(ApiKey.ALTER_CONFIGS, version, request).responses
    return answer.error_code, answer.error_message


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_every_override(broker, version):
    broker.create_topic("t", configs={"retention.ms": "1000", "segment.bytes": "100000"})
    assert legacy_alter(broker, version, TOPIC, "t", {"cleanup.policy": "compact"}) == (0, None)
    assert overrides(broker, "t") == {"cleanup.policy": "compact"}
    assert broker.log("t").config.retention_ms == 7 * 24 * 3_600_000
    assert legacy_alter(broker, version, TOPIC, "t", {"retention.ms": None})[0] == (
        ErrorCode.INVALID_CONFIG
    )
    assert legacy_alter(broker, version, TOPIC, "t", {"x.y": "1"})[0] == ErrorCode.INVALID_CONFIG
    assert legacy_alter(broker, version, TOPIC, "gone", {})[0] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert legacy_alter(broker, version, BROKER, "0", {"log.retention.ms": "5"})[0] == (
        ErrorCode.INVALID_REQUEST
    )
    assert overrides(broker, "t") == {"cleanup.policy": "compact"}


def test_replication_configs_are_described_for_topics_and_the_broker(make_broker):
    broker = make_broker({"min.insync.replicas": "2"})
    broker.create_topic("t")
    assert alter(broker, (TOPIC, "t", [("unclean.leader.election.enable", SET, "true")])) == [
        (ErrorCode.NONE, None)
    ]
    found = described(broker, "t")
    assert found["min.insync.replicas"] == ("2", SOURCE_STATIC_BROKER_CONFIG)
    assert found["unclean.leader.election.enable"] == ("true", SOURCE_TOPIC_CONFIG)
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=BROKER, resource_name="0", configuration_keys=None
            )
        ]
    )
    [result] = broker.call(ApiKey.DESCRIBE_CONFIGS, 4, request).results
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    default = SOURCE_DEFAULT_CONFIG
    assert {key: configs[key] for key in REPLICATION_KEYS} == {
        "min.insync.replicas": ("2", SOURCE_STATIC_BROKER_CONFIG),
        "unclean.leader.election.enable": ("false", default),
        "offsets.topic.replication.factor": ("3", default),
        "replica.lag.time.max.ms": ("30000", default),
        "auto.leader.rebalance.enable": ("true", default),
        "replica.fetch.max.bytes": ("1048576", default),
        "replica.fetch.wait.max.ms": ("500", default),
        "replica.fetch.min.bytes": ("1", default),
        "controlled.shutdown.enable": ("true", default),
        "controlled.shutdown.max.retries": ("3", default),
        "controlled.shutdown.retry.backoff.ms": ("5000", default),
    }


REPLICATION_KEYS = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "offsets.topic.replication.factor",
    "replica.lag.time.max.ms",
    "auto.leader.rebalance.enable",
    "replica.fetch.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.fetch.min.bytes",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
)
