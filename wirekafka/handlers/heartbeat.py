"""Heartbeat: keeps a member's session alive; tells it when to rejoin."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType


async def handle_heartbeat(ctx: BrokerContext, request: Request) -> HeartbeatResponse:
    body: HeartbeatRequest = request.body
    refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if authorized(ctx, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        refused = await ctx.groups.coordinator_error(body.group_id)
    if refused != ErrorCode.NONE:
        return HeartbeatResponse(throttle_time_ms=0, error_code=refused)
    error = ctx.groups.coordinator.heartbeat(
        body.group_id, body.generation_id, body.member_id, body.group_instance_id, ctx.clock()
    )
    await ctx.groups.deliver()
    return HeartbeatResponse(throttle_time_ms=0, error_code=error)
