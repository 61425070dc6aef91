"""JoinGroup: members (re)join; the reply waits until the rebalance completes."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.groups.coordinator import JoinRequest, JoinResult
from wirekafka.handlers.authorization import authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType

FIRST_MEMBER_ID_REQUIRED_VERSION = 4
FIRST_NULLABLE_PROTOCOL_VERSION = 7
FIRST_SKIP_ASSIGNMENT_VERSION = 9


def join_response(result: JoinResult, version: int) -> JoinGroupResponse:
    protocol_name = result.protocol_name
    if protocol_name is None and version < FIRST_NULLABLE_PROTOCOL_VERSION:
        protocol_name = ""  # an error reply before v7 names no protocol with an empty string
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader_id,
        member_id=result.member_id,
        members=[
            JoinGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
            )
            for m in result.members
        ],
        skip_assignment=result.skip_assignment,
    )


async def handle_join_group(ctx: BrokerContext, request: Request) -> JoinGroupResponse:
    body: JoinGroupRequest = request.body
    joining = JoinRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
        session_timeout_ms=body.session_timeout_ms,
        # v0 has no rebalance timeout: Kafka uses the session timeout
        rebalance_timeout_ms=(
            body.rebalance_timeout_ms if request.version >= 1 else body.session_timeout_ms
        ),
        protocol_type=body.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in body.protocols],
        client_id=request.header.client_id or "",
        client_host=request.client_host,
        require_known_member_id=request.version >= FIRST_MEMBER_ID_REQUIRED_VERSION,
        supports_skip_assignment=request.version >= FIRST_SKIP_ASSIGNMENT_VERSION,
    )
    groups = ctx.groups
    if not authorized(ctx, request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        return join_response(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED), request.version)
    refused = await groups.coordinator_error(body.group_id)
    if refused != ErrorCode.NONE:
        return join_response(JoinResult(refused), request.version)
    result = await groups.held(lambda reply: groups.coordinator.join(joining, ctx.clock(), reply))
    return join_response(result, request.version)
