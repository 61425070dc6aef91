"""ListOffsets (key 2): find offsets by timestamp, earliest or latest."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class ListOffsetsPartition:
    partition_index: int = wire.int32("0+")
    current_leader_epoch: int = wire.int32("4+", default=-1)
    timestamp: int = wire.int64("0+")
    max_num_offsets: int = wire.int32("0", default=1)


@wire.message
class ListOffsetsTopic:
    name: str = wire.string("0+")
    partitions: list[ListOffsetsPartition] = wire.array(ListOffsetsPartition, "0+")


@wire.message
class ListOffsetsRequest:
    replica_id: int = wire.int32("0+")
    isolation_level: int = wire.int8("2+")
    topics: list[ListOffsetsTopic] = wire.array(ListOffsetsTopic, "0+")


@wire.message
class ListOffsetsPartitionResponse:
    partition_index: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    old_style_offsets: list[int] = wire.array(wire.INT64, "0")
    timestamp: int = wire.int64("1+", default=-1)
    offset: int = wire.int64("1+", default=-1)
    leader_epoch: int = wire.int32("4+", default=-1)


@wire.message
class ListOffsetsTopicResponse:
    name: str = wire.string("0+")
    partitions: list[ListOffsetsPartitionResponse] = wire.array(ListOffsetsPartitionResponse, "0+")


@wire.message
class ListOffsetsResponse:
    throttle_time_ms: int = wire.int32("2+")
    topics: list[ListOffsetsTopicResponse] = wire.array(ListOffsetsTopicResponse, "0+")
