"""LeaveGroup: one member (v0-v2) or several (v3+) leave; the rest rebalance."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType

FIRST_BATCH_VERSION = 3


async def handle_leave_group(ctx: BrokerContext, request: Request) -> LeaveGroupResponse:
    body: LeaveGroupRequest = request.body
    coordinator = ctx.groups.coordinator
    refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if authorized(ctx, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        refused = await ctx.groups.coordinator_error(body.group_id)
    if refused != ErrorCode.NONE:
        return LeaveGroupResponse(throttle_time_ms=0, error_code=refused)
    now = ctx.clock()
    if request.version < FIRST_BATCH_VERSION:
        error = coordinator.leave(body.group_id, body.member_id, None, now)
        await ctx.groups.deliver()
        return LeaveGroupResponse(throttle_time_ms=0, error_code=error)
    results = [
        MemberResponse(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            error_code=coordinator.leave(body.group_id, m.member_id, m.group_instance_id, now),
        )
        for m in body.members
    ]
    await ctx.groups.deliver()
    return LeaveGroupResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, members=results)
