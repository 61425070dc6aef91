"""DescribeAcls (key 29): the ACLs a filter matches."""

from __future__ import annotations

from wirekafka.protocol import schema as wire

LITERAL = 3  # the pattern type v0 implies (PatternType.LITERAL)


@wire.message
class DescribeAclsRequest:
    resource_type_filter: int = wire.int8("0+")
    resource_name_filter: str | None = wire.string("0+", nullable="0+", default=None)
    pattern_type_filter: int = wire.int8("1+", default=LITERAL)
    principal_filter: str | None = wire.string("0+", nullable="0+", default=None)
    host_filter: str | None = wire.string("0+", nullable="0+", default=None)
    operation: int = wire.int8("0+")
    permission_type: int = wire.int8("0+")


@wire.message
class AclDescription:
    principal: str = wire.string("0+")
    host: str = wire.string("0+")
    operation: int = wire.int8("0+")
    permission_type: int = wire.int8("0+")


@wire.message
class DescribeAclsResource:
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    pattern_type: int = wire.int8("1+", default=LITERAL)
    acls: list[AclDescription] = wire.array(AclDescription, "0+")


@wire.message
class DescribeAclsResponse:
    throttle_time_ms: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")
    resources: list[DescribeAclsResource] = wire.array(DescribeAclsResource, "0+")
