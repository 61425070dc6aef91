"""DeleteTopics (key 20)."""

from __future__ import annotations

from uuid import UUID

from wirekafka.protocol import schema as wire


@wire.message
class DeleteTopicState:
    name: str | None = wire.string("6+", nullable="6+", default=None)
    topic_id: UUID = wire.uuid("6+")


@wire.message
class DeleteTopicsRequest:
    topics: list[DeleteTopicState] = wire.array(DeleteTopicState, "6+")
    topic_names: list[str] = wire.array(wire.STRING, "0-5")
    timeout_ms: int = wire.int32("0+")


@wire.message
class DeletableTopicResult:
    name: str | None = wire.string("0+", nullable="6+")
    topic_id: UUID = wire.uuid("6+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("5+", nullable="5+", default=None)


@wire.message
class DeleteTopicsResponse:
    throttle_time_ms: int = wire.int32("1+")
    responses: list[DeletableTopicResult] = wire.array(DeletableTopicResult, "0+")
