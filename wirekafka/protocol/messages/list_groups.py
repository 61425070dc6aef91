"""ListGroups (key 16): the groups a broker coordinates."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class ListGroupsRequest:
    states_filter: list[str] = wire.array(wire.STRING, "4+")


@wire.message
class ListedGroup:
    group_id: str = wire.string("0+")
    protocol_type: str = wire.string("0+")
    group_state: str = wire.string("4+")


@wire.message
class ListGroupsResponse:
    throttle_time_ms: int = wire.int32("1+")
    error_code: int = wire.int16("0+")
    groups: list[ListedGroup] = wire.array(ListedGroup, "0+")
