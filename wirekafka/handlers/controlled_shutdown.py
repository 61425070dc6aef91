"""ControlledShutdown: a broker about to stop asks the controller to move its
leaderships away first (Kafka's ZooKeeper mode).

The controller (:meth:`wirekafka.zk.cluster.ZkCluster.controlled_shutdown`)
gives each partition the broker leads another live ISR member as leader, takes
the broker out of the ISRs it is in, remembers it as shutting down (no election
gives it a leadership back) and answers with the partitions it still leads:
those of more than one replica that nobody else could take. Another broker
answers NOT_CONTROLLER, the controller BROKER_NOT_AVAILABLE for a broker that
is not registered and STALE_BROKER_EPOCH for a request from an earlier
registration of it (v2+). ZooKeeper failing is UNKNOWN_SERVER_ERROR, and the
broker asking tries again.

The embedded default is its own controller and every partition has one
replica, which Kafka never counts as remaining: it answers NONE and nothing
remaining to its own id.
"""

from __future__ import annotations

import logging

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation
from wirekafka.zk.cluster import BrokerNotAvailable, NotController, StaleBrokerEpoch
from wirekafka.zk.session import ZooKeeperError

log = logging.getLogger("wirekafka.handlers")


def _failed(error: ErrorCode) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(error_code=error, remaining_partitions=[])


async def handle_controlled_shutdown(
    ctx: BrokerContext, request: Request
) -> ControlledShutdownResponse:
    body: ControlledShutdownRequest = request.body
    if not cluster_authorized(ctx, request, AclOperation.CLUSTER_ACTION):  # brokers only
        return _failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    zookeeper = ctx.zookeeper
    if zookeeper is None:
        if body.broker_id != ctx.config.broker_id:
            return _failed(ErrorCode.BROKER_NOT_AVAILABLE)
        return _failed(ErrorCode.NONE)
    if zookeeper.controller_id() != ctx.config.broker_id:
        return _failed(ErrorCode.NOT_CONTROLLER)  # as the cache says; no need to ask
    epoch = body.broker_epoch if request.version >= 2 else -1
    try:
        remaining = await zookeeper.controlled_shutdown(body.broker_id, epoch)
    except NotController:
        return _failed(ErrorCode.NOT_CONTROLLER)
    except BrokerNotAvailable:
        return _failed(ErrorCode.BROKER_NOT_AVAILABLE)
    except StaleBrokerEpoch as exc:
        log.info("controlled shutdown refused: %s", exc)
        return _failed(ErrorCode.STALE_BROKER_EPOCH)
    except ZooKeeperError as exc:
        log.warning("controlled shutdown of broker %d failed: %s", body.broker_id, exc)
        return _failed(ErrorCode.UNKNOWN_SERVER_ERROR)
    return ControlledShutdownResponse(
        error_code=ErrorCode.NONE,
        remaining_partitions=[
            RemainingPartition(topic_name=topic, partition_index=partition)
            for topic, partition in remaining
        ],
    )
