"""DescribeGroups: state, protocol and members of groups (a group the principal may
not Describe answers GROUP_AUTHORIZATION_FAILED), and from v3, when asked, the
operations the principal may perform on each group."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.groups.state import GroupState
from wirekafka.handlers.authorization import authorized, authorized_operations
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType

FIRST_AUTHORIZED_OPERATIONS_VERSION = 3


async def _describe(ctx: BrokerContext, request: Request, group_id: str) -> DescribedGroup:
    refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if authorized(ctx, request, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        refused = await ctx.groups.coordinator_error(group_id)
    if refused != ErrorCode.NONE:
        return DescribedGroup(
            error_code=refused, group_id=group_id, group_state="",
            protocol_type="", protocol_data="",
        )  # fmt: skip
    group = ctx.groups.coordinator.groups.get(group_id)
    if group is None:
        return DescribedGroup(
            error_code=ErrorCode.NONE, group_id=group_id, group_state=GroupState.DEAD.value,
            protocol_type="", protocol_data="",
        )  # fmt: skip
    stable = group.state == GroupState.STABLE
    protocol = group.protocol_name
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(protocol or "") if stable else "",
        members=[
            DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata_for(protocol) if stable and protocol else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ],
    )


async def handle_describe_groups(ctx: BrokerContext, request: Request) -> DescribeGroupsResponse:
    body: DescribeGroupsRequest = request.body
    with_operations = (
        request.version >= FIRST_AUTHORIZED_OPERATIONS_VERSION
        and body.include_authorized_operations
    )
    groups = []
    for group_id in body.groups:
        described = await _describe(ctx, request, group_id)
        if with_operations and described.error_code == ErrorCode.NONE:
            described.authorized_operations = authorized_operations(
                ctx, request, ResourceType.GROUP, group_id
            )
        groups.append(described)
    return DescribeGroupsResponse(throttle_time_ms=0, groups=groups)
