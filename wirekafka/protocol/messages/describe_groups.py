"""DescribeGroups (key 15): state and members of groups."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class DescribeGroupsRequest:
    groups: list[str] = wire.array(wire.STRING, "0+")
    include_authorized_operations: bool = wire.boolean("3+")


@wire.message
class DescribedGroupMember:
    member_id: str = wire.string("0+")
    group_instance_id: str | None = wire.string("4+", nullable="4+", default=None)
    client_id: str = wire.string("0+")
    client_host: str = wire.string("0+")
    member_metadata: bytes = wire.bytes_("0+")
    member_assignment: bytes = wire.bytes_("0+")


@wire.message
class DescribedGroup:
    error_code: int = wire.int16("0+")
    group_id: str = wire.string("0+")
    group_state: str = wire.string("0+")
    protocol_type: str = wire.string("0+")
    protocol_data: str = wire.string("0+")
    members: list[DescribedGroupMember] = wire.array(DescribedGroupMember, "0+")
    authorized_operations: int = wire.int32("3+", default=-2147483648)


@wire.message
class DescribeGroupsResponse:
    throttle_time_ms: int = wire.int32("1+")
    groups: list[DescribedGroup] = wire.array(DescribedGroup, "0+")
