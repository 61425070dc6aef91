"""DeleteGroups (key 42)."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class DeleteGroupsRequest:
    groups_names: list[str] = wire.array(wire.STRING, "0+")


@wire.message
class DeletableGroupResult:
    group_id: str = wire.string("0+")
    error_code: int = wire.int16("0+")


@wire.message
class DeleteGroupsResponse:
    throttle_time_ms: int = wire.int32("0+")
    results: list[DeletableGroupResult] = wire.array(DeletableGroupResult, "0+")
