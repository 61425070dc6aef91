"""Where and how a ZooKeeper-mode Kafka cluster keeps its ACLs (sans-IO: paths and bytes).

* A LITERAL pattern's entries live at ``/kafka-acl/<ResourceType>/<name>``, a
  PREFIXED one's at ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``
  (``Topic``, ``Group``, ``Cluster``, ``TransactionalId``, ...). The node holds
  ``{"version":1,"acls":[<entry>, ...]}`` (entries as in :mod:`.acl_json`);
  Kafka deletes the node when its last entry goes.
* After changing a node, a broker creates a sequential node
  ``acl_changes_<10 digits>`` naming the pattern, under ``/kafka-acl-changes``
  for LITERAL (text ``TOPIC:name``) or ``/kafka-acl-extended-changes`` for
  PREFIXED (JSON ``{"version":1,"resourceType":"TOPIC","name":...,"patternType":"PREFIXED"}``).
  Every broker watches both and rereads the named node.

Bad bytes raise ValueError naming the problem.
"""

from __future__ import annotations

import json

from wirekafka.security.acl import (
    AclBinding,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from wirekafka.security.acl_json import entry_from_json, entry_to_json

ACL_ROOTS: dict[PatternType, str] = {
    PatternType.LITERAL: "/kafka-acl",
    PatternType.PREFIXED: "/kafka-acl-extended/prefixed",
}
ACL_CHANGE_ROOTS: dict[PatternType, str] = {
    PatternType.LITERAL: "/kafka-acl-changes",
    PatternType.PREFIXED: "/kafka-acl-extended-changes",
}
ACL_CHANGE_PREFIX = "acl_changes_"  # the sequential nodes' name before ZooKeeper's 10 digits
ZK_ACL_VERSION = 1
_CHANGE_EVENT_VERSION = 1

# the resource types a binding can have: one child per type under each root
ACL_RESOURCE_TYPES = tuple(
    resource_type
    for resource_type in ResourceType
    if resource_type not in (ResourceType.UNKNOWN, ResourceType.ANY)
)


def _root(pattern_type: PatternType) -> str:
    root = ACL_ROOTS.get(pattern_type)
    if root is None:
        raise ValueError(f"pattern type {pattern_type.name} is not stored in ZooKeeper")
    return root


def acl_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    """The parent of every node of this pattern and resource type (``/kafka-acl/Topic``)."""
    return f"{_root(pattern_type)}/{resource_type.kafka_name}"


def acl_path(pattern: ResourcePattern) -> str:
    """The node holding ``pattern``'s entries."""
    if "/" in pattern.name:
        raise ValueError(f"resource name {pattern.name!r} cannot be a znode name")
    return f"{acl_type_path(pattern.pattern_type, pattern.resource_type)}/{pattern.name}"


def acl_paths_to_create() -> list[str]:
    """The paths Kafka makes at startup: each root, its per-type children, the change roots."""
    paths = []
    for pattern_type in ACL_ROOTS:
        paths.append(_root(pattern_type))
        paths.extend(acl_type_path(pattern_type, rt) for rt in ACL_RESOURCE_TYPES)
    paths.extend(ACL_CHANGE_ROOTS.values())
    return paths


def encode_zk_acls(bindings: list[AclBinding]) -> bytes:
    """The node data for one resource pattern's bindings (all of the same pattern)."""
    patterns = {binding.pattern for binding in bindings}
    if len(patterns) > 1:
        raise ValueError(f"one node holds one resource pattern's ACLs, not {len(patterns)}")
    document = {
        "version": ZK_ACL_VERSION,
        "acls": [entry_to_json(binding) for binding in sorted(bindings)],
    }
    return json.dumps(document, separators=(",", ":")).encode()


def _json_object(data: bytes, what: str) -> dict[str, object]:
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{what} is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{what} is not a JSON object")
    return document


def decode_zk_acls(
    resource_type: ResourceType, name: str, pattern_type: PatternType, data: bytes | None
) -> list[AclBinding]:
    """The bindings a node at ``resource_type``/``name`` under ``pattern_type``'s root holds."""
    if not data:
        return []
    document = _json_object(data, f"the ACL node for {resource_type.kafka_name} {name!r}")
    if document.get("version") != ZK_ACL_VERSION:
        raise ValueError(f"ACL node version {document.get('version')!r} is not {ZK_ACL_VERSION}")
    entries = document.get("acls")
    if not isinstance(entries, list):
        raise ValueError("the ACL node has no 'acls' list")
    return [entry_from_json(resource_type, name, pattern_type, entry) for entry in entries]


def acl_change_node(pattern: ResourcePattern) -> tuple[str, bytes]:
    """The path prefix to create a sequential node at, and its data, announcing
    that ``pattern``'s node changed."""
    root = f"{ACL_CHANGE_ROOTS[pattern.pattern_type]}/{ACL_CHANGE_PREFIX}"
    if pattern.pattern_type == PatternType.LITERAL:
        return root, f"{pattern.resource_type.name}:{pattern.name}".encode()
    event = {
        "version": _CHANGE_EVENT_VERSION,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return root, json.dumps(event, separators=(",", ":")).encode()


def _change_resource_type(text: str) -> ResourceType:
    resource_type = ResourceType.parse(text)
    if resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise ValueError(f"ACL change names resource type {text!r}")
    return resource_type


def _decode_literal_change(data: bytes) -> ResourcePattern:
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise ValueError(f"ACL change {data!r} is not UTF-8") from None
    type_text, sep, name = text.partition(":")
    if not sep:
        raise ValueError(f"ACL change {text!r} is not ResourceType:name")
    return ResourcePattern(_change_resource_type(type_text), name, PatternType.LITERAL)


def _decode_extended_change(data: bytes) -> ResourcePattern:
    event = _json_object(data, "the ACL change")
    version = event.get("version")
    if not isinstance(version, int) or version > _CHANGE_EVENT_VERSION:
        raise ValueError(f"ACL change version {version!r} is not supported")
    type_text, name, pattern_text = (event.get(k) for k in ("resourceType", "name", "patternType"))
    if not (isinstance(type_text, str) and isinstance(name, str) and isinstance(pattern_text, str)):
        raise ValueError(f"ACL change {event!r} lacks resourceType, name or patternType")
    pattern_type = PatternType.parse(pattern_text)
    if not pattern_type.is_specific:
        raise ValueError(f"ACL change names pattern type {pattern_text!r}")
    return ResourcePattern(_change_resource_type(type_text), name, pattern_type)


def decode_acl_change(pattern_type: PatternType, data: bytes) -> ResourcePattern:
    """The pattern a change node under ``pattern_type``'s change root names."""
    if pattern_type == PatternType.LITERAL:
        return _decode_literal_change(data)
    return _decode_extended_change(data)
