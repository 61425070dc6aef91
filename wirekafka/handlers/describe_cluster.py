"""DescribeCluster: the cluster id, the controller and the live brokers (KIP-700)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
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

# What Kafka answers with no authorizer: every operation a cluster supports
# (CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12), one bit per AclOperation code.
CLUSTER_OPERATIONS = (5, 7, 8, 9, 10, 11, 12)
CLUSTER_AUTHORIZED_OPERATIONS = sum(1 << code for code in CLUSTER_OPERATIONS)


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
    response.cluster_authorized_operations = (
        CLUSTER_AUTHORIZED_OPERATIONS
        if body.include_cluster_authorized_operations
        else AUTHORIZED_OPERATIONS_OMITTED
    )
    return response
