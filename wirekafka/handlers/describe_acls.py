"""DescribeAcls: list the ACLs a filter matches (Describe on the cluster)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.acl_messages import (
    NO_AUTHORIZER,
    NOT_ALLOWED,
    binding_filter_from,
    described_resources,
)
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation


def _error(code: ErrorCode, message: str) -> DescribeAclsResponse:
    return DescribeAclsResponse(throttle_time_ms=0, error_code=code, error_message=message)


async def handle_describe_acls(ctx: BrokerContext, request: Request) -> DescribeAclsResponse:
    body: DescribeAclsRequest = request.body
    if not cluster_authorized(ctx, request, AclOperation.DESCRIBE):
        return _error(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_ALLOWED.format(operation="describe")
        )
    if ctx.authorizer is None:
        return _error(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    binding_filter = binding_filter_from(body)
    unknown = binding_filter.unknown_field()
    if unknown is not None:
        return _error(ErrorCode.INVALID_REQUEST, unknown)
    return DescribeAclsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        resources=described_resources(ctx.authorizer.describe(binding_filter)),
    )
