"""DeleteAcls (key 31): remove the ACLs each filter matches."""

from __future__ import annotations

from wirekafka.protocol import schema as wire
from wirekafka.protocol.messages.describe_acls import LITERAL


@wire.message
class DeleteAclsFilter:
    resource_type_filter: int = wire.int8("0+")
    resource_name_filter: str | None = wire.string("0+", nullable="0+", default=None)
    pattern_type_filter: int = wire.int8("1+", default=LITERAL)
    principal_filter: str | None = wire.string("0+", nullable="0+", default=None)
    host_filter: str | None = wire.string("0+", nullable="0+", default=None)
    operation: int = wire.int8("0+")
    permission_type: int = wire.int8("0+")


@wire.message
class DeleteAclsRequest:
    filters: list[DeleteAclsFilter] = wire.array(DeleteAclsFilter, "0+")


@wire.message
class DeleteAclsMatchingAcl:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    pattern_type: int = wire.int8("1+", default=LITERAL)
    principal: str = wire.string("0+")
    host: str = wire.string("0+")
    operation: int = wire.int8("0+")
    permission_type: int = wire.int8("0+")


@wire.message
class DeleteAclsFilterResult:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")
    matching_acls: list[DeleteAclsMatchingAcl] = wire.array(DeleteAclsMatchingAcl, "0+")


@wire.message
class DeleteAclsResponse:
    throttle_time_ms: int = wire.int32("0+")
    filter_results: list[DeleteAclsFilterResult] = wire.array(DeleteAclsFilterResult, "0+")
