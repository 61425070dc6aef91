"""DescribeCluster (key 60): the cluster id, the controller and the brokers."""

from __future__ import annotations

from wirekafka.protocol import schema as wire

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2


@wire.message
class DescribeClusterRequest:
    include_cluster_authorized_operations: bool = wire.boolean("0+")
    endpoint_type: int = wire.int8("1+", default=ENDPOINT_TYPE_BROKER)


@wire.message
class DescribeClusterBroker:
    broker_id: int = wire.int32("0+")
    host: str = wire.string("0+")
    port: int = wire.int32("0+")
    rack: str | None = wire.string("0+", nullable="0+", default=None)


@wire.message
class DescribeClusterResponse:
    throttle_time_ms: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)
    endpoint_type: int = wire.int8("1+", default=ENDPOINT_TYPE_BROKER)
    cluster_id: str = wire.string("0+")
    controller_id: int = wire.int32("0+", default=-1)
    brokers: list[DescribeClusterBroker] = wire.array(DescribeClusterBroker, "0+")
    cluster_authorized_operations: int = wire.int32("0+", default=AUTHORIZED_OPERATIONS_OMITTED)
