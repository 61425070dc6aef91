"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class OffsetForLeaderPartition:
    partition: int = wire.int32("0+")
    current_leader_epoch: int = wire.int32("2+", default=-1)
    leader_epoch: int = wire.int32("0+")


@wire.message
class OffsetForLeaderTopic:
    topic: str = wire.string("0+")
    partitions: list[OffsetForLeaderPartition] = wire.array(OffsetForLeaderPartition, "0+")


@wire.message
class OffsetForLeaderEpochRequest:
    replica_id: int = wire.int32("3+", default=-2)
    topics: list[OffsetForLeaderTopic] = wire.array(OffsetForLeaderTopic, "0+")


@wire.message
class EpochEndOffset:
    error_code: int = wire.int16("0+")
    partition: int = wire.int32("0+")
    leader_epoch: int = wire.int32("1+", default=-1)
    end_offset: int = wire.int64("0+", default=-1)


@wire.message
class OffsetForLeaderTopicResult:
    topic: str = wire.string("0+")
    partitions: list[EpochEndOffset] = wire.array(EpochEndOffset, "0+")


@wire.message
class OffsetForLeaderEpochResponse:
    throttle_time_ms: int = wire.int32("2+")
    topics: list[OffsetForLeaderTopicResult] = wire.array(OffsetForLeaderTopicResult, "0+")
