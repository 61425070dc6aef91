"""DeleteAcls: remove the ACLs each filter matches (Alter on the cluster).

The removal is written where the ACLs are kept before the answer; a binding
whose removal could not be written stays, and is listed with
UNKNOWN_SERVER_ERROR (as Kafka lists a failed deletion)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.acl_messages import (
    acl_request_refusal,
    binding_filter_from,
    matching_acl,
)
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_acls import (
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclBindingFilter, AclOperation


async def handle_delete_acls(ctx: BrokerContext, request: Request) -> DeleteAclsResponse:
    body: DeleteAclsRequest = request.body
    authorizer, changes = ctx.authorizer, ctx.acl_changes
    refusal = acl_request_refusal(ctx, request, AclOperation.ALTER)
    if refusal is not None:
        code, message = refusal
    else:
        assert authorizer is not None and changes is not None
        results: list[DeleteAclsFilterResult | None] = []
        usable: list[tuple[int, AclBindingFilter]] = []
        for fields in body.filters:
            binding_filter = binding_filter_from(fields)
            unknown = binding_filter.unknown_field()
            if unknown is None:
                usable.append((len(results), binding_filter))
                results.append(None)
            else:
                results.append(
                    DeleteAclsFilterResult(
                        error_code=ErrorCode.INVALID_REQUEST, error_message=unknown
                    )
                )
        matched = await changes.delete(authorizer, [f for _, f in usable])
        for (index, _), deleted in zip(usable, matched, strict=True):
            results[index] = DeleteAclsFilterResult(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[
                    matching_acl(d.binding)
                    if d.error is None
                    else matching_acl(
                        d.binding,
                        ErrorCode.UNKNOWN_SERVER_ERROR,
                        f"the deletion could not be stored: {d.error}",
                    )
                    for d in deleted
                ],
            )
        return DeleteAclsResponse(
            throttle_time_ms=0, filter_results=[r for r in results if r is not None]
        )
    return DeleteAclsResponse(
        throttle_time_ms=0,
        filter_results=[
            DeleteAclsFilterResult(error_code=code, error_message=message) for _ in body.filters
        ],
    )
