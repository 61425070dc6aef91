"""OffsetDelete: remove a group's committed offsets of some partitions (KIP-496).

As Kafka's coordinator answers: an Empty group loses the offsets asked for; a
consumer group with members keeps those of topics its members subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC for each such partition) and loses the others; any
other group with members is refused whole (NON_EMPTY_GROUP). Partitions of
unknown topics get UNKNOWN_TOPIC_OR_PARTITION; a partition without a committed
offset is simply reported done.

As Kafka: without Delete on the group the request is refused whole
(GROUP_AUTHORIZATION_FAILED); a topic without Read answers
TOPIC_AUTHORIZATION_FAILED for each partition, whether it exists or not.
"""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.groups.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from wirekafka.groups.group import Group
from wirekafka.groups.offset_store import TopicPartition
from wirekafka.groups.state import GroupState
from wirekafka.handlers.authorization import authorized, denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType


def _subscribed(group: Group) -> set[str]:
    """The topics the members subscribe to (Kafka's subscribedTopics; none when a
    member's metadata does not parse, or no protocol is chosen yet)."""
    protocol = group.protocol_name
    if protocol is None:
        return set()
    topics: set[str] = set()
    for member in group.members.values():
        found = subscribed_topics(member.metadata_for(protocol))
        if found is None:
            return set()
        topics |= found
    return topics


def _kept(group: Group | None) -> set[str] | ErrorCode:
    """The topics whose offsets stay, or the error refusing the whole request."""
    if group is None or group.state == GroupState.EMPTY:
        return set()
    if group.state == GroupState.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        return _subscribed(group)
    return ErrorCode.NON_EMPTY_GROUP


def _refused(code: ErrorCode) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code, throttle_time_ms=0, topics=[])


async def handle_offset_delete(ctx: BrokerContext, request: Request) -> OffsetDeleteResponse:
    body: OffsetDeleteRequest = request.body
    group_id = body.group_id
    if not authorized(ctx, request, AclOperation.DELETE, ResourceType.GROUP, group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id:
        return _refused(ErrorCode.INVALID_GROUP_ID)
    names = (topic.name for topic in body.topics)
    denied = denied_names(ctx, request, AclOperation.READ, ResourceType.TOPIC, names)
    refused = await ctx.groups.coordinator_error(group_id)
    if refused != ErrorCode.NONE:
        return _refused(refused)
    group = ctx.groups.coordinator.groups.get(group_id)
    committed = ctx.groups.offsets.committed(group_id)
    if group is None and not committed:
        return _refused(ErrorCode.GROUP_ID_NOT_FOUND)
    kept = _kept(group)
    if isinstance(kept, ErrorCode):
        return _refused(kept)
    errors: dict[TopicPartition, ErrorCode] = {}
    doomed: list[TopicPartition] = []
    for topic in body.topics:
        known = ctx.topics.topic(topic.name)
        for partition in topic.partitions:
            tp = (topic.name, partition.partition_index)
            if denied and topic.name in denied:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif known is None or not 0 <= tp[1] < known.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif topic.name in kept:
                errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                errors[tp] = ErrorCode.NONE
                if tp in committed:
                    doomed.append(tp)
    if doomed:
        written = await ctx.groups.delete_offsets(group_id, doomed)
        if written != ErrorCode.NONE:
            return _refused(written)
    by_topic: dict[str, list[OffsetDeleteResponsePartition]] = {}
    for (name, index), code in errors.items():
        by_topic.setdefault(name, []).append(
            OffsetDeleteResponsePartition(partition_index=index, error_code=code)
        )
    return OffsetDeleteResponse(
        error_code=ErrorCode.NONE,
        throttle_time_ms=0,
        topics=[
            OffsetDeleteResponseTopic(name=name, partitions=partitions)
            for name, partitions in by_topic.items()
        ],
    )
