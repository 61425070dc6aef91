"""OffsetFetch (key 9): read a group's committed positions."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class OffsetFetchRequestTopic:
    name: str = wire.string("0-7")
    partition_indexes: list[int] = wire.array(wire.INT32, "0-7")


@wire.message
class OffsetFetchRequestTopics:
    name: str = wire.string("8+")
    partition_indexes: list[int] = wire.array(wire.INT32, "8+")


@wire.message
class OffsetFetchRequestGroup:
    group_id: str = wire.string("8+")
    topics: list[OffsetFetchRequestTopics] | None = wire.array(
        OffsetFetchRequestTopics, "8+", nullable="8+"
    )


@wire.message
class OffsetFetchRequest:
    group_id: str = wire.string("0-7")
    topics: list[OffsetFetchRequestTopic] | None = wire.array(
        OffsetFetchRequestTopic, "0-7", nullable="2-7"
    )
    groups: list[OffsetFetchRequestGroup] = wire.array(OffsetFetchRequestGroup, "8+")
    require_stable: bool = wire.boolean("7+")


@wire.message
class OffsetFetchResponsePartition:
    partition_index: int = wire.int32("0-7")
    committed_offset: int = wire.int64("0-7")
    committed_leader_epoch: int = wire.int32("5-7", default=-1)
    metadata: str | None = wire.string("0-7", nullable="0-7")
    error_code: int = wire.int16("0-7")


@wire.message
class OffsetFetchResponseTopic:
    name: str = wire.string("0-7")
    partitions: list[OffsetFetchResponsePartition] = wire.array(OffsetFetchResponsePartition, "0-7")


@wire.message
class OffsetFetchResponsePartitions:
    partition_index: int = wire.int32("8+")
    committed_offset: int = wire.int64("8+")
    committed_leader_epoch: int = wire.int32("8+", default=-1)
    metadata: str | None = wire.string("8+", nullable="8+")
    error_code: int = wire.int16("8+")


@wire.message
class OffsetFetchResponseTopics:
    name: str = wire.string("8+")
    partitions: list[OffsetFetchResponsePartitions] = wire.array(
        OffsetFetchResponsePartitions, "8+"
    )


@wire.message
class OffsetFetchResponseGroup:
    group_id: str = wire.string("8+")
    topics: list[OffsetFetchResponseTopics] = wire.array(OffsetFetchResponseTopics, "8+")
    error_code: int = wire.int16("8+")


@wire.message
class OffsetFetchResponse:
    throttle_time_ms: int = wire.int32("3+")
    topics: list[OffsetFetchResponseTopic] = wire.array(OffsetFetchResponseTopic, "0-7")
    error_code: int = wire.int16("2-7")
    groups: list[OffsetFetchResponseGroup] = wire.array(OffsetFetchResponseGroup, "8+")
