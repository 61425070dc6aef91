"""Heartbeat (key 12): keep a group membership alive."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class HeartbeatRequest:
    group_id: str = wire.string("0+")
    generation_id: int = wire.int32("0+")
    member_id: str = wire.string("0+")
    group_instance_id: str | None = wire.string("3+", nullable="3+", default=None)


@wire.message
class HeartbeatResponse:
    throttle_time_ms: int = wire.int32("1+")
    error_code: int = wire.int16("0+")
