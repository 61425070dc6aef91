"""OffsetForLeaderEpoch (KIP-101, KIP-279): where a leader epoch ends in the leader's log.

Followers ask it before they fetch at a new leader epoch, to truncate what the
leader does not have; clients ask it after a leader change (KIP-320) to find
out whether their position is still in the log. The answer comes from the
partition's leader epoch cache (``leader-epoch-checkpoint``): the largest
epoch at or below the one asked for, and the offset where the next one
starts, or the log end for the latest epoch. A log with no epochs (written in
the embedded mode, where the leader epoch is always 0) answers epoch 0 at the
log end. ``current_leader_epoch``, when given, must be the leader's.

Only the leader answers, as in Kafka: a replica that still follows (the cluster
cache has just named it leader, its replica manager has not taken over yet)
would answer from a log that is still catching up, and a client would read
its log end as the end of the epoch and think its position truncated.

As Kafka: replicas pass with ClusterAction on the cluster, consumers need Describe
on each topic (TOPIC_AUTHORIZATION_FAILED otherwise, whether it exists or not).

A client's question and the answer are logged (INFO): clients ask only after a
leader epoch changes, and a consumer that takes an answer for a truncation
stops or rewinds, so what it was told is worth having in the log. At most 100
lines in 10 s: a client asking in a loop does not fill the log.
"""

from __future__ import annotations

import logging
import time

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import NOTHING_DENIED, cluster_authorized, denied_names
from wirekafka.log_limiter import LogLimiter, since_last
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopicResult,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType

EMBEDDED_LEADER_EPOCH = 0

log = logging.getLogger("wirekafka.handlers")
MAX_LOGGED_ANSWERS = 100  # in LOGGED_ANSWERS_WINDOW_S
LOGGED_ANSWERS_WINDOW_S = 10.0
# time.monotonic, not trio's clock: one limiter for the process, across trio runs
answers_logged = LogLimiter(LOGGED_ANSWERS_WINDOW_S, lines=MAX_LOGGED_ANSWERS, clock=time.monotonic)


async def _end_offset(
    ctx: BrokerContext, topic: str, asked: OffsetForLeaderPartition
) -> EpochEndOffset:
    found = await ctx.topics.partition_log(topic, asked.partition)
    if isinstance(found, ErrorCode):
        return EpochEndOffset(error_code=found, partition=asked.partition)
    if ctx.replicas is not None:
        led = await ctx.replicas.leading_at(topic, asked.partition, asked.current_leader_epoch)
        if isinstance(led, ErrorCode):  # not the leader (yet), or another epoch's
            return EpochEndOffset(error_code=led, partition=asked.partition)
    if asked.leader_epoch < 0:
        return EpochEndOffset(error_code=ErrorCode.NONE, partition=asked.partition)
    epochs = found.leader_epochs
    if epochs.latest_epoch < 0:
        epoch, end_offset = EMBEDDED_LEADER_EPOCH, found.log_end_offset
    else:
        epoch, end_offset = epochs.end_offset_for(asked.leader_epoch, found.log_end_offset)
    return EpochEndOffset(
        error_code=ErrorCode.NONE,
        partition=asked.partition,
        leader_epoch=epoch,
        end_offset=end_offset,
    )


async def handle_offset_for_leader_epoch(
    ctx: BrokerContext, request: Request
) -> OffsetForLeaderEpochResponse:
    body: OffsetForLeaderEpochRequest = request.body
    from_client = body.replica_id < 0  # -1 from a consumer, -2 before v3
    denied = NOTHING_DENIED
    if ctx.authorizer is not None and not cluster_authorized(
        ctx, request, AclOperation.CLUSTER_ACTION
    ):
        names = (t.topic for t in body.topics)
        denied = denied_names(ctx, request, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    response = OffsetForLeaderEpochResponse(
        throttle_time_ms=0,
        topics=[
            OffsetForLeaderTopicResult(
                topic=t.topic,
                partitions=[
                    EpochEndOffset(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition
                    )
                    if denied and t.topic in denied
                    else await _end_offset(ctx, t.topic, p)
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
    )
    if from_client:
        _log_answers(request, body, response)
    return response


def _log_answers(
    request: Request, body: OffsetForLeaderEpochRequest, response: OffsetForLeaderEpochResponse
) -> None:
    for asked_topic, answered_topic in zip(body.topics, response.topics, strict=True):
        for asked, answer in zip(asked_topic.partitions, answered_topic.partitions, strict=True):
            left_out = answers_logged.allow()
            if left_out is None:
                continue  # counted, and told with the next line let through
            log.info(
                "%s-%d: OffsetForLeaderEpoch from client %s at %s for epoch %d (its current "
                "leader epoch %d): %s%s",
                asked_topic.topic, asked.partition, request.header.client_id,
                request.client_host, asked.leader_epoch, asked.current_leader_epoch,
                f"epoch {answer.leader_epoch} ends at offset {answer.end_offset}"
                if answer.error_code == ErrorCode.NONE
                else ErrorCode(answer.error_code).name,
                since_last(left_out),
            )  # fmt: skip
