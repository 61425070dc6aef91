"""JoinGroup (key 11): become a member of a consumer group."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class JoinGroupRequestProtocol:
    name: str = wire.string("0+")
    metadata: bytes = wire.bytes_("0+")


@wire.message
class JoinGroupRequest:
    group_id: str = wire.string("0+")
    session_timeout_ms: int = wire.int32("0+")
    rebalance_timeout_ms: int = wire.int32("1+", default=-1)
    member_id: str = wire.string("0+")
    group_instance_id: str | None = wire.string("5+", nullable="5+", default=None)
    protocol_type: str = wire.string("0+")
    protocols: list[JoinGroupRequestProtocol] = wire.array(JoinGroupRequestProtocol, "0+")
    reason: str | None = wire.string("8+", nullable="8+", default=None)


@wire.message
class JoinGroupResponseMember:
    member_id: str = wire.string("0+")
    group_instance_id: str | None = wire.string("5+", nullable="5+", default=None)
    metadata: bytes = wire.bytes_("0+")


@wire.message
class JoinGroupResponse:
    throttle_time_ms: int = wire.int32("2+")
    error_code: int = wire.int16("0+")
    generation_id: int = wire.int32("0+", default=-1)
    protocol_type: str | None = wire.string("7+", nullable="7+", default=None)
    protocol_name: str | None = wire.string("0+", nullable="7+")
    leader: str = wire.string("0+")
    skip_assignment: bool = wire.boolean("9+")
    member_id: str = wire.string("0+")
    members: list[JoinGroupResponseMember] = wire.array(JoinGroupResponseMember, "0+")
