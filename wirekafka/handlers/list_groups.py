"""ListGroups: every group this coordinator knows, optionally filtered by state (v4+).

As Kafka: with Describe on the cluster every group is listed, otherwise only the
groups the principal may Describe."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import cluster_authorized, denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.list_groups import (
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType


async def handle_list_groups(ctx: BrokerContext, request: Request) -> ListGroupsResponse:
    body: ListGroupsRequest = request.body
    wanted = {state.lower() for state in body.states_filter}
    groups = {
        group_id: (group.protocol_type or "", group.state.value)
        for group_id, group in ctx.groups.coordinator.groups.items()
    }
    for group_id in ctx.groups.offsets.groups():  # offsets alone: an empty group to Kafka
        groups.setdefault(group_id, ("", "Empty"))
    listed = [
        ListedGroup(group_id=group_id, protocol_type=protocol_type, group_state=state)
        for group_id, (protocol_type, state) in sorted(groups.items())
        if not wanted or state.lower() in wanted
    ]
    if ctx.authorizer is not None and not cluster_authorized(ctx, request, AclOperation.DESCRIBE):
        ids = (group.group_id for group in listed)
        hidden = denied_names(ctx, request, AclOperation.DESCRIBE, ResourceType.GROUP, ids)
        listed = [group for group in listed if group.group_id not in hidden]
    return ListGroupsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, groups=listed)
