"""CreateTopics (key 19)."""

from __future__ import annotations

from uuid import UUID

from wirekafka.protocol import schema as wire


@wire.message
class CreatableReplicaAssignment:
    partition_index: int = wire.int32("0+")
    broker_ids: list[int] = wire.array(wire.INT32, "0+")


@wire.message
class CreatableTopicConfig:
    name: str = wire.string("0+")
    value: str | None = wire.string("0+", nullable="0+")


@wire.message
class CreatableTopic:
    name: str = wire.string("0+")
    num_partitions: int = wire.int32("0+")
    replication_factor: int = wire.int16("0+")
    assignments: list[CreatableReplicaAssignment] = wire.array(CreatableReplicaAssignment, "0+")
    configs: list[CreatableTopicConfig] = wire.array(CreatableTopicConfig, "0+")


@wire.message
class CreateTopicsRequest:
    topics: list[CreatableTopic] = wire.array(CreatableTopic, "0+")
    timeout_ms: int = wire.int32("0+", default=60000)
    validate_only: bool = wire.boolean("1+")


@wire.message
class CreatableTopicConfigs:
    name: str = wire.string("5+")
    value: str | None = wire.string("5+", nullable="5+")
    read_only: bool = wire.boolean("5+")
    config_source: int = wire.int8("5+", default=-1)
    is_sensitive: bool = wire.boolean("5+")


@wire.message
class CreatableTopicResult:
    name: str = wire.string("0+")
    topic_id: UUID = wire.uuid("7+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("1+", nullable="0+")
    topic_config_error_code: int = wire.int16("5+", tag=0, tagged="5+")
    num_partitions: int = wire.int32("5+", default=-1)
    replication_factor: int = wire.int16("5+", default=-1)
    configs: list[CreatableTopicConfigs] | None = wire.array(
        CreatableTopicConfigs, "5+", nullable="5+"
    )


@wire.message
class CreateTopicsResponse:
    throttle_time_ms: int = wire.int32("2+")
    topics: list[CreatableTopicResult] = wire.array(CreatableTopicResult, "0+")
