"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from
single config keys of a resource (KIP-339)."""

from __future__ import annotations

import enum

from wirekafka.protocol import schema as wire


class ConfigOperation(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@wire.message
class AlterableConfig:
    name: str = wire.string("0+")
    config_operation: int = wire.int8("0+")
    value: str | None = wire.string("0+", nullable="0+")


@wire.message
class AlterConfigsResource:
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    configs: list[AlterableConfig] = wire.array(AlterableConfig, "0+")


@wire.message
class IncrementalAlterConfigsRequest:
    resources: list[AlterConfigsResource] = wire.array(AlterConfigsResource, "0+")
    validate_only: bool = wire.boolean("0+")


@wire.message
class AlterConfigsResourceResponse:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")


@wire.message
class IncrementalAlterConfigsResponse:
    throttle_time_ms: int = wire.int32("0+")
    responses: list[AlterConfigsResourceResponse] = wire.array(AlterConfigsResourceResponse, "0+")
