"""CreateAcls: add ACL bindings (Alter on the cluster); each creation is answered alone."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.acl_messages import NO_AUTHORIZER, NOT_ALLOWED, binding_from
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_acls import (
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclBinding, AclOperation, invalid_binding
from wirekafka.security.authorizer import AclAuthorizer


def _created(
    authorizer: AclAuthorizer, ctx: BrokerContext, body: CreateAclsRequest
) -> list[AclCreationResult]:
    results = []
    valid: list[AclBinding] = []
    for creation in body.creations:
        binding = binding_from(creation)
        problem = invalid_binding(binding, zookeeper=ctx.zookeeper is not None)
        if problem is None:
            valid.append(binding)
            results.append(AclCreationResult(error_code=ErrorCode.NONE, error_message=None))
        else:
            results.append(
                AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=problem)
            )
    authorizer.add(valid)
    return results


async def handle_create_acls(ctx: BrokerContext, request: Request) -> CreateAclsResponse:
    body: CreateAclsRequest = request.body
    authorizer = ctx.authorizer
    if not cluster_authorized(ctx, request, AclOperation.ALTER):
        code, message = (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            NOT_ALLOWED.format(operation="alter"),
        )
    elif authorizer is None:
        code, message = ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    else:
        return CreateAclsResponse(throttle_time_ms=0, results=_created(authorizer, ctx, body))
    return CreateAclsResponse(
        throttle_time_ms=0,
        results=[AclCreationResult(error_code=code, error_message=message) for _ in body.creations],
    )
