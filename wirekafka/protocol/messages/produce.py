"""Produce (key 0): append record batches to partitions."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class PartitionProduceData:
    index: int = wire.int32("0+")
    records: wire.Records | None = wire.records("0+", nullable="0+")


@wire.message
class TopicProduceData:
    name: str = wire.string("0+")
    partition_data: list[PartitionProduceData] = wire.array(PartitionProduceData, "0+")


@wire.message
class ProduceRequest:
    transactional_id: str | None = wire.string("3+", nullable="3+", default=None)
    acks: int = wire.int16("0+")
    timeout_ms: int = wire.int32("0+")
    topic_data: list[TopicProduceData] = wire.array(TopicProduceData, "0+")


@wire.message
class BatchIndexAndErrorMessage:
    batch_index: int = wire.int32("8+")
    batch_index_error_message: str | None = wire.string("8+", nullable="8+", default=None)


@wire.message
class PartitionProduceResponse:
    index: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    base_offset: int = wire.int64("0+")
    log_append_time_ms: int = wire.int64("2+", default=-1)
    log_start_offset: int = wire.int64("5+", default=-1)
    record_errors: list[BatchIndexAndErrorMessage] = wire.array(BatchIndexAndErrorMessage, "8+")
    error_message: str | None = wire.string("8+", nullable="8+", default=None)


@wire.message
class TopicProduceResponse:
    name: str = wire.string("0+")
    partition_responses: list[PartitionProduceResponse] = wire.array(PartitionProduceResponse, "0+")


@wire.message
class ProduceResponse:
    responses: list[TopicProduceResponse] = wire.array(TopicProduceResponse, "0+")
    throttle_time_ms: int = wire.int32("1+")
