"""CreateAcls (key 30): add ACL bindings."""

from __future__ import annotations

from wirekafka.protocol import schema as wire
from wirekafka.protocol.messages.describe_acls import LITERAL


@wire.message
class AclCreation:
    resource_type: int = wire.int8("0+")
    resource_name: str = wire.string("0+")
    resource_pattern_type: int = wire.int8("1+", default=LITERAL)
    principal: str = wire.string("0+")
    host: str = wire.string("0+")
    operation: int = wire.int8("0+")
    permission_type: int = wire.int8("0+")


@wire.message
class CreateAclsRequest:
    creations: list[AclCreation] = wire.array(AclCreation, "0+")


@wire.message
class AclCreationResult:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+")


@wire.message
class CreateAclsResponse:
    throttle_time_ms: int = wire.int32("0+")
    results: list[AclCreationResult] = wire.array(AclCreationResult, "0+")
