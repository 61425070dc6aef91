"""DeleteAcls: remove the ACLs each filter matches (Alter on the cluster)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.acl_messages import (
    NO_AUTHORIZER,
    NOT_ALLOWED,
    binding_filter_from,
    matching_acl,
)
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_acls import (
    DeleteAclsFilter,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation
from wirekafka.security.authorizer import AclAuthorizer


def _delete(authorizer: AclAuthorizer, fields: DeleteAclsFilter) -> DeleteAclsFilterResult:
    binding_filter = binding_filter_from(fields)
    unknown = binding_filter.unknown_field()
    if unknown is not None:
        return DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=unknown)
    return DeleteAclsFilterResult(
        error_code=ErrorCode.NONE,
        error_message=None,
        matching_acls=[matching_acl(b) for b in authorizer.remove(binding_filter)],
    )


async def handle_delete_acls(ctx: BrokerContext, request: Request) -> DeleteAclsResponse:
    body: DeleteAclsRequest = request.body
    authorizer = ctx.authorizer
    if not cluster_authorized(ctx, request, AclOperation.ALTER):
        code, message = (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            NOT_ALLOWED.format(operation="alter"),
        )
    elif authorizer is None:
        code, message = ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    else:
        return DeleteAclsResponse(
            throttle_time_ms=0, filter_results=[_delete(authorizer, f) for f in body.filters]
        )
    return DeleteAclsResponse(
        throttle_time_ms=0,
        filter_results=[
            DeleteAclsFilterResult(error_code=code, error_message=message) for _ in body.filters
        ],
    )
