"""DescribeConfigs (key 32): broker and topic configuration."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class DescribeConfigsResource:
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    configuration_keys: list[str] | None = wire.array(wire.STRING, "0+", nullable="0+")


@wire.message
class DescribeConfigsRequest:
    resources: list[DescribeConfigsResource] = wire.array(DescribeConfigsResource, "0+")
    include_synonyms: bool = wire.boolean("1+")
    include_documentation: bool = wire.boolean("3+")


@wire.message
class DescribeConfigsSynonym:
    name: str = wire.string("1+")
    value: str | None = wire.string("1+", nullable="0+")
    source: int = wire.int8("1+")


@wire.message
class DescribeConfigsResourceResult:
    name: str = wire.string("0+")
    value: str | None = wire.string("0+", nullable="0+")
    read_only: bool = wire.boolean("0+")
    is_default: bool = wire.boolean("0")
    config_source: int = wire.int8("1+", default=-1)
    is_sensitive: bool = wire.boolean("0+")
    synonyms: list[DescribeConfigsSynonym] = wire.array(DescribeConfigsSynonym, "1+")
    config_type: int = wire.int8("3+")
    documentation: str | None = wire.string("3+", nullable="0+")


@wire.message
class DescribeConfigsResult:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    configs: list[DescribeConfigsResourceResult] = wire.array(DescribeConfigsResourceResult, "0+")


@wire.message
class DescribeConfigsResponse:
    throttle_time_ms: int = wire.int32("0+")
    results: list[DescribeConfigsResult] = wire.array(DescribeConfigsResult, "0+")
