"""DeleteTopics: by name (topic ids are not handed out, so none are known); a topic
the principal may not Delete answers TOPIC_AUTHORIZATION_FAILED, whether it
exists or not."""

from __future__ import annotations

from uuid import UUID

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import denied_names
from wirekafka.handlers.metadata import NO_TOPIC_ID
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.worker_threads import METADATA, run_blocking

FIRST_TOPIC_STATE_VERSION = 6


async def _delete(
    ctx: BrokerContext, name: str | None, topic_id: UUID, denied: frozenset[str]
) -> DeletableTopicResult:
    result = DeletableTopicResult(name=name, topic_id=topic_id, error_code=ErrorCode.NONE)
    if name is None:
        result.error_code = ErrorCode.UNKNOWN_TOPIC_ID
        result.error_message = "topics are deleted by name on this broker"
        return result
    if denied and name in denied:  # before it is looked up, as in Kafka
        result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return result
    error = await run_blocking(METADATA, ctx.topics.delete_topic, name)
    if error is not None:
        result.error_code, result.error_message = error.code, error.message
    return result


async def handle_delete_topics(ctx: BrokerContext, request: Request) -> DeleteTopicsResponse:
    body: DeleteTopicsRequest = request.body
    asked = (
        [(t.name, t.topic_id) for t in body.topics]
        if request.version >= FIRST_TOPIC_STATE_VERSION
        else [(name, NO_TOPIC_ID) for name in body.topic_names]
    )
    names = (name for name, _ in asked)
    denied = denied_names(ctx, request, AclOperation.DELETE, ResourceType.TOPIC, names)
    results = [await _delete(ctx, name, topic_id, denied) for name, topic_id in asked]
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)
