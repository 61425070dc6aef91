"""FindCoordinator: this broker coordinates every group (transactions are not served).

As Kafka: a key the principal may not Describe (a group, or a transactional id)
answers GROUP_ (TRANSACTIONAL_ID_) AUTHORIZATION_FAILED and names no coordinator.
"""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.offsets_log import OFFSETS_TOPIC
from wirekafka.handlers.authorization import authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AUTHORIZATION_FAILED, AclOperation, ResourceType

FIRST_BATCHED_VERSION = 4
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


# What the principal needs to find a coordinator, by key type: Describe on the key
_DESCRIBED: dict[int, ResourceType] = {
    KEY_TYPE_GROUP: ResourceType.GROUP,
    KEY_TYPE_TRANSACTION: ResourceType.TRANSACTIONAL_ID,
}


async def _find(ctx: BrokerContext, request: Request, key: str, key_type: int) -> Coordinator:
    resource_type = _DESCRIBED.get(key_type)
    if resource_type is not None and not authorized(
        ctx, request, AclOperation.DESCRIBE, resource_type, key
    ):
        return Coordinator(
            key=key, node_id=-1, host="", port=-1,
            error_code=AUTHORIZATION_FAILED[resource_type], error_message=None,
        )  # fmt: skip
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
    offsets_log = ctx.groups.offsets_log
    # the coordinator is the leader of the group's __consumer_offsets partition
    leader = await ctx.groups.coordinator_id(key)
    if isinstance(leader, ErrorCode):
        return Coordinator(
            key=key, node_id=-1, host="", port=-1, error_code=leader,
            error_message=f"{OFFSETS_TOPIC} could not be created; try again",
        )  # fmt: skip
    brokers = ctx.cluster.brokers(request.listener_name or None)
    broker = next((b for b in brokers if b.node_id == leader), None)
    if broker is None:
        return Coordinator(
            key=key, node_id=-1, host="", port=-1,
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message=f"{OFFSETS_TOPIC} partition {offsets_log.partition_of(key)} has no leader",
        )  # fmt: skip
    return Coordinator(
        key=key, node_id=broker.node_id, host=broker.host, port=broker.port,
        error_code=ErrorCode.NONE, error_message=None,
    )  # fmt: skip


async def handle_find_coordinator(ctx: BrokerContext, request: Request) -> FindCoordinatorResponse:
    body: FindCoordinatorRequest = request.body
    key_type = body.key_type if request.version >= 1 else KEY_TYPE_GROUP
    if request.version >= FIRST_BATCHED_VERSION:
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            coordinators=[await _find(ctx, request, k, key_type) for k in body.coordinator_keys],
        )
    found = await _find(ctx, request, body.key, key_type)
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=found.error_code,
        error_message=found.error_message,
        node_id=found.node_id,
        host=found.host,
        port=found.port,
    )
