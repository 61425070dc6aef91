"""ControlledShutdown (key 7): a broker about to stop asks the controller to move
its leaderships away. v0 has a request header without the client id
(:func:`wirekafka.protocol.headers.request_header_version`); v2 adds the broker
epoch (KIP-380)."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class ControlledShutdownRequest:
    broker_id: int = wire.int32("0+")
    broker_epoch: int = wire.int64("2+", default=-1)


@wire.message
class RemainingPartition:
    topic_name: str = wire.string("0+")
    partition_index: int = wire.int32("0+")


@wire.message
class ControlledShutdownResponse:
    error_code: int = wire.int16("0+")
    remaining_partitions: list[RemainingPartition] = wire.array(RemainingPartition, "0+")
