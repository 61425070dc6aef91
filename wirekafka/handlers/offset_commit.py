"""OffsetCommit: store a group's offsets in ``__consumer_offsets``, every version
(v0 in ZooKeeper when the broker has one, as Kafka 0.8.1 did).

v0 and v1 commit outside membership too (generation -1, empty member id) while
the group has no members, as simple consumers and pykafka do; v1 carries a
commit timestamp per partition, v2-v4 a retention time.

As Kafka: without Read on the group every partition answers
GROUP_AUTHORIZATION_FAILED; a topic without Read answers
TOPIC_AUTHORIZATION_FAILED, whether it exists or not.
"""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.groups.offset_store import NO_EXPIRY, CommittedOffset
from wirekafka.handlers.authorization import authorized, denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.worker_threads import METADATA, run_blocking

DEFAULT_TIMESTAMP = -1
DEFAULT_RETENTION = -1


def _respond(
    body: OffsetCommitRequest, errors: dict[tuple[str, int], ErrorCode]
) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=errors[(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
    )


async def handle_offset_commit(ctx: BrokerContext, request: Request) -> OffsetCommitResponse:
    body: OffsetCommitRequest = request.body
    if not authorized(ctx, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        every = {(t.name, p.partition_index) for t in body.topics for p in t.partitions}
        return _respond(body, dict.fromkeys(every, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    names = (topic.name for topic in body.topics)
    denied = denied_names(ctx, request, AclOperation.READ, ResourceType.TOPIC, names)
    version = request.version
    now = ctx.clock()
    groups = ctx.groups
    generation = body.generation_id_or_member_epoch if version >= 1 else -1
    member_id = body.member_id if version >= 1 else ""
    allowed = await groups.coordinator_error(body.group_id)
    if allowed == ErrorCode.NONE:
        allowed = groups.coordinator.check_commit(
            body.group_id, generation, member_id, body.group_instance_id, now
        )
    await groups.deliver()
    errors: dict[tuple[str, int], ErrorCode] = {}
    accepted: dict[tuple[str, int], CommittedOffset] = {}
    expire = NO_EXPIRY
    if 2 <= version <= 4 and body.retention_time_ms != DEFAULT_RETENTION:
        expire = now + body.retention_time_ms
    for topic in body.topics:
        if denied and topic.name in denied:
            for partition in topic.partitions:
                errors[(topic.name, partition.partition_index)] = (
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED
                )
            continue
        known = ctx.topics.topic(topic.name)
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if allowed != ErrorCode.NONE:
                errors[key] = allowed
                continue
            metadata = partition.committed_metadata or ""
            if len(metadata.encode()) > groups.offset_metadata_max_bytes:
                errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            if known is None or not 0 <= partition.partition_index < known.partitions:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            timestamp = now
            if version == 1 and partition.commit_timestamp != DEFAULT_TIMESTAMP:
                timestamp = partition.commit_timestamp
            accepted[key] = CommittedOffset(
                offset=partition.committed_offset,
                leader_epoch=partition.committed_leader_epoch,
                metadata=metadata,
                commit_timestamp_ms=timestamp,
                expire_timestamp_ms=expire,
            )
    if accepted and version == 0 and ctx.zookeeper is not None:
        # v0 means ZooKeeper: /consumers/<group>/offsets/<topic>/<partition>
        offsets = {key: value.offset for key, value in accepted.items()}
        await run_blocking(METADATA, ctx.zookeeper.commit_offsets_v0, body.group_id, offsets)
        errors.update(dict.fromkeys(accepted, ErrorCode.NONE))
    elif accepted:
        stored = await groups.commit(body.group_id, accepted)
        for key in accepted:
            errors[key] = stored
    return _respond(body, errors)
