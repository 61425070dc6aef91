"""FindCoordinator: this broker coordinates every group (transactions are not served)."""

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
KEY_TYPE_GROUP = 0


def _find(ctx: BrokerContext, key: str, key_type: int) -> Coordinator:
    if key_type != KEY_TYPE_GROUP:
        return Coordinator(
            key=key, node_id=-1, host="", port=-1,
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message="transactions are not supported by this broker",
        )  # fmt: skip
    if not key:
        return Coordinator(
            key=key, node_id=-1, host="", port=-1,
            error_code=ErrorCode.INVALID_GROUP_ID, error_message="the group id is empty",
        )  # fmt: skip
    ctx.groups.offsets_log.ensure_topic()
    endpoint = ctx.endpoint
    return Coordinator(
        key=key, node_id=endpoint.node_id, host=endpoint.host, port=endpoint.port,
        error_code=ErrorCode.NONE, error_message=None,
    )  # fmt: skip


async def handle_find_coordinator(ctx: BrokerContext, request: Request) -> FindCoordinatorResponse:
    body: FindCoordinatorRequest = request.body
    key_type = body.key_type if request.version >= 1 else KEY_TYPE_GROUP
    if request.version >= FIRST_BATCHED_VERSION:
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            coordinators=[_find(ctx, k, key_type) for k in body.coordinator_keys],
        )
    found = _find(ctx, body.key, key_type)
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=found.error_code,
        error_message=found.error_message,
        node_id=found.node_id,
        host=found.host,
        port=found.port,
    )
