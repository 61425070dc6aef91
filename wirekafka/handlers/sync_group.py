"""SyncGroup: the leader hands in the assignment; every member gets its part."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType


async def handle_sync_group(ctx: BrokerContext, request: Request) -> SyncGroupResponse:
    body: SyncGroupRequest = request.body
    groups = ctx.groups
    refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if authorized(ctx, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        refused = await groups.coordinator_error(body.group_id)
    if refused != ErrorCode.NONE:
        return SyncGroupResponse(throttle_time_ms=0, error_code=refused)
    assignments = {a.member_id: bytes(a.assignment) for a in body.assignments}
    result = await groups.held(
        lambda reply: groups.coordinator.sync(
            body.group_id,
            body.generation_id,
            body.member_id,
            body.group_instance_id,
            body.protocol_type,
            body.protocol_name,
            assignments,
            ctx.clock(),
            reply,
        )
    )
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
