"""DescribeConfigs: the effective configs of topics and of this broker."""

from __future__ import annotations

from wirekafka.config import BROKER_DEFAULTS
from wirekafka.handlers.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from wirekafka.protocol.rpc import Request
from wirekafka.storage.config import BROKER_LOG_KEYS, TOPIC_LOG_KEYS, topic_properties

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
SOURCE_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5


def _entry(
    name: str, value: str | None, source: int, with_synonyms: bool, *, read_only: bool
) -> DescribeConfigsResourceResult:
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=read_only,  # topic configs are altered at run time, broker configs are not
        is_default=source == SOURCE_DEFAULT_CONFIG,
        config_source=source,
        synonyms=[DescribeConfigsSynonym(name=name, value=value, source=source)]
        if with_synonyms
        else [],
    )


def _topic_configs(
    ctx: BrokerContext, name: str, synonyms: bool
) -> list[DescribeConfigsResourceResult] | None:
    topic = ctx.topics.topic(name)
    if topic is None:
        return None
    effective = topic_properties(ctx.topics.log_config(name))
    set_by_broker = {BROKER_LOG_KEYS[k][0] for k in ctx.config.properties if k in BROKER_LOG_KEYS}
    entries = []
    for key, value in sorted(effective.items()):
        if key in topic.configs:
            source = SOURCE_TOPIC_CONFIG
        elif TOPIC_LOG_KEYS[key][0] in set_by_broker:
            source = SOURCE_STATIC_BROKER_CONFIG
        else:
            source = SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, value, source, synonyms, read_only=False))
    return entries


def _broker_configs(ctx: BrokerContext, synonyms: bool) -> list[DescribeConfigsResourceResult]:
    given = ctx.config.properties
    entries = []
    for key in sorted({*BROKER_DEFAULTS, *BROKER_LOG_KEYS}):
        if key in given:
            entries.append(
                _entry(key, given[key], SOURCE_STATIC_BROKER_CONFIG, synonyms, read_only=True)
            )
        elif key in BROKER_DEFAULTS:
            entries.append(
                _entry(key, BROKER_DEFAULTS[key], SOURCE_DEFAULT_CONFIG, synonyms, read_only=True)
            )
    return entries


def _describe(
    ctx: BrokerContext, resource: DescribeConfigsResource, synonyms: bool
) -> DescribeConfigsResult:
    result = DescribeConfigsResult(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )
    entries: list[DescribeConfigsResourceResult] | None
    if resource.resource_type == RESOURCE_TOPIC:
        entries = _topic_configs(ctx, resource.resource_name, synonyms)
        if entries is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            result.error_message = f"topic {resource.resource_name!r} does not exist"
            return result
    elif resource.resource_type == RESOURCE_BROKER:
        if resource.resource_name not in ("", str(ctx.endpoint.node_id)):
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (
                f"this is broker {ctx.endpoint.node_id}, not {resource.resource_name}"
            )
            return result
        entries = _broker_configs(ctx, synonyms)
    else:
        result.error_code = ErrorCode.INVALID_REQUEST
        result.error_message = f"resource type {resource.resource_type} is not described here"
        return result
    if resource.configuration_keys is not None:
        wanted = set(resource.configuration_keys)
        entries = [e for e in entries if e.name in wanted]
    result.configs = entries
    return result


async def handle_describe_configs(ctx: BrokerContext, request: Request) -> DescribeConfigsResponse:
    body: DescribeConfigsRequest = request.body
    synonyms = request.version >= 1 and body.include_synonyms
    return DescribeConfigsResponse(
        throttle_time_ms=0, results=[_describe(ctx, r, synonyms) for r in body.resources]
    )
