"""The question every handler asks before it acts: may this request's principal do this?

As Kafka's broker does, everything is allowed when no authorizer is configured.
"""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import CLUSTER_NAME, AclOperation, ResourceType


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
