"""DeleteGroups: remove empty groups and their committed offsets."""

from __future__ import annotations

from wirekafka.handlers.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from wirekafka.protocol.rpc import Request


async def handle_delete_groups(ctx: BrokerContext, request: Request) -> DeleteGroupsResponse:
    body: DeleteGroupsRequest = request.body
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeletableGroupResult(
                group_id=group_id,
                error_code=ctx.groups.delete_group(group_id)
                if ctx.groups.coordinates(group_id)
                else ErrorCode.NOT_COORDINATOR,
            )
            for group_id in body.groups_names
        ],
    )
