"""OffsetFetch: a group's committed offsets; v2+ may ask for all of them; v8 for several groups.

As Kafka: a group the principal may not Describe answers GROUP_AUTHORIZATION_FAILED
with no offsets; a topic it may not Describe is left out of all the group's offsets,
and a topic named answers TOPIC_AUTHORIZATION_FAILED with offset -1 per partition.
"""

from __future__ import annotations

from typing import Any

from wirekafka.broker.context import BrokerContext
from wirekafka.groups.offset_store import CommittedOffset
from wirekafka.handlers.authorization import NOTHING_DENIED, authorized, denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.worker_threads import METADATA, run_blocking

NO_OFFSET = -1
FIRST_GROUPS_VERSION = 8


def _lookup(
    ctx: BrokerContext, group_id: str, asked: list[tuple[str, list[int]]] | None
) -> list[tuple[str, list[tuple[int, CommittedOffset | None]]]]:
    committed = ctx.groups.offsets.committed(group_id)
    if asked is None:
        by_topic: dict[str, list[tuple[int, CommittedOffset | None]]] = {}
        for (topic, partition), value in sorted(committed.items()):
            by_topic.setdefault(topic, []).append((partition, value))
        return list(by_topic.items())
    return [
        (topic, [(p, committed.get((topic, p))) for p in partitions]) for topic, partitions in asked
    ]


def _topics(
    ctx: BrokerContext,
    group_id: str,
    error: ErrorCode,
    asked: list[tuple[str, list[int]]] | None,
    topic_cls: type[OffsetFetchResponseTopic] | type[OffsetFetchResponseTopics],
    partition_cls: type[OffsetFetchResponsePartition] | type[OffsetFetchResponsePartitions],
    denied: frozenset[str] = NOTHING_DENIED,
) -> list[Any]:
    """The answer for one group (``error``: its group error), in the classes of the
    version asked (v0-v7 or v8+). Topics ``denied`` (not describable) are left
    out of all the group's offsets and answer TOPIC_AUTHORIZATION_FAILED when
    named, as in Kafka."""
    topics = []
    for topic, partitions in _lookup(ctx, group_id, asked):
        code = error
        if denied and topic in denied:
            if asked is None:
                continue
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if code:
            partitions = [(partition, None) for partition, _ in partitions]
        entries = [
            partition_cls(
                partition_index=partition,
                committed_offset=NO_OFFSET if found is None else found.offset,
                committed_leader_epoch=-1 if found is None else found.leader_epoch,
                metadata="" if found is None else found.metadata,
                error_code=code,
            )
            for partition, found in partitions
        ]
        topics.append(topic_cls(name=topic, partitions=entries))  # type: ignore[arg-type]
    return topics


async def _fetch_from_zookeeper(
    ctx: BrokerContext,
    group_id: str,
    asked: list[tuple[str, list[int]]],
    denied: frozenset[str],
) -> OffsetFetchResponse:
    """OffsetFetch v0 with ZooKeeper: offsets from /consumers/<group>/offsets/."""
    assert ctx.zookeeper is not None
    wanted = [(topic, p) for topic, partitions in asked if topic not in denied for p in partitions]
    found = await run_blocking(METADATA, ctx.zookeeper.fetch_offsets_v0, group_id, wanted)
    return OffsetFetchResponse(
        throttle_time_ms=0,
        topics=[
            OffsetFetchResponseTopic(
                name=topic,
                partitions=[
                    OffsetFetchResponsePartition(
                        partition_index=p,
                        committed_offset=found.get((topic, p), NO_OFFSET),
                        metadata="",
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
                        if topic in denied
                        else ErrorCode.NONE,
                    )
                    for p in partitions
                ],
            )
            for topic, partitions in asked
        ],
    )


async def _group_error(ctx: BrokerContext, group_id: str) -> ErrorCode:
    return await ctx.groups.coordinator_error(group_id)


def _wanted(topics: list[Any] | None) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]


def _denied_topics(
    ctx: BrokerContext, request: Request, group_id: str, asked: list[tuple[str, list[int]]] | None
) -> frozenset[str]:
    """The topics, named or among all the group's offsets, the principal may not Describe."""
    if ctx.authorizer is None:
        return NOTHING_DENIED
    if asked is None:
        names = {topic for topic, _ in ctx.groups.offsets.committed(group_id)}
    else:
        names = {topic for topic, _ in asked}
    return denied_names(ctx, request, AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _group_denied(
    request: Request, asked: list[tuple[str, list[int]]] | None
) -> list[OffsetFetchResponseTopic]:
    """Kafka's offsets without Describe on the group: none, except before v2 (which
    has no group error) where each partition named gets GROUP_AUTHORIZATION_FAILED."""
    if request.version >= 2 or asked is None:
        return []
    return [
        OffsetFetchResponseTopic(
            name=topic,
            partitions=[
                OffsetFetchResponsePartition(
                    partition_index=p,
                    committed_offset=NO_OFFSET,
                    metadata="",
                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                )
                for p in partitions
            ],
        )
        for topic, partitions in asked
    ]


async def handle_offset_fetch(ctx: BrokerContext, request: Request) -> OffsetFetchResponse:
    body: OffsetFetchRequest = request.body
    if request.version >= FIRST_GROUPS_VERSION:
        groups = []
        for group in body.groups:
            if not authorized(
                ctx, request, AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id
            ):
                groups.append(
                    OffsetFetchResponseGroup(
                        group_id=group.group_id,
                        topics=[],
                        error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    )
                )
                continue
            error = await _group_error(ctx, group.group_id)
            wanted = _wanted(group.topics)
            topics = _topics(
                ctx,
                group.group_id,
                error,
                wanted,
                OffsetFetchResponseTopics,
                OffsetFetchResponsePartitions,
                _denied_topics(ctx, request, group.group_id, wanted),
            )
            groups.append(
                OffsetFetchResponseGroup(group_id=group.group_id, topics=topics, error_code=error)
            )
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    asked = _wanted(body.topics)
    if not authorized(ctx, request, AclOperation.DESCRIBE, ResourceType.GROUP, body.group_id):
        return OffsetFetchResponse(
            throttle_time_ms=0,
            topics=_group_denied(request, asked),
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
        )
    denied = _denied_topics(ctx, request, body.group_id, asked)
    if request.version == 0 and ctx.zookeeper is not None and asked is not None:
        return await _fetch_from_zookeeper(ctx, body.group_id, asked, denied)
    error = await _group_error(ctx, body.group_id)
    return OffsetFetchResponse(
        throttle_time_ms=0,
        topics=_topics(
            ctx,
            body.group_id,
            error,
            asked,
            OffsetFetchResponseTopic,
            OffsetFetchResponsePartition,
            denied,
        ),
        error_code=error,
    )
