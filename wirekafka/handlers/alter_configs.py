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
from wirekafka.security.api_acls import (
    CONFIG_BROKER,
    CONFIG_CLIENT_METRICS,
    CONFIG_RESOURCE_ACL_TYPES,
    CONFIG_TOPIC,
)

# Kafka's AlterConfigs checks topics and brokers (and client metrics); a broker
# logger or a group is an invalid request to it
_ACL_TYPES = {
    config_type: CONFIG_RESOURCE_ACL_TYPES[config_type]
    for config_type in (CONFIG_TOPIC, CONFIG_BROKER, CONFIG_CLIENT_METRICS)
}


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
    outcomes = await alter_all(ctx, request, alterations, body.validate_only, _ACL_TYPES)
    return AlterConfigsResponse(
        throttle_time_ms=0, responses=resource_responses(alterations, outcomes)
    )
