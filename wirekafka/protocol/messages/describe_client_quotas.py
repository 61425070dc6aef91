"""DescribeClientQuotas (key 48): the quotas set for users, client ids and IPs matching a filter."""

from __future__ import annotations

from wirekafka.protocol import schema as wire

# MatchType of a filter component
MATCH_EXACT = 0  # the entity named by ``match``
MATCH_DEFAULT = 1  # the entity type's default (``match`` null)
MATCH_ANY = 2  # any entity of the type (``match`` null)


@wire.message
class ComponentData:
    # "user", "client-id" or "ip"
    entity_type: str = wire.string("0+")
    match_type: int = wire.int8("0+")
    match: str | None = wire.string("0+", nullable="0+", default=None)


@wire.message
class DescribeClientQuotasRequest:
    components: list[ComponentData] = wire.array(ComponentData, "0+")
    # leave out entities with entity types the components do not name
    strict: bool = wire.boolean("0+")


@wire.message
class EntityData:
    entity_type: str = wire.string("0+")
    # null: the entity type's default
    entity_name: str | None = wire.string("0+", nullable="0+", default=None)


@wire.message
class ValueData:
    key: str = wire.string("0+")
    value: float = wire.float64("0+")


@wire.message
class EntryData:
    entity: list[EntityData] = wire.array(EntityData, "0+")
    values: list[ValueData] = wire.array(ValueData, "0+")


@wire.message
class DescribeClientQuotasResponse:
    throttle_time_ms: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)
    entries: list[EntryData] | None = wire.array(EntryData, "0+", nullable="0+")
