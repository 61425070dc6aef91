"""What AlterConfigs and IncrementalAlterConfigs share: resources checked as
Kafka checks them, and a topic's new set of config overrides recorded.

Topic configs are changed, recorded (``cluster-metadata.json``, or
``/config/topics/<topic>`` in ZooKeeper) and taken by the topic's open logs at
once. Broker configs are static here (``server.properties``): a change to one
is refused with INVALID_REQUEST; an empty change is accepted.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.topics import TopicError
from wirekafka.handlers.authorization import config_resource_error
from wirekafka.handlers.describe_configs import RESOURCE_BROKER, RESOURCE_TOPIC
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.alter_configs import AlterConfigsResourceResponse
from wirekafka.protocol.messages.incremental_alter_configs import ConfigOperation
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.config import TOPIC_LOG_KEYS
from wirekafka.worker_threads import METADATA, run_blocking

LIST_TOPIC_KEYS = frozenset({"cleanup.policy"})  # Kafka's LIST-typed topic configs served here

# A resource's new topic overrides from its current ones, or the error refusing them.
Change = Callable[[dict[str, str], dict[str, str]], dict[str, str] | TopicError]

ACCEPTED = TopicError(ErrorCode.NONE, "")
_OPERATIONS = frozenset(operation.value for operation in ConfigOperation)


@dataclass(frozen=True, slots=True)
class Alteration:
    """One resource of a request: its config keys, the error found before looking
    at the resource (None: none), and the change to make."""

    resource_type: int
    resource_name: str
    keys: list[str]
    refused: TopicError | None
    change: Change


async def alter_all(
    ctx: BrokerContext,
    request: Request,
    alterations: Sequence[Alteration],
    validate_only: bool,
    acl_types: Mapping[int, ResourceType],
) -> list[TopicError]:
    """Each resource's outcome (ACCEPTED, or its error), in request order; a
    resource named twice is refused both times, as Kafka does. After the
    request's own errors, a resource the principal may not AlterConfigs answers
    TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED (``acl_types``: the config
    resource types whose ACL is checked, by the ACL resource type it is on)."""
    count = Counter((a.resource_type, a.resource_name) for a in alterations)
    outcomes = []
    for alteration in alterations:
        denied = config_resource_error(
            ctx,
            request,
            AclOperation.ALTER_CONFIGS,
            alteration.resource_type,
            alteration.resource_name,
            acl_types,
        )
        if count[(alteration.resource_type, alteration.resource_name)] > 1:
            outcomes.append(
                TopicError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            )
        elif alteration.refused is not None:
            outcomes.append(alteration.refused)
        elif denied is not None:
            outcomes.append(TopicError(denied, ""))
        else:
            outcomes.append(await _alter(ctx, alteration, validate_only) or ACCEPTED)
    return outcomes


def resource_responses(
    alterations: Sequence[Alteration], outcomes: Sequence[TopicError]
) -> list[AlterConfigsResourceResponse]:
    """The answer for each resource, in the request's order."""
    return [
        AlterConfigsResourceResponse(
            error_code=outcome.code,
            error_message=outcome.message or None,
            resource_type=alteration.resource_type,
            resource_name=alteration.resource_name,
        )
        for alteration, outcome in zip(alterations, outcomes, strict=True)
    ]


def duplicate_keys_error(names: Sequence[str]) -> TopicError | None:
    if len(set(names)) != len(names):
        return TopicError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    return None


async def _alter(
    ctx: BrokerContext, alteration: Alteration, validate_only: bool
) -> TopicError | None:
    name = alteration.resource_name
    if alteration.resource_type == RESOURCE_TOPIC:
        return await _alter_topic(ctx, name, alteration.change, validate_only)
    if alteration.resource_type == RESOURCE_BROKER:
        return _broker_error(ctx, name, alteration.keys)
    return TopicError(
        ErrorCode.INVALID_REQUEST,
        f"AlterConfigs is only supported for topics and brokers, but resource type is "
        f"{alteration.resource_type}",
    )


async def _alter_topic(
    ctx: BrokerContext, name: str, change: Change, validate_only: bool
) -> TopicError | None:
    if not name:
        return TopicError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    alter = functools.partial(
        ctx.topics.alter_topic_configs, name, change, validate_only=validate_only
    )
    return await run_blocking(METADATA, alter)


def _broker_error(ctx: BrokerContext, name: str, keys: Sequence[str]) -> TopicError | None:
    if name:
        try:
            broker_id = int(name)
        except ValueError:
            return TopicError(
                ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
            )
        if broker_id != ctx.endpoint.node_id:
            return TopicError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.endpoint.node_id}, but received {name}",
            )
    if keys:
        return TopicError(
            ErrorCode.INVALID_REQUEST,
            "broker configs are static on this broker (server.properties): cannot update "
            + ", ".join(sorted(set(keys))),
        )
    return None


def replaced(entries: Sequence[tuple[str, str | None]]) -> Change:
    """AlterConfigs: the entries are the topic's whole set of overrides."""

    def change(current: dict[str, str], effective: dict[str, str]) -> dict[str, str] | TopicError:
        nulls = [name for name, value in entries if value is None]
        if nulls:
            return TopicError(
                ErrorCode.INVALID_CONFIG,
                "Null value not supported for topic configs: " + ",".join(nulls),
            )
        return {name: value for name, value in entries if value is not None}

    return change


def incremental(operations: Sequence[tuple[str, int, str | None]]) -> Change:
    """IncrementalAlterConfigs: SET, DELETE, APPEND to or SUBTRACT from a list key."""

    def change(current: dict[str, str], effective: dict[str, str]) -> dict[str, str] | TopicError:
        configs = dict(current)
        for name, operation, value in operations:
            if operation == ConfigOperation.DELETE:
                configs.pop(name, None)
                continue
            assert value is not None  # checked by the handler, as Kafka does first
            if operation == ConfigOperation.SET:
                configs[name] = value
                continue
            if name not in TOPIC_LOG_KEYS:
                return TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
            verb = "append" if operation == ConfigOperation.APPEND else "subtract"
            if name not in LIST_TOPIC_KEYS:
                return TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Config value {verb} is not allowed for config key: {name}",
                )
            old = _parts(configs.get(name, effective.get(name, "")))
            given = _parts(value)
            if operation == ConfigOperation.APPEND:
                new = old + [part for part in given if part not in old]
            else:
                new = [part for part in old if part not in given]
            configs[name] = ",".join(new)
        return configs

    return change


def _parts(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def operations_error(operations: Sequence[tuple[str, int, str | None]]) -> TopicError | None:
    """What Kafka refuses before looking at the resource: duplicate keys, unknown
    operations, null values other than for DELETE."""
    duplicated = duplicate_keys_error([name for name, _, _ in operations])
    if duplicated is not None:
        return duplicated
    for name, operation, _ in operations:
        if operation not in _OPERATIONS:
            return TopicError(
                ErrorCode.INVALID_REQUEST, f"Unknown config operation {operation} for {name}"
            )
    nulls = [
        name
        for name, operation, value in operations
        if operation != ConfigOperation.DELETE and value is None
    ]
    if nulls:
        return TopicError(
            ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
        )
    return None
