"""AlterConfigs (key 33): replace a resource's whole set of config overrides.

Deprecated by IncrementalAlterConfigs (key 44) but still served by Kafka 3.9
and used by the 3.x Java client's ``alterConfigs``.
"""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class AlterableConfig:
    name: str = wire.string("0+")
    value: str | None = wire.string("0+", nullable="0+")


@wire.message
class AlterConfigsResource:
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    configs: list[AlterableConfig] = wire.array(AlterableConfig, "0+")


@wire.message
class AlterConfigsRequest:
    resources: list[AlterConfigsResource] = wire.array(AlterConfigsResource, "0+")
    validate_only: bool = wire.boolean("0+")


@wire.message
class AlterConfigsResourceResponse:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")


@wire.message
class AlterConfigsResponse:
    throttle_time_ms: int = wire.int32("0+")
    responses: list[AlterConfigsResourceResponse] = wire.array(AlterConfigsResourceResponse, "0+")
