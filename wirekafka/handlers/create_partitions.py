"""CreatePartitions: raise topics' partition counts, as ``kafka-topics --alter
--partitions`` asks. A count below the current one, or equal to it, is
INVALID_PARTITIONS; internal topics are the broker's. Each topic needs Alter on it
(TOPIC_AUTHORIZATION_FAILED otherwise, whether it exists or not)."""

from __future__ import annotations

import functools
from collections import Counter

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.topics import TopicError
from wirekafka.handlers.authorization import denied_names
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.worker_threads import METADATA, run_blocking


async def _add(
    ctx: BrokerContext, topic: CreatePartitionsTopic, validate_only: bool
) -> TopicError | None:
    assignments = None if topic.assignments is None else [a.broker_ids for a in topic.assignments]
    add = functools.partial(
        ctx.topics.add_partitions, topic.name, topic.count, assignments, validate_only=validate_only
    )
    return await run_blocking(METADATA, add)


async def handle_create_partitions(
    ctx: BrokerContext, request: Request
) -> CreatePartitionsResponse:
    body: CreatePartitionsRequest = request.body
    count = Counter(topic.name for topic in body.topics)
    denied = denied_names(ctx, request, AclOperation.ALTER, ResourceType.TOPIC, count)
    results = []
    for topic in body.topics:
        if count[topic.name] > 1:
            error: TopicError | None = TopicError(
                ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
            )
        elif denied and topic.name in denied:  # before it is looked up, as in Kafka
            error = TopicError(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."
            )
        else:
            error = await _add(ctx, topic, body.validate_only)
        results.append(
            CreatePartitionsTopicResult(
                name=topic.name,
                error_code=ErrorCode.NONE if error is None else error.code,
                error_message=None if error is None else error.message,
            )
        )
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)
