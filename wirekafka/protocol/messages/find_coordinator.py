"""FindCoordinator (key 10, GroupCoordinator in 0.9): which broker coordinates a group."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class FindCoordinatorRequest:
    key: str = wire.string("0-3")
    key_type: int = wire.int8("1+")
    coordinator_keys: list[str] = wire.array(wire.STRING, "4+")


@wire.message
class Coordinator:
    key: str = wire.string("4+")
    node_id: int = wire.int32("4+")
    host: str = wire.string("4+")
    port: int = wire.int32("4+")
    error_code: int = wire.int16("4+")
    error_message: str | None = wire.string("4+", nullable="4+")


@wire.message
class FindCoordinatorResponse:
    throttle_time_ms: int = wire.int32("1+")
    error_code: int = wire.int16("0-3")
    error_message: str | None = wire.string("1-3", nullable="1-3")
    node_id: int = wire.int32("0-3")
    host: str = wire.string("0-3")
    port: int = wire.int32("0-3")
    coordinators: list[Coordinator] = wire.array(Coordinator, "4+")
