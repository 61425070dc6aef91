"""DeleteRecords (key 21): move partitions' log start offsets forward."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class DeleteRecordsPartition:
    partition_index: int = wire.int32("0+")
    offset: int = wire.int64("0+")


@wire.message
class DeleteRecordsTopic:
    name: str = wire.string("0+")
    partitions: list[DeleteRecordsPartition] = wire.array(DeleteRecordsPartition, "0+")


@wire.message
class DeleteRecordsRequest:
    topics: list[DeleteRecordsTopic] = wire.array(DeleteRecordsTopic, "0+")
    timeout_ms: int = wire.int32("0+")


@wire.message
class DeleteRecordsPartitionResult:
    partition_index: int = wire.int32("0+")
    low_watermark: int = wire.int64("0+")
    error_code: int = wire.int16("0+")


@wire.message
class DeleteRecordsTopicResult:
    name: str = wire.string("0+")
    partitions: list[DeleteRecordsPartitionResult] = wire.array(DeleteRecordsPartitionResult, "0+")


@wire.message
class DeleteRecordsResponse:
    throttle_time_ms: int = wire.int32("0+")
    topics: list[DeleteRecordsTopicResult] = wire.array(DeleteRecordsTopicResult, "0+")
