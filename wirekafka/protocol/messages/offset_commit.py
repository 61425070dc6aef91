"""OffsetCommit (key 8): store a group's consumed positions."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class OffsetCommitRequestPartition:
    partition_index: int = wire.int32("0+")
    committed_offset: int = wire.int64("0+")
    committed_leader_epoch: int = wire.int32("6+", default=-1)
    commit_timestamp: int = wire.int64("1", default=-1)
    committed_metadata: str | None = wire.string("0+", nullable="0+")


@wire.message
class OffsetCommitRequestTopic:
    name: str = wire.string("0+")
    partitions: list[OffsetCommitRequestPartition] = wire.array(OffsetCommitRequestPartition, "0+")


@wire.message
class OffsetCommitRequest:
    group_id: str = wire.string("0+")
    generation_id_or_member_epoch: int = wire.int32("1+", default=-1)
    member_id: str = wire.string("1+")
    group_instance_id: str | None = wire.string("7+", nullable="7+", default=None)
    retention_time_ms: int = wire.int64("2-4", default=-1)
    topics: list[OffsetCommitRequestTopic] = wire.array(OffsetCommitRequestTopic, "0+")


@wire.message
class OffsetCommitResponsePartition:
    partition_index: int = wire.int32("0+")
    error_code: int = wire.int16("0+")


@wire.message
class OffsetCommitResponseTopic:
    name: str = wire.string("0+")
    partitions: list[OffsetCommitResponsePartition] = wire.array(
        OffsetCommitResponsePartition, "0+"
    )


@wire.message
class OffsetCommitResponse:
    throttle_time_ms: int = wire.int32("3+")
    topics: list[OffsetCommitResponseTopic] = wire.array(OffsetCommitResponseTopic, "0+")
