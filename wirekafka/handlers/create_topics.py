"""CreateTopics: partitions, replication factor (``default.replication.factor`` for
-1; at most the live brokers) or each partition's replicas (assignments: live
brokers, no broker twice, as many for every partition), per-topic configs,
validate_only."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.topics import TopicError
from wirekafka.handlers.authorization import NOTHING_DENIED, cluster_authorized, denied_names
from wirekafka.handlers.describe_configs import SOURCE_DEFAULT_CONFIG, SOURCE_TOPIC_CONFIG
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.config import topic_properties
from wirekafka.worker_threads import METADATA, run_blocking

DEFAULT_FROM_BROKER = -1


Assignment = tuple[tuple[int, ...], ...]


def _layout(ctx: BrokerContext, topic: CreatableTopic) -> tuple[int, int, Assignment] | TopicError:
    """Partitions, replication factor and the replicas asked for (empty: none)."""
    if topic.assignments:
        if (
            topic.num_partitions != DEFAULT_FROM_BROKER
            or topic.replication_factor != DEFAULT_FROM_BROKER
        ):
            return TopicError(
                ErrorCode.INVALID_REQUEST,
                "give either replica assignments or partitions and replication factor, not both",
            )
        indexes = sorted(a.partition_index for a in topic.assignments)
        if indexes != list(range(len(indexes))):
            return TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partitions {indexes} are not 0..n-1"
            )
        by_partition = {a.partition_index: tuple(a.broker_ids) for a in topic.assignments}
        assignment = tuple(by_partition[p] for p in indexes)
        empty = [p for p, replicas in enumerate(assignment) if not replicas]
        if empty:
            return TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partitions {empty} are given no replicas"
            )
        return len(indexes), len(assignment[0]), assignment
    partitions = topic.num_partitions
    if partitions == DEFAULT_FROM_BROKER:
        partitions = ctx.config.num_partitions
    replication = topic.replication_factor
    if replication == DEFAULT_FROM_BROKER:
        replication = ctx.config.default_replication_factor
    return partitions, replication, ()


async def _create(
    ctx: BrokerContext, topic: CreatableTopic, validate_only: bool, with_configs: bool
) -> CreatableTopicResult:
    """Create (or only check) the topic; its partitions, replication factor and
    configs are given back when ``with_configs`` (DescribeConfigs on it)."""
    result = CreatableTopicResult(name=topic.name, error_code=ErrorCode.NONE, error_message=None)
    layout = _layout(ctx, topic)
    if isinstance(layout, TopicError):
        error: TopicError | None = layout
    else:
        partitions, replication, assignment = layout
        configs = {c.name: c.value for c in topic.configs if c.value is not None}
        if validate_only:
            error = ctx.topics.check_new_topic(
                topic.name, partitions, replication, configs, assignment
            )
        else:
            error = await run_blocking(
                METADATA,
                ctx.topics.create_topic,
                topic.name,
                partitions,
                replication,
                configs,
                assignment,
            )
    if error is not None:
        result.error_code, result.error_message = error.code, error.message
        return result
    if not with_configs:
        result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return result
    result.num_partitions, result.replication_factor = partitions, replication
    effective = topic_properties(ctx.config.log.with_overrides(configs))
    result.configs = [
        CreatableTopicConfigs(
            name=key,
            value=value,
            config_source=SOURCE_TOPIC_CONFIG if key in configs else SOURCE_DEFAULT_CONFIG,
        )
        for key, value in sorted(effective.items())
    ]
    return result


async def handle_create_topics(ctx: BrokerContext, request: Request) -> CreateTopicsResponse:
    body: CreateTopicsRequest = request.body
    seen: dict[str, int] = {}
    for topic in body.topics:
        seen[topic.name] = seen.get(topic.name, 0) + 1
    # As Kafka: Create on the cluster, or else on each topic; DescribeConfigs on a
    # topic to be given its configs back (TOPIC_AUTHORIZATION_FAILED in
    # topic_config_error_code otherwise, except where the creation failed).
    uncreatable: frozenset[str] = NOTHING_DENIED
    if ctx.authorizer is not None and not cluster_authorized(ctx, request, AclOperation.CREATE):
        uncreatable = denied_names(ctx, request, AclOperation.CREATE, ResourceType.TOPIC, seen)
    hidden = denied_names(ctx, request, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, seen)
    results = []
    for topic in body.topics:
        name = topic.name
        if seen[name] > 1:
            result = CreatableTopicResult(
                name=name,
                error_code=ErrorCode.INVALID_REQUEST,
                error_message=f"topic {name!r} appears more than once in the request",
            )
        elif uncreatable and name in uncreatable:
            result = CreatableTopicResult(
                name=name,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                error_message="Authorization failed.",
            )
        else:
            results.append(await _create(ctx, topic, body.validate_only, name not in hidden))
            continue
        if hidden and name in hidden:
            result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        results.append(result)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)
