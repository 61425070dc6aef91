"""ListOffsets: earliest, latest, max timestamp, or the first offset at a time."""

from __future__ import annotations

from wirekafka.handlers.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, PartitionLog, StorageError

UNKNOWN_OFFSET = -1


def _old_style_offsets(partition_log: PartitionLog, asked: ListOffsetsPartition) -> list[int]:
    """ListOffsets v0: up to ``max_num_offsets`` offsets, newest first: the log
    end (for latest) and the base offsets of segments older than the time."""
    if asked.timestamp == EARLIEST_TIMESTAMP:
        offsets = [partition_log.log_start_offset]
    else:
        segments = partition_log.segments
        offsets = [partition_log.log_end_offset] if asked.timestamp == LATEST_TIMESTAMP else []
        for segment in reversed(segments):
            if asked.timestamp == LATEST_TIMESTAMP or 0 <= segment.max_timestamp < asked.timestamp:
                offsets.append(max(segment.base_offset, partition_log.log_start_offset))
        offsets = list(dict.fromkeys(offsets))
    return offsets[: max(asked.max_num_offsets, 0)]


def _answer(
    ctx: BrokerContext, topic: str, asked: ListOffsetsPartition, version: int
) -> ListOffsetsPartitionResponse:
    result = ListOffsetsPartitionResponse(
        partition_index=asked.partition_index, error_code=ErrorCode.NONE
    )
    found = ctx.topics.partition_log(topic, asked.partition_index)
    if isinstance(found, ErrorCode):
        result.error_code = found
        return result
    try:
        if version == 0:
            result.old_style_offsets = _old_style_offsets(found, asked)
            return result
        located = found.offset_for_timestamp(asked.timestamp)
    except StorageError:
        result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    if located is None:
        result.timestamp, result.offset = -1, UNKNOWN_OFFSET
    else:
        result.timestamp, result.offset = located.timestamp, located.offset
    return result


async def handle_list_offsets(ctx: BrokerContext, request: Request) -> ListOffsetsResponse:
    body: ListOffsetsRequest = request.body
    return ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            ListOffsetsTopicResponse(
                name=topic.name,
                partitions=[_answer(ctx, topic.name, p, request.version) for p in topic.partitions],
            )
            for topic in body.topics
        ],
    )
