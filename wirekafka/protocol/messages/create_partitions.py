"""CreatePartitions (key 37): raise a topic's partition count."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class CreatePartitionsAssignment:
    broker_ids: list[int] = wire.array(wire.INT32, "0+")


@wire.message
class CreatePartitionsTopic:
    name: str = wire.string("0+")
    count: int = wire.int32("0+")
    assignments: list[CreatePartitionsAssignment] | None = wire.array(
        CreatePartitionsAssignment, "0+", nullable="0+"
    )


@wire.message
class CreatePartitionsRequest:
    topics: list[CreatePartitionsTopic] = wire.array(CreatePartitionsTopic, "0+")
    timeout_ms: int = wire.int32("0+")
    validate_only: bool = wire.boolean("0+")


@wire.message
class CreatePartitionsTopicResult:
    name: str = wire.string("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)


@wire.message
class CreatePartitionsResponse:
    throttle_time_ms: int = wire.int32("0+")
    results: list[CreatePartitionsTopicResult] = wire.array(CreatePartitionsTopicResult, "0+")
