"""DeleteGroups: remove empty groups and their committed offsets (each group needs
Delete on it: GROUP_AUTHORIZATION_FAILED otherwise)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType


async def _delete(ctx: BrokerContext, request: Request, group_id: str) -> ErrorCode:
    if not authorized(ctx, request, AclOperation.DELETE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    refused = await ctx.groups.coordinator_error(group_id)
    return refused if refused != ErrorCode.NONE else await ctx.groups.delete_group(group_id)


async def handle_delete_groups(ctx: BrokerContext, request: Request) -> DeleteGroupsResponse:
    body: DeleteGroupsRequest = request.body
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeletableGroupResult(
                group_id=group_id,
                error_code=await _delete(ctx, request, group_id),
            )
            for group_id in body.groups_names
        ],
    )
