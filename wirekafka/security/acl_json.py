"""ACLs as JSON, in the shape Kafka stores them.

One access control entry is ``{"principal": "User:alice", "permissionType": "Allow",
"host": "*", "operation": "Read"}`` (names as Kafka prints them; reading also
takes any case and Kafka's enum names). A ZooKeeper node holds a resource's
entries (see :mod:`.acl_znodes`); the embedded metadata keeps whole bindings:
an entry plus ``resourceType``, ``name`` and ``patternType``.

Bad JSON or values raise ValueError naming the problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wirekafka.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from wirekafka.security.principal import check_principal

Json = dict[str, Any]


def entry_to_json(binding: AclBinding) -> Json:
    """The principal/permission/host/operation part, keys in the order Kafka writes them."""
    return {
        "principal": binding.principal,
        "permissionType": binding.permission_type.kafka_name,
        "host": binding.host,
        "operation": binding.operation.kafka_name,
    }


def _text(value: Json, key: str) -> str:
    found = value.get(key)
    if not isinstance(found, str):
        raise ValueError(f"ACL entry {value!r}: {key!r} is missing or not a string")
    return found


def entry_from_json(
    resource_type: ResourceType, name: str, pattern_type: PatternType, value: object
) -> AclBinding:
    """The binding an entry makes for the resource pattern it is stored under."""
    if not isinstance(value, dict):
        raise ValueError(f"ACL entry {value!r} is not a JSON object")
    principal = _text(value, "principal")
    try:
        check_principal(principal)
    except ValueError as error:
        raise ValueError(f"ACL entry {value!r}: {error}") from None
    permission_type = AclPermissionType.parse(_text(value, "permissionType"))
    if permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise ValueError(f"ACL entry {value!r}: permissionType is not Allow or Deny")
    operation = AclOperation.parse(_text(value, "operation"))
    if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise ValueError(f"ACL entry {value!r}: operation is not one an ACL can have")
    return AclBinding(
        resource_type,
        name,
        pattern_type,
        principal,
        _text(value, "host"),
        operation,
        permission_type,
    )


def binding_to_json(binding: AclBinding) -> Json:
    """A whole binding: where it applies, then its entry."""
    return {
        "resourceType": binding.resource_type.kafka_name,
        "name": binding.resource_name,
        "patternType": binding.pattern_type.kafka_name,
        **entry_to_json(binding),
    }


def binding_from_json(value: object) -> AclBinding:
    if not isinstance(value, dict):
        raise ValueError(f"ACL binding {value!r} is not a JSON object")
    resource_type = ResourceType.parse(_text(value, "resourceType"))
    if resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise ValueError(f"ACL binding {value!r}: resourceType is not one an ACL can have")
    pattern_type = PatternType.parse(_text(value, "patternType"))
    if not pattern_type.is_specific:
        raise ValueError(f"ACL binding {value!r}: patternType is not LITERAL or PREFIXED")
    return entry_from_json(resource_type, _text(value, "name"), pattern_type, value)


def bindings_to_json(bindings: Iterable[AclBinding]) -> list[Json]:
    """Bindings for the embedded metadata, sorted so that equal sets write equal text."""
    return [binding_to_json(binding) for binding in sorted(bindings)]


def bindings_from_json(value: object) -> list[AclBinding]:
    if not isinstance(value, list):
        raise ValueError(f"ACL bindings {value!r} are not a JSON list")
    return [binding_from_json(item) for item in value]
