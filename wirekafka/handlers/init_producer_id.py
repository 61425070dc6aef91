"""InitProducerId: a fresh producer id, epoch 0, for an idempotent producer.

Transactions are not served: a transactional id is refused with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which every client reports as fatal.
When a new block of producer ids cannot be recorded the answer is
COORDINATOR_LOAD_IN_PROGRESS, which the Java client, kafka-python and
librdkafka retry (Kafka's ProducerIdManager answers it while waiting for a block).
An idempotent producer needs IdempotentWrite on the cluster or Write on some topic
(CLUSTER_AUTHORIZATION_FAILED otherwise), as in Kafka.
"""

from __future__ import annotations

import logging

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import authorized_for_any, cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.cluster_metadata import MetadataSaveError

log = logging.getLogger("wirekafka.producers")


async def handle_init_producer_id(ctx: BrokerContext, request: Request) -> InitProducerIdResponse:
    body: InitProducerIdRequest = request.body
    if body.transactional_id is not None:
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    if not (
        cluster_authorized(ctx, request, AclOperation.IDEMPOTENT_WRITE)
        or authorized_for_any(ctx, request, AclOperation.WRITE, ResourceType.TOPIC)
    ):
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    try:
        producer_id = await ctx.producer_ids.next_id()
    except MetadataSaveError as exc:
        log.error("no producer id for InitProducerId: %s", exc)
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            producer_id=-1,
            producer_epoch=-1,
        )
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0
    )
