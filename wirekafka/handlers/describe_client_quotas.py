"""DescribeClientQuotas: the broker keeps no client quotas, so every filter Kafka
accepts matches nothing; a filter Kafka refuses is refused with Kafka's code and message.

``kafka-configs --describe --entity-type users`` asks this before it lists the users'
SCRAM credentials.
"""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_client_quotas import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation

# ClientQuotaEntity's entity types
USER, CLIENT_ID, IP = "user", "client-id", "ip"


def filter_error(body: DescribeClientQuotasRequest) -> tuple[ErrorCode, str] | None:
    """Why Kafka refuses the filter (ClientQuotasImage.describe), or None."""
    seen: set[str] = set()
    for component in body.components:
        entity_type = component.entity_type
        if not entity_type:
            return ErrorCode.INVALID_REQUEST, "Invalid empty entity type."
        if entity_type in seen:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        seen.add(entity_type)
        if entity_type not in (USER, CLIENT_ID, IP):
            return ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}"
        if component.match_type == MATCH_EXACT:
            if component.match is None:
                return (
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
        elif component.match_type == MATCH_DEFAULT:
            if component.match is not None:
                return (
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
        elif component.match_type == MATCH_ANY:
            if component.match is not None:
                return (
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
        else:
            return ErrorCode.INVALID_REQUEST, f"Unknown match type {component.match_type}"
    if IP in seen and (USER in seen or CLIENT_ID in seen):
        return (
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not "
            "be used with user or clientId filter component.",
        )
    return None


async def handle_describe_client_quotas(
    ctx: BrokerContext, request: Request
) -> DescribeClientQuotasResponse:
    body: DescribeClientQuotasRequest = request.body
    if not cluster_authorized(ctx, request, AclOperation.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            entries=None,
        )
    error = filter_error(body)
    if error is not None:
        return DescribeClientQuotasResponse(
            throttle_time_ms=0, error_code=error[0], error_message=error[1], entries=None
        )
    return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, entries=[])
