"""OffsetForLeaderEpoch: one broker, one leader epoch (0) for every partition.

Metadata reports leader epoch -1, so clients rarely ask; when they do, every
epoch ends at the log end offset.
"""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopicResult,
)
from wirekafka.protocol.rpc import Request

LEADER_EPOCH = 0


async def _end_offset(
    ctx: BrokerContext, topic: str, asked: OffsetForLeaderPartition
) -> EpochEndOffset:
    found = await ctx.topics.partition_log(topic, asked.partition)
    if isinstance(found, ErrorCode):
        return EpochEndOffset(error_code=found, partition=asked.partition)
    if asked.leader_epoch < 0:
        return EpochEndOffset(error_code=ErrorCode.NONE, partition=asked.partition)
    return EpochEndOffset(
        error_code=ErrorCode.NONE,
        partition=asked.partition,
        leader_epoch=LEADER_EPOCH,
        end_offset=found.log_end_offset,
    )


async def handle_offset_for_leader_epoch(
    ctx: BrokerContext, request: Request
) -> OffsetForLeaderEpochResponse:
    body: OffsetForLeaderEpochRequest = request.body
    return OffsetForLeaderEpochResponse(
        throttle_time_ms=0,
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[await _end_offset(ctx, t.topic, p) for p in t.partitions],
            )
            for t in body.topics
        ],
    )
