"""DescribeAcls: list the ACLs a filter matches (Describe on the cluster)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.acl_messages import (
    acl_request_refusal,
    binding_filter_from,
    described_resources,
)
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation


def _error(code: ErrorCode, message: str) -> DescribeAclsResponse:
    return DescribeAclsResponse(throttle_time_ms=0, error_code=code, error_message=message)


async def handle_describe_acls(ctx: BrokerContext, request: Request) -> DescribeAclsResponse:
    body: DescribeAclsRequest = request.body
    refusal = acl_request_refusal(ctx, request, AclOperation.DESCRIBE)
    if refusal is not None:
        return _error(*refusal)
    assert ctx.authorizer is not None
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
