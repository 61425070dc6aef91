"""ListGroups: every group this coordinator knows, optionally filtered by state (v4+)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.list_groups import (
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from wirekafka.protocol.rpc import Request


async def handle_list_groups(ctx: BrokerContext, request: Request) -> ListGroupsResponse:
    body: ListGroupsRequest = request.body
    wanted = {state.lower() for state in body.states_filter}
    groups = {
        group_id: (group.protocol_type or "", group.state.value)
        for group_id, group in ctx.groups.coordinator.groups.items()
    }
    for group_id in ctx.groups.offsets.groups():  # offsets alone: an empty group to Kafka
        groups.setdefault(group_id, ("", "Empty"))
    return ListGroupsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        groups=[
            ListedGroup(group_id=group_id, protocol_type=protocol_type, group_state=state)
            for group_id, (protocol_type, state) in sorted(groups.items())
            if not wanted or state.lower() in wanted
        ],
    )
