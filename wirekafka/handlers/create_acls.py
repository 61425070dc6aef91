"""CreateAcls: add ACL bindings (Alter on the cluster); each creation is answered alone.

The bindings are written where the ACLs are kept before the answer; one that
could not be written is answered UNKNOWN_SERVER_ERROR (as Kafka answers a
failed write) and is not held."""

from __future__ import annotations

from wirekafka.broker.acl_changes import AclChanges
from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.acl_messages import acl_request_refusal, binding_from
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_acls import (
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclBinding, AclOperation, invalid_binding
from wirekafka.security.authorizer import AclAuthorizer

_CREATED = AclCreationResult(error_code=ErrorCode.NONE, error_message=None)


async def _created(
    authorizer: AclAuthorizer, changes: AclChanges, ctx: BrokerContext, body: CreateAclsRequest
) -> list[AclCreationResult]:
    results: list[AclCreationResult | None] = []
    valid: list[tuple[int, AclBinding]] = []
    for creation in body.creations:
        binding = binding_from(creation)
        problem = invalid_binding(binding, zookeeper=ctx.zookeeper is not None)
        if problem is None:
            valid.append((len(results), binding))
            results.append(None)
        else:
            results.append(
                AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=problem)
            )
    errors = await changes.create(authorizer, [binding for _, binding in valid])
    for (index, _), error in zip(valid, errors, strict=True):
        results[index] = (
            _CREATED
            if error is None
            else AclCreationResult(
                error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message=f"the ACL could not be stored: {error}",
            )
        )
    return [result for result in results if result is not None]


async def handle_create_acls(ctx: BrokerContext, request: Request) -> CreateAclsResponse:
    body: CreateAclsRequest = request.body
    authorizer, changes = ctx.authorizer, ctx.acl_changes
    refusal = acl_request_refusal(ctx, request, AclOperation.ALTER)
    if refusal is None:
        assert authorizer is not None and changes is not None
        return CreateAclsResponse(
            throttle_time_ms=0, results=await _created(authorizer, changes, ctx, body)
        )
    code, message = refusal
    return CreateAclsResponse(
        throttle_time_ms=0,
        results=[AclCreationResult(error_code=code, error_message=message) for _ in body.creations],
    )
