"""InitProducerId (key 22): a producer id and epoch for idempotent producing."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class InitProducerIdRequest:
    transactional_id: str | None = wire.string("0+", nullable="0+")
    transaction_timeout_ms: int = wire.int32("0+")
    producer_id: int = wire.int64("3+", default=-1)
    producer_epoch: int = wire.int16("3+", default=-1)


@wire.message
class InitProducerIdResponse:
    throttle_time_ms: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    producer_id: int = wire.int64("0+", default=-1)
    producer_epoch: int = wire.int16("0+")
