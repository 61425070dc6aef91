"""OffsetFetch: a group's committed offsets; v2+ may ask for all of them; v8 for several groups."""

from __future__ import annotations

from typing import Any

from wirekafka.broker.context import BrokerContext
from wirekafka.groups.offset_store import CommittedOffset
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
) -> list[Any]:
    """The answer for one group (``error``: its group error), in the classes of the
    version asked (v0-v7 or v8+)."""
    topics = []
    for topic, partitions in _lookup(ctx, group_id, asked):
        if error:
            partitions = [(partition, None) for partition, _ in partitions]
        entries = [
            partition_cls(
                partition_index=partition,
                committed_offset=NO_OFFSET if found is None else found.offset,
                committed_leader_epoch=-1 if found is None else found.leader_epoch,
                metadata="" if found is None else found.metadata,
                error_code=error,
            )
            for partition, found in partitions
        ]
        topics.append(topic_cls(name=topic, partitions=entries))  # type: ignore[arg-type]
    return topics


async def _fetch_from_zookeeper(
    ctx: BrokerContext, group_id: str, asked: list[tuple[str, list[int]]]
) -> OffsetFetchResponse:
    """OffsetFetch v0 with ZooKeeper: offsets from /consumers/<group>/offsets/."""
    assert ctx.zookeeper is not None
    wanted = [(topic, p) for topic, partitions in asked for p in partitions]
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
                        error_code=ErrorCode.NONE,
                    )
                    for p in partitions
                ],
            )
            for topic, partitions in asked
        ],
    )


async def _group_error(ctx: BrokerContext, group_id: str) -> ErrorCode:
    return await ctx.groups.coordinator_error(group_id)


async def handle_offset_fetch(ctx: BrokerContext, request: Request) -> OffsetFetchResponse:
    body: OffsetFetchRequest = request.body
    if request.version >= FIRST_GROUPS_VERSION:
        groups = []
        for group in body.groups:
            error = await _group_error(ctx, group.group_id)
            wanted = (
                None
                if group.topics is None
                else [(t.name, list(t.partition_indexes)) for t in group.topics]
            )
            topics = _topics(
                ctx,
                group.group_id,
                error,
                wanted,
                OffsetFetchResponseTopics,
                OffsetFetchResponsePartitions,
            )
            groups.append(
                OffsetFetchResponseGroup(group_id=group.group_id, topics=topics, error_code=error)
            )
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    asked = (
        None if body.topics is None else [(t.name, list(t.partition_indexes)) for t in body.topics]
    )
    if request.version == 0 and ctx.zookeeper is not None and asked is not None:
        return await _fetch_from_zookeeper(ctx, body.group_id, asked)
    error = await _group_error(ctx, body.group_id)
    return OffsetFetchResponse(
        throttle_time_ms=0,
        topics=_topics(
            ctx, body.group_id, error, asked, OffsetFetchResponseTopic, OffsetFetchResponsePartition
        ),
        error_code=error,
    )
