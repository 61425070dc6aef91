"""FindCoordinator: until the group coordinator is served, no broker coordinates.

COORDINATOR_NOT_AVAILABLE is retriable: group clients wait and ask again,
and clients that assign partitions themselves carry on.
"""

from __future__ import annotations

from wirekafka.handlers.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from wirekafka.protocol.rpc import Request

FIRST_BATCHED_VERSION = 4
_MESSAGE = "the group coordinator is not served by this broker yet"


async def handle_find_coordinator(ctx: BrokerContext, request: Request) -> FindCoordinatorResponse:
    body: FindCoordinatorRequest = request.body
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    if request.version >= FIRST_BATCHED_VERSION:
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            coordinators=[
                Coordinator(
                    key=key, node_id=-1, host="", port=-1, error_code=code, error_message=_MESSAGE
                )
                for key in body.coordinator_keys
            ],
        )
    return FindCoordinatorResponse(
        throttle_time_ms=0, error_code=code, error_message=_MESSAGE, node_id=-1, host="", port=-1
    )
