"""The questions every handler asks before it acts: may this request's principal
do this, to which of these resources, and which operations may it perform?

As Kafka's broker does, everything is allowed when no authorizer is configured;
then each question costs one ``ctx.authorizer is None`` test. With an
authorizer, each distinct resource name of a request is asked about once,
however many of its partitions the request names (Kafka's filterByAuthorized).
What each API asks is :data:`wirekafka.security.api_acls.API_ACLS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import (
    AUTHORIZATION_FAILED,
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    operations_bit_field,
)
from wirekafka.security.api_acls import CONFIG_RESOURCE_ACL_TYPES

NOTHING_DENIED: frozenset[str] = frozenset()


def authorized(
    ctx: BrokerContext,
    request: Request,
    operation: AclOperation,
    resource_type: ResourceType,
    resource_name: str,
) -> bool:
    authorizer = ctx.authorizer
    return authorizer is None or authorizer.authorize(
        request.principal, request.client_host, operation, resource_type, resource_name
    )


def cluster_authorized(ctx: BrokerContext, request: Request, operation: AclOperation) -> bool:
    return authorized(ctx, request, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def denied_names(
    ctx: BrokerContext,
    request: Request,
    operation: AclOperation,
    resource_type: ResourceType,
    names: Iterable[str | None],
) -> frozenset[str]:
    """The names among ``names`` (``None`` ignored) that the principal may not
    ``operation``; :data:`NOTHING_DENIED` without an authorizer."""
    authorizer = ctx.authorizer
    if authorizer is None:
        return NOTHING_DENIED
    principal, host = request.principal, request.client_host
    return frozenset(
        name
        for name in set(names)
        if name is not None
        and not authorizer.authorize(principal, host, operation, resource_type, name)
    )


def authorized_for_any(
    ctx: BrokerContext, request: Request, operation: AclOperation, resource_type: ResourceType
) -> bool:
    """May the principal ``operation`` at least one resource of ``resource_type``?"""
    authorizer = ctx.authorizer
    return authorizer is None or authorizer.authorize_any(
        request.principal, request.client_host, operation, resource_type
    )


def authorized_operations(
    ctx: BrokerContext, request: Request, resource_type: ResourceType, resource_name: str
) -> int:
    """The bit field of the operations the principal may perform on the resource
    (Metadata's, DescribeGroups' and DescribeCluster's authorized-operations
    fields); every operation the type supports without an authorizer, as Kafka."""
    authorizer = ctx.authorizer
    if authorizer is None:
        return operations_bit_field(SUPPORTED_OPERATIONS[resource_type])
    return authorizer.authorized_operations(
        request.principal, request.client_host, resource_type, resource_name
    )


def config_resource_error(
    ctx: BrokerContext,
    request: Request,
    operation: AclOperation,
    config_type: int,
    name: str,
    acl_types: Mapping[int, ResourceType] = CONFIG_RESOURCE_ACL_TYPES,
) -> ErrorCode | None:
    """The error a config resource (DescribeConfigs', AlterConfigs') gets when the
    principal may not ``operation`` it: a topic's or group's on it, a broker's on
    the cluster. None when allowed, or when ``acl_types`` does not map
    ``config_type`` (the handler refuses such a resource itself)."""
    resource_type = acl_types.get(config_type)
    if resource_type is None:
        return None
    resource_name = CLUSTER_NAME if resource_type == ResourceType.CLUSTER else name
    if authorized(ctx, request, operation, resource_type, resource_name):
        return None
    return AUTHORIZATION_FAILED[resource_type]
