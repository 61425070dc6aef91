"""Fetch (key 1): read record batches from partitions."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class FetchPartition:
    partition: int = wire.int32("0+")
    current_leader_epoch: int = wire.int32("9+", default=-1)
    fetch_offset: int = wire.int64("0+")
    last_fetched_epoch: int = wire.int32("12+", default=-1)
    log_start_offset: int = wire.int64("5+", default=-1)
    partition_max_bytes: int = wire.int32("0+")


@wire.message
class FetchTopic:
    topic: str = wire.string("0+")
    partitions: list[FetchPartition] = wire.array(FetchPartition, "0+")


@wire.message
class ForgottenTopic:
    topic: str = wire.string("7+")
    partitions: list[int] = wire.array(wire.INT32, "7+")


@wire.message
class FetchRequest:
    cluster_id: str | None = wire.string("12+", nullable="12+", tag=0, tagged="12+", default=None)
    replica_id: int = wire.int32("0+", default=-1)
    max_wait_ms: int = wire.int32("0+")
    min_bytes: int = wire.int32("0+")
    max_bytes: int = wire.int32("3+", default=2147483647)
    isolation_level: int = wire.int8("4+")
    session_id: int = wire.int32("7+")
    session_epoch: int = wire.int32("7+", default=-1)
    topics: list[FetchTopic] = wire.array(FetchTopic, "0+")
    forgotten_topics_data: list[ForgottenTopic] = wire.array(ForgottenTopic, "7+")
    rack_id: str = wire.string("11+")


@wire.message
class EpochEndOffset:
    epoch: int = wire.int32("12+", default=-1)
    end_offset: int = wire.int64("12+", default=-1)


@wire.message
class LeaderIdAndEpoch:
    leader_id: int = wire.int32("12+", default=-1)
    leader_epoch: int = wire.int32("12+", default=-1)


@wire.message
class SnapshotId:
    end_offset: int = wire.int64("0+", default=-1)
    epoch: int = wire.int32("0+", default=-1)


@wire.message
class AbortedTransaction:
    producer_id: int = wire.int64("4+")
    first_offset: int = wire.int64("4+")


@wire.message
class PartitionData:
    partition_index: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    high_watermark: int = wire.int64("0+")
    last_stable_offset: int = wire.int64("4+", default=-1)
    log_start_offset: int = wire.int64("5+", default=-1)
    diverging_epoch: EpochEndOffset = wire.struct(EpochEndOffset, "12+", tag=0, tagged="12+")
    current_leader: LeaderIdAndEpoch = wire.struct(LeaderIdAndEpoch, "12+", tag=1, tagged="12+")
    snapshot_id: SnapshotId = wire.struct(SnapshotId, "12+", tag=2, tagged="12+")
    aborted_transactions: list[AbortedTransaction] | None = wire.array(
        AbortedTransaction, "4+", nullable="4+"
    )
    preferred_read_replica: int = wire.int32("11+", default=-1)
    records: wire.Records | None = wire.records("0+", nullable="0+")


@wire.message
class FetchableTopicResponse:
    topic: str = wire.string("0+")
    partitions: list[PartitionData] = wire.array(PartitionData, "0+")


@wire.message
class FetchResponse:
    throttle_time_ms: int = wire.int32("1+")
    error_code: int = wire.int16("7+")
    session_id: int = wire.int32("7+")
    responses: list[FetchableTopicResponse] = wire.array(FetchableTopicResponse, "0+")
