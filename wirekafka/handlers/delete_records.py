"""DeleteRecords: move partitions' log start offsets forward (not of internal topics,
which are the broker's: INVALID_TOPIC_EXCEPTION, as Kafka's ReplicaManager answers).
A topic the principal may not Delete answers TOPIC_AUTHORIZATION_FAILED, whether it
exists or not."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.topics import INTERNAL_TOPICS
from wirekafka.handlers.authorization import denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.log import StorageError

HIGH_WATERMARK = -1  # "delete everything"


async def _delete(
    ctx: BrokerContext, topic: str, asked: DeleteRecordsPartition
) -> DeleteRecordsPartitionResult:
    result = DeleteRecordsPartitionResult(
        partition_index=asked.partition_index, low_watermark=-1, error_code=ErrorCode.NONE
    )
    found = await ctx.topics.partition_log(topic, asked.partition_index)
    if isinstance(found, ErrorCode):
        result.error_code = found
        return result
    if topic in INTERNAL_TOPICS:
        result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
        return result
    offset = found.log_end_offset if asked.offset == HIGH_WATERMARK else asked.offset
    if not 0 <= offset <= found.log_end_offset:
        result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        return result
    try:
        result.low_watermark = found.delete_records(offset)
    except (StorageError, ValueError):
        result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
    return result


async def handle_delete_records(ctx: BrokerContext, request: Request) -> DeleteRecordsResponse:
    body: DeleteRecordsRequest = request.body
    names = (t.name for t in body.topics)
    denied = denied_names(ctx, request, AclOperation.DELETE, ResourceType.TOPIC, names)
    return DeleteRecordsResponse(
        throttle_time_ms=0,
        topics=[
            DeleteRecordsTopicResult(
                name=t.name,
                partitions=[
                    DeleteRecordsPartitionResult(
                        partition_index=p.partition_index,
                        low_watermark=-1,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                    if denied and t.name in denied
                    else await _delete(ctx, t.name, p)
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
    )
