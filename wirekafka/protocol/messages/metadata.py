"""Metadata (key 3): brokers, topics, partitions and their leaders."""

from __future__ import annotations

from uuid import UUID

from wirekafka.protocol import schema as wire


@wire.message
class MetadataRequestTopic:
    topic_id: UUID = wire.uuid("10+")
    name: str | None = wire.string("0+", nullable="10+")


@wire.message
class MetadataRequest:
    topics: list[MetadataRequestTopic] | None = wire.array(
        MetadataRequestTopic, "0+", nullable="1+"
    )
    allow_auto_topic_creation: bool = wire.boolean("4+", default=True)
    include_cluster_authorized_operations: bool = wire.boolean("8-10")
    include_topic_authorized_operations: bool = wire.boolean("8+")


@wire.message
class MetadataResponseBroker:
    node_id: int = wire.int32("0+")
    host: str = wire.string("0+")
    port: int = wire.int32("0+")
    rack: str | None = wire.string("1+", nullable="1+", default=None)


@wire.message
class MetadataResponsePartition:
    error_code: int = wire.int16("0+")
    partition_index: int = wire.int32("0+")
    leader_id: int = wire.int32("0+")
    leader_epoch: int = wire.int32("7+", default=-1)
    replica_nodes: list[int] = wire.array(wire.INT32, "0+")
    isr_nodes: list[int] = wire.array(wire.INT32, "0+")
    offline_replicas: list[int] = wire.array(wire.INT32, "5+")


@wire.message
class MetadataResponseTopic:
    error_code: int = wire.int16("0+")
    name: str | None = wire.string("0+", nullable="12+")
    topic_id: UUID = wire.uuid("10+")
    is_internal: bool = wire.boolean("1+")
    partitions: list[MetadataResponsePartition] = wire.array(MetadataResponsePartition, "0+")
    topic_authorized_operations: int = wire.int32("8+", default=-2147483648)


@wire.message
class MetadataResponse:
    throttle_time_ms: int = wire.int32("3+")
    brokers: list[MetadataResponseBroker] = wire.array(MetadataResponseBroker, "0+")
    cluster_id: str | None = wire.string("2+", nullable="2+", default=None)
    controller_id: int = wire.int32("1+", default=-1)
    topics: list[MetadataResponseTopic] = wire.array(MetadataResponseTopic, "0+")
    cluster_authorized_operations: int = wire.int32("8-10", default=-2147483648)
