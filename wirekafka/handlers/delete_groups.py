"""DeleteGroups: remove empty groups and their committed offsets."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from wirekafka.protocol.rpc import Request


async def _delete(ctx: BrokerContext, group_id: str) -> ErrorCode:
    refused = await ctx.groups.coordinator_error(group_id)
    return refused if refused != ErrorCode.NONE else await ctx.groups.delete_group(group_id)


async def handle_delete_groups(ctx: BrokerContext, request: Request) -> DeleteGroupsResponse:
    body: DeleteGroupsRequest = request.body
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeletableGroupResult(
                group_id=group_id,
                error_code=await _delete(ctx, group_id),
            )
            for group_id in body.groups_names
        ],
    )
