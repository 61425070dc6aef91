"""LeaveGroup (key 13): leave a consumer group."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class MemberIdentity:
    member_id: str = wire.string("3+")
    group_instance_id: str | None = wire.string("3+", nullable="3+", default=None)
    reason: str | None = wire.string("5+", nullable="5+", default=None)


@wire.message
class LeaveGroupRequest:
    group_id: str = wire.string("0+")
    member_id: str = wire.string("0-2")
    members: list[MemberIdentity] = wire.array(MemberIdentity, "3+")


@wire.message
class MemberResponse:
    member_id: str = wire.string("3+")
    group_instance_id: str | None = wire.string("3+", nullable="3+")
    error_code: int = wire.int16("3+")


@wire.message
class LeaveGroupResponse:
    throttle_time_ms: int = wire.int32("1+")
    error_code: int = wire.int16("0+")
    members: list[MemberResponse] = wire.array(MemberResponse, "3+")
