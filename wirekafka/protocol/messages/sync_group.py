"""SyncGroup (key 14): hand out the leader's partition assignment."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class SyncGroupRequestAssignment:
    member_id: str = wire.string("0+")
    assignment: bytes = wire.bytes_("0+")


@wire.message
class SyncGroupRequest:
    group_id: str = wire.string("0+")
    generation_id: int = wire.int32("0+")
    member_id: str = wire.string("0+")
    group_instance_id: str | None = wire.string("3+", nullable="3+", default=None)
    protocol_type: str | None = wire.string("5+", nullable="5+", default=None)
    protocol_name: str | None = wire.string("5+", nullable="5+", default=None)
    assignments: list[SyncGroupRequestAssignment] = wire.array(SyncGroupRequestAssignment, "0+")


@wire.message
class SyncGroupResponse:
    throttle_time_ms: int = wire.int32("1+")
    error_code: int = wire.int16("0+")
    protocol_type: str | None = wire.string("5+", nullable="5+", default=None)
    protocol_name: str | None = wire.string("5+", nullable="5+", default=None)
    assignment: bytes = wire.bytes_("0+")
