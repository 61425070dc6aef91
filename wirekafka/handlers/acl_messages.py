"""Between the ACL APIs' wire structs and the authorizer's bindings and filters, and
when those APIs are refused."""

from __future__ import annotations

from typing import Protocol

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_acls import AclCreation
from wirekafka.protocol.messages.delete_acls import DeleteAclsMatchingAcl
from wirekafka.protocol.messages.describe_acls import AclDescription, DescribeAclsResource
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

NO_AUTHORIZER = "no authorizer is configured on this broker (authorizer.class.name)"
NOT_ALLOWED = "the principal may not {operation} the cluster's ACLs"


def acl_request_refusal(
    ctx: BrokerContext, request: Request, operation: AclOperation
) -> tuple[ErrorCode, str] | None:
    """Why a request on the ACLs is not served: the principal lacks ``operation`` on the
    cluster (CLUSTER_AUTHORIZATION_FAILED), or there is no authorizer (SECURITY_DISABLED,
    as Kafka answers); None when it is served."""
    if not cluster_authorized(ctx, request, operation):
        verb = "describe" if operation == AclOperation.DESCRIBE else "alter"
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_ALLOWED.format(operation=verb)
    if ctx.authorizer is None or ctx.acl_changes is None:
        return ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    return None


class FilterFields(Protocol):
    """DescribeAclsRequest and DeleteAclsFilter: the same filter fields."""

    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


def binding_filter_from(fields: FilterFields) -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType.from_code(fields.resource_type_filter),
        fields.resource_name_filter,
        PatternType.from_code(fields.pattern_type_filter),
        fields.principal_filter,
        fields.host_filter,
        AclOperation.from_code(fields.operation),
        AclPermissionType.from_code(fields.permission_type),
    )


def binding_from(creation: AclCreation) -> AclBinding:
    return AclBinding(
        ResourceType.from_code(creation.resource_type),
        creation.resource_name,
        PatternType.from_code(creation.resource_pattern_type),
        creation.principal,
        creation.host,
        AclOperation.from_code(creation.operation),
        AclPermissionType.from_code(creation.permission_type),
    )


def described_resources(bindings: list[AclBinding]) -> list[DescribeAclsResource]:
    """``bindings`` grouped by resource pattern, in pattern order."""
    grouped: dict[ResourcePattern, list[AclDescription]] = {}
    for binding in sorted(bindings):
        grouped.setdefault(binding.pattern, []).append(
            AclDescription(
                principal=binding.principal,
                host=binding.host,
                operation=binding.operation,
                permission_type=binding.permission_type,
            )
        )
    return [
        DescribeAclsResource(
            resource_type=pattern.resource_type,
            resource_name=pattern.name,
            pattern_type=pattern.pattern_type,
            acls=acls,
        )
        for pattern, acls in grouped.items()
    ]


def matching_acl(
    binding: AclBinding, error_code: int = 0, error_message: str | None = None
) -> DeleteAclsMatchingAcl:
    """A binding DeleteAcls matched; an error code when it could not be deleted."""
    return DeleteAclsMatchingAcl(
        error_code=error_code,
        error_message=error_message,
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission_type=binding.permission_type,
    )
