"""ListOffsets: earliest, latest (the high watermark), max timestamp, or the first
offset at a time. On a replicated partition (a ZooKeeper cluster) the answer
gives the leader epoch the offset was written in (the leader's current epoch
for latest), and a request's ``current_leader_epoch`` is checked against the
leader's, as Fetch checks it (KIP-320). A topic the principal may not Describe
answers TOPIC_AUTHORIZATION_FAILED, whether it exists or not."""

from __future__ import annotations

import os

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, PartitionLog, StorageError

UNKNOWN_OFFSET = -1
UNKNOWN_EPOCH = -1


def _old_style_offsets(
    partition_log: PartitionLog, asked: ListOffsetsPartition, now_ms: int
) -> list[int]:
    """ListOffsets v0, as Kafka 0.8-0.10 answered it: each segment's base offset
    stands with the time its file was last modified, and the log end with now
    (when the active segment holds data). Latest starts from the newest entry,
    earliest is the first; a time starts from the newest entry at or before it.
    Up to ``max_num_offsets`` offsets go back, newest first."""
    start = partition_log.log_start_offset
    segments = partition_log.segments
    entries = [
        (max(segment.base_offset, start), int(os.stat(segment.log_path).st_mtime * 1000))
        for segment in segments
    ]
    if segments[-1].size:
        entries.append((partition_log.log_end_offset, now_ms))
    if asked.timestamp == LATEST_TIMESTAMP:
        first = len(entries) - 1
    elif asked.timestamp == EARLIEST_TIMESTAMP:
        first = 0
    else:
        first = len(entries) - 1
        while first >= 0 and entries[first][1] > asked.timestamp:
            first -= 1
    count = max(0, min(asked.max_num_offsets, first + 1))
    return sorted((entries[first - i][0] for i in range(count)), reverse=True)


async def _answer(
    ctx: BrokerContext, topic: str, asked: ListOffsetsPartition, version: int
) -> ListOffsetsPartitionResponse:
    result = ListOffsetsPartitionResponse(
        partition_index=asked.partition_index, error_code=ErrorCode.NONE
    )
    found = await ctx.topics.partition_log(topic, asked.partition_index)
    if isinstance(found, ErrorCode):
        result.error_code = found
        return result
    leader_epoch = UNKNOWN_EPOCH
    replicas = ctx.replicas
    if replicas is not None:
        led = await replicas.leading_at(topic, asked.partition_index, asked.current_leader_epoch)
        if isinstance(led, ErrorCode):
            result.error_code = led
            return result
        leader_epoch = led.leader_epoch
    try:
        if version == 0:
            result.old_style_offsets = _old_style_offsets(found, asked, ctx.clock())
            return result
        located = found.offset_for_timestamp(asked.timestamp)
    except StorageError:
        result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    if located is None or located.offset > found.high_watermark:
        # consumers see nothing past the high watermark (on a replicated partition)
        result.timestamp, result.offset = -1, UNKNOWN_OFFSET
    else:
        result.timestamp, result.offset = located.timestamp, located.offset
    if asked.timestamp == LATEST_TIMESTAMP:
        result.offset = found.high_watermark
    elif result.offset == UNKNOWN_OFFSET:
        leader_epoch = UNKNOWN_EPOCH
    elif leader_epoch != UNKNOWN_EPOCH:
        leader_epoch = found.leader_epochs.epoch_for_offset(result.offset)
    result.leader_epoch = leader_epoch
    return result


async def handle_list_offsets(ctx: BrokerContext, request: Request) -> ListOffsetsResponse:
    body: ListOffsetsRequest = request.body
    names = (topic.name for topic in body.topics)
    denied = denied_names(ctx, request, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    return ListOffsetsResponse(
        throttle_time_ms=0,
        topics=[
            ListOffsetsTopicResponse(
                name=topic.name,
                partitions=[
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    )
                    if denied and topic.name in denied
                    else await _answer(ctx, topic.name, p, request.version)
                    for p in topic.partitions
                ],
            )
            for topic in body.topics
        ],
    )
