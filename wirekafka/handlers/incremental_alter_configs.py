"""IncrementalAlterConfigs: change single keys of a topic's configs (KIP-339)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.config_changes import (
    Alteration,
    alter_all,
    incremental,
    operations_error,
    resource_responses,
)
from wirekafka.protocol.messages.incremental_alter_configs import (
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.api_acls import CONFIG_RESOURCE_ACL_TYPES


def _alteration(resource: AlterConfigsResource) -> Alteration:
    operations = [(c.name, c.config_operation, c.value) for c in resource.configs]
    return Alteration(
        resource.resource_type,
        resource.resource_name,
        [name for name, _, _ in operations],
        operations_error(operations),
        incremental(operations),
    )


async def handle_incremental_alter_configs(
    ctx: BrokerContext, request: Request
) -> IncrementalAlterConfigsResponse:
    body: IncrementalAlterConfigsRequest = request.body
    alterations = [_alteration(r) for r in body.resources]
    outcomes = await alter_all(
        ctx, request, alterations, body.validate_only, CONFIG_RESOURCE_ACL_TYPES
    )
    return IncrementalAlterConfigsResponse(
        throttle_time_ms=0, responses=resource_responses(alterations, outcomes)
    )
