"""AlterConfigs: replace a topic's whole set of config overrides (the older
form of IncrementalAlterConfigs, still used by the 3.x Java client's
``alterConfigs``)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.config_changes import (
    Alteration,
    alter_all,
    duplicate_keys_error,
    replaced,
    resource_responses,
)
from wirekafka.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResponse,
)
from wirekafka.protocol.rpc import Request


def _alteration(resource: AlterConfigsResource) -> Alteration:
    entries = [(c.name, c.value) for c in resource.configs]
    keys = [name for name, _ in entries]
    return Alteration(
        resource.resource_type,
        resource.resource_name,
        keys,
        duplicate_keys_error(keys),
        replaced(entries),
    )


async def handle_alter_configs(ctx: BrokerContext, request: Request) -> AlterConfigsResponse:
    body: AlterConfigsRequest = request.body
    alterations = [_alteration(r) for r in body.resources]
    outcomes = await alter_all(ctx, alterations, body.validate_only)
    return AlterConfigsResponse(
        throttle_time_ms=0, responses=resource_responses(alterations, outcomes)
    )
