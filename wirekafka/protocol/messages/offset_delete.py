"""OffsetDelete (key 47): remove a group's committed offsets of some partitions (KIP-496)."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class OffsetDeleteRequestPartition:
    partition_index: int = wire.int32("0+")


@wire.message
class OffsetDeleteRequestTopic:
    name: str = wire.string("0+")
    partitions: list[OffsetDeleteRequestPartition] = wire.array(OffsetDeleteRequestPartition, "0+")


@wire.message
class OffsetDeleteRequest:
    group_id: str = wire.string("0+")
    topics: list[OffsetDeleteRequestTopic] = wire.array(OffsetDeleteRequestTopic, "0+")


@wire.message
class OffsetDeleteResponsePartition:
    partition_index: int = wire.int32("0+")
    error_code: int = wire.int16("0+")


@wire.message
class OffsetDeleteResponseTopic:
    name: str = wire.string("0+")
    partitions: list[OffsetDeleteResponsePartition] = wire.array(
        OffsetDeleteResponsePartition, "0+"
    )


@wire.message
class OffsetDeleteResponse:
    error_code: int = wire.int16("0+")
    throttle_time_ms: int = wire.int32("0+")
    topics: list[OffsetDeleteResponseTopic] = wire.array(OffsetDeleteResponseTopic, "0+")
