"""DescribeConfigs: the effective configs of topics and of this broker; without
DescribeConfigs on a topic (group, or on the cluster for a broker) the resource
answers TOPIC_ (GROUP_, CLUSTER_) AUTHORIZATION_FAILED, as in Kafka."""

from __future__ import annotations

from collections.abc import Mapping

from wirekafka.broker.context import BrokerContext
from wirekafka.config import BROKER_DEFAULTS
from wirekafka.handlers.authorization import config_resource_error
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
from wirekafka.security.acl import AclOperation
from wirekafka.storage.config import (
    BROKER_LOG_KEYS,
    broker_log_defaults,
    broker_synonyms,
    topic_properties,
)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
SOURCE_TOPIC_CONFIG = 1
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5


def _entry(
    name: str,
    value: str | None,
    synonyms: list[DescribeConfigsSynonym],
    with_synonyms: bool,
    *,
    read_only: bool,
) -> DescribeConfigsResourceResult:
    """A config and where its value comes from: the first of its synonyms, the
    default when it has none."""
    source = synonyms[0].source if synonyms else SOURCE_DEFAULT_CONFIG
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=read_only,  # topic configs are altered at run time, broker configs are not
        is_default=source == SOURCE_DEFAULT_CONFIG,
        config_source=source,
        synonyms=synonyms if with_synonyms else [],
    )


def _broker_layers(ctx: BrokerContext) -> tuple[Mapping[str, str], dict[str, str | None]]:
    """The broker's keys as given (its static config) and their defaults."""
    return ctx.config.properties, {**BROKER_DEFAULTS, **broker_log_defaults()}


def _synonyms(
    names: list[str], given: Mapping[str, str], defaults: Mapping[str, str | None]
) -> list[DescribeConfigsSynonym]:
    """Kafka's synonym list of broker keys ``names``: those given, then those with a
    default, each in the order of ``names``."""
    static = [
        DescribeConfigsSynonym(name=n, value=given[n], source=SOURCE_STATIC_BROKER_CONFIG)
        for n in names
        if n in given
    ]
    default = [
        DescribeConfigsSynonym(name=n, value=defaults[n], source=SOURCE_DEFAULT_CONFIG)
        for n in names
        if defaults.get(n) is not None
    ]
    return static + default


def _topic_configs(
    ctx: BrokerContext, name: str, with_synonyms: bool
) -> list[DescribeConfigsResourceResult] | None:
    """Each topic key: its own override, else the broker keys that set it."""
    topic = ctx.topics.topic(name)
    if topic is None:
        return None
    effective = topic_properties(ctx.topics.log_config(name))
    given, defaults = _broker_layers(ctx)
    entries = []
    for key, value in sorted(effective.items()):
        synonyms = _synonyms(broker_synonyms(key), given, defaults)
        if key in topic.configs:
            own = DescribeConfigsSynonym(name=key, value=value, source=SOURCE_TOPIC_CONFIG)
            synonyms = [own, *synonyms]
        entries.append(_entry(key, value, synonyms, with_synonyms, read_only=False))
    return entries


def _broker_configs(ctx: BrokerContext, with_synonyms: bool) -> list[DescribeConfigsResourceResult]:
    """Every broker key, given or not (a key without a value has none: ``null``)."""
    given, defaults = _broker_layers(ctx)
    entries = []
    for key in sorted({*BROKER_DEFAULTS, *BROKER_LOG_KEYS}):
        names = broker_synonyms(key) if key in BROKER_LOG_KEYS else [key]
        synonyms = _synonyms(names, given, defaults)
        # As Kafka: the synonyms from the key itself on (log.retention.ms set in hours
        # only has none, log.retention.hours set in ms only has its default).
        while synonyms and synonyms[0].name != key:
            synonyms.pop(0)
        value = given.get(key, defaults.get(key))
        entries.append(_entry(key, value, synonyms, with_synonyms, read_only=True))
    return entries


def _describe(
    ctx: BrokerContext, resource: DescribeConfigsResource, with_synonyms: bool
) -> DescribeConfigsResult:
    result = DescribeConfigsResult(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )
    entries: list[DescribeConfigsResourceResult] | None
    if resource.resource_type == RESOURCE_TOPIC:
        entries = _topic_configs(ctx, resource.resource_name, with_synonyms)
        if entries is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            result.error_message = f"topic {resource.resource_name!r} does not exist"
            return result
    elif resource.resource_type == RESOURCE_BROKER:
        if resource.resource_name == "":
            # The cluster's defaults, as Kafka names them: those set at run time for
            # every broker. Broker configs are static here, so there are none.
            entries = []
        elif resource.resource_name != str(ctx.endpoint.node_id):
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (
                f"this is broker {ctx.endpoint.node_id}, not {resource.resource_name}"
            )
            return result
        else:
            entries = _broker_configs(ctx, with_synonyms)
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
    with_synonyms = request.version >= 1 and body.include_synonyms
    results = []
    for resource in body.resources:
        denied = config_resource_error(
            ctx,
            request,
            AclOperation.DESCRIBE_CONFIGS,
            resource.resource_type,
            resource.resource_name,
        )
        if denied is None:
            results.append(_describe(ctx, resource, with_synonyms))
        else:  # before the resource is looked up, as in Kafka
            results.append(
                DescribeConfigsResult(
                    error_code=denied,
                    error_message=None,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=[],
                )
            )
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)
