"""DescribeCluster: the cluster id, the controller and the live brokers (KIP-700)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import authorized_operations, cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_cluster import (
    AUTHORIZED_OPERATIONS_OMITTED,
    ENDPOINT_TYPE_BROKER,
    ENDPOINT_TYPE_CONTROLLER,
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import CLUSTER_NAME, AclOperation, ResourceType


async def handle_describe_cluster(ctx: BrokerContext, request: Request) -> DescribeClusterResponse:
    body: DescribeClusterRequest = request.body
    response = DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        endpoint_type=ENDPOINT_TYPE_BROKER,
        cluster_id=ctx.cluster_id,
    )
    if request.version >= 1 and body.endpoint_type != ENDPOINT_TYPE_BROKER:
        if body.endpoint_type == ENDPOINT_TYPE_CONTROLLER:
            response.error_code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            response.error_message = (
                "The request was sent to an endpoint of type BROKER, but we wanted an "
                "endpoint of type CONTROLLER"
            )
        else:
            response.error_code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            response.error_message = f"Unsupported endpoint type {body.endpoint_type}"
        return response
    response.controller_id = ctx.cluster.controller_id()
    response.brokers = [
        DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=None)
        for b in ctx.cluster.brokers(request.listener_name or None)
    ]
    # Served to everyone; the authorized operations, when asked for, are 0 without
    # Describe on the cluster (every operation a cluster supports without an authorizer).
    if not body.include_cluster_authorized_operations:
        response.cluster_authorized_operations = AUTHORIZED_OPERATIONS_OMITTED
    elif cluster_authorized(ctx, request, AclOperation.DESCRIBE):
        response.cluster_authorized_operations = authorized_operations(
            ctx, request, ResourceType.CLUSTER, CLUSTER_NAME
        )
    else:
        response.cluster_authorized_operations = 0
    return response
