"""The built-in ACL authorizer: holds the bindings and answers whether a principal
may perform an operation on a resource, with Kafka's rules.

* Super users may do everything.
* A binding applies to a resource when it names it literally, names the
  wildcard ``*`` literally, or is PREFIXED with a prefix of its name; to a
  principal when it names it or ``User:*``; to a host when it names the
  client's address or ``*``.
* A Deny that applies wins over any Allow. A Deny must name the operation
  (or ALL); an Allow of Read, Write, Delete or Alter also allows Describe,
  and an Allow of AlterConfigs also allows DescribeConfigs; ALL covers every
  operation.
* When no binding at all names the resource (whatever its principal or
  operation), ``allow.everyone.if.no.acl.found`` decides.

Lookups cost a dict lookup for the literal name and the wildcard plus one per
distinct prefix length held for the resource type, never a scan of every ACL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from wirekafka.security.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    operations_bit_field,
)
from wirekafka.security.principal import WILDCARD_USER, check_principal

# authorizer.class.name values that select this authorizer: Kafka's own two
AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    }
)

_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}

# authorize_any first asks about one made-up literal name, as Kafka does, so that
# super users and the no-ACL default apply to it as to any resource
_PROBE_NAME = "hardcode"


def plain_host(client_host: str) -> str:
    """The client's address as ACLs name it: Kafka shows ``/127.0.0.1``, ACLs hold ``127.0.0.1``."""
    return client_host.removeprefix("/")


def _allows(binding: AclBinding, operation: AclOperation) -> bool:
    granted = binding.operation
    return granted in (AclOperation.ALL, operation) or granted in _IMPLIED_BY.get(
        operation, frozenset()
    )


def _denies(binding: AclBinding, operation: AclOperation) -> bool:
    return binding.operation in (AclOperation.ALL, operation)


class AclAuthorizer:
    """ACL bindings and the decisions they make; no I/O (the broker persists changes)."""

    def __init__(
        self,
        super_users: frozenset[str] = frozenset(),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = super_users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._by_pattern: dict[ResourcePattern, set[AclBinding]] = {}
        # per resource type: prefix -> bindings, and the prefix lengths present
        self._prefixed: dict[ResourceType, dict[str, set[AclBinding]]] = {}
        self._prefix_lengths: dict[ResourceType, dict[int, int]] = {}

    # changes

    def add(self, bindings: Iterable[AclBinding]) -> list[AclBinding]:
        """Hold ``bindings`` (checked by the caller, see acl.invalid_binding);
        the ones not held before, in the order given."""
        added = []
        for binding in bindings:
            held = self._by_pattern.setdefault(binding.pattern, set())
            if binding in held:
                continue
            held.add(binding)
            if binding.pattern_type == PatternType.PREFIXED:
                self._index_prefix(binding)
            added.append(binding)
        return added

    def remove(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """Drop the bindings ``binding_filter`` matches; those dropped, sorted."""
        removed = self.describe(binding_filter)
        for binding in removed:
            self._discard(binding)
        return removed

    def replace(self, pattern: ResourcePattern, bindings: Iterable[AclBinding]) -> None:
        """Make ``bindings`` the whole set held for ``pattern`` (as a ZooKeeper
        change notification says: reread that resource's node)."""
        for binding in list(self._by_pattern.get(pattern, ())):
            self._discard(binding)
        self.add(binding for binding in bindings if binding.pattern == pattern)

    def _index_prefix(self, binding: AclBinding) -> None:
        by_prefix = self._prefixed.setdefault(binding.resource_type, {})
        held = by_prefix.setdefault(binding.resource_name, set())
        if not held:
            lengths = self._prefix_lengths.setdefault(binding.resource_type, {})
            length = len(binding.resource_name)
            lengths[length] = lengths.get(length, 0) + 1
        held.add(binding)

    def _discard(self, binding: AclBinding) -> None:
        held = self._by_pattern.get(binding.pattern)
        if held is None or binding not in held:
            return
        held.discard(binding)
        if not held:
            del self._by_pattern[binding.pattern]
        if binding.pattern_type != PatternType.PREFIXED:
            return
        by_prefix = self._prefixed[binding.resource_type]
        prefixed = by_prefix[binding.resource_name]
        prefixed.discard(binding)
        if not prefixed:
            del by_prefix[binding.resource_name]
            lengths = self._prefix_lengths[binding.resource_type]
            length = len(binding.resource_name)
            lengths[length] -= 1
            if not lengths[length]:
                del lengths[length]

    # queries

    def describe(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings ``binding_filter`` matches, sorted."""
        return sorted(
            binding
            for pattern, held in self._by_pattern.items()
            if binding_filter.matches_pattern(pattern)
            for binding in held
            if binding_filter.matches(binding)
        )

    def bindings_for(self, pattern: ResourcePattern) -> list[AclBinding]:
        """Every binding held for exactly ``pattern`` (one ZooKeeper node's worth), sorted."""
        return sorted(self._by_pattern.get(pattern, ()))

    def __len__(self) -> int:
        return sum(len(held) for held in self._by_pattern.values())

    def _applying(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        """The bindings whose pattern covers the literal resource ``name``."""
        for literal in (name, WILDCARD_RESOURCE) if name != WILDCARD_RESOURCE else (name,):
            yield from self._by_pattern.get(
                ResourcePattern(resource_type, literal, PatternType.LITERAL), ()
            )
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            by_prefix = self._prefixed[resource_type]
            for length in lengths:
                if length <= len(name):
                    yield from by_prefix.get(name[:length], ())

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """May ``principal``, connected from ``host``, perform ``operation`` on the
        resource ``resource_type``/``resource_name`` (a literal name)?"""
        if principal in self.super_users:
            return True
        host = plain_host(host)
        found_any = False
        allowed = False
        for binding in self._applying(resource_type, resource_name):
            found_any = True
            if binding.principal not in (principal, WILDCARD_USER):
                continue
            if binding.host not in (host, WILDCARD_HOST):
                continue
            if binding.permission_type == AclPermissionType.DENY:
                if _denies(binding, operation):
                    return False
            elif binding.permission_type == AclPermissionType.ALLOW and _allows(binding, operation):
                allowed = True
        return allowed if found_any else self.allow_everyone_if_no_acl_found

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """May ``principal`` perform ``operation`` on at least one resource of
        ``resource_type``? Kafka's authorizeByResourceType: an Allow (of exactly
        this operation or ALL) on some literal name or prefix that no Deny covers.
        Kafka asks it where InitProducerId lacks IdempotentWrite on the cluster."""
        if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"authorize_any needs a resource type, not {resource_type.name}")
        if operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise ValueError(f"authorize_any needs an operation, not {operation.name}")
        if self.authorize(principal, host, operation, resource_type, _PROBE_NAME):
            return True
        host = plain_host(host)
        allowed: dict[PatternType, set[str]] = {
            PatternType.LITERAL: set(),
            PatternType.PREFIXED: set(),
        }
        denied: dict[PatternType, set[str]] = {
            PatternType.LITERAL: set(),
            PatternType.PREFIXED: set(),
        }
        for pattern, held in self._by_pattern.items():
            if pattern.resource_type != resource_type:
                continue
            for binding in held:
                if binding.host not in (host, WILDCARD_HOST):
                    continue
                if binding.principal not in (principal, WILDCARD_USER):
                    continue
                if binding.operation not in (operation, AclOperation.ALL):
                    continue
                if binding.permission_type == AclPermissionType.DENY:
                    if (
                        pattern.pattern_type == PatternType.LITERAL
                        and pattern.name == WILDCARD_RESOURCE
                    ):
                        return False
                    denied[pattern.pattern_type].add(pattern.name)
                elif binding.permission_type == AclPermissionType.ALLOW:
                    allowed[pattern.pattern_type].add(pattern.name)
        if WILDCARD_RESOURCE in allowed[PatternType.LITERAL]:
            return True
        for pattern_type, names in allowed.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in denied[PatternType.LITERAL]:
                    continue
                # a PREFIXED Deny on any prefix of the allowed name covers it
                if not any(
                    name[:end] in denied[PatternType.PREFIXED] for end in range(1, len(name) + 1)
                ):
                    return True
        return False

    def authorized_operations(
        self, principal: str, host: str, resource_type: ResourceType, resource_name: str
    ) -> int:
        """The bit field of the operations supported on ``resource_type`` that
        ``principal`` may perform on this resource (Metadata's
        topic_authorized_operations, DescribeGroups', DescribeCluster's)."""
        return operations_bit_field(
            {
                operation
                for operation in SUPPORTED_OPERATIONS[resource_type]
                if self.authorize(principal, host, operation, resource_type, resource_name)
            }
        )


# broker config keys the authorizer reads, with Kafka's defaults
AUTHORIZER_DEFAULTS: dict[str, str] = {
    "authorizer.class.name": "",
    "super.users": "",
    "allow.everyone.if.no.acl.found": "false",
}


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool


def authorizer_config(properties: Mapping[str, str]) -> AuthorizerConfig | None:
    """The authorizer ``properties`` ask for, or None (no ``authorizer.class.name``:
    every request is allowed, as in Kafka). ValueError naming the key when a value
    is not one this broker can honour."""
    class_name = properties.get("authorizer.class.name", "").strip()
    if not class_name:
        return None
    if class_name not in AUTHORIZER_CLASS_NAMES:
        raise ValueError(
            f"authorizer.class.name={class_name}: the built-in ACL authorizer answers to "
            f"{' or '.join(sorted(AUTHORIZER_CLASS_NAMES))}"
        )
    super_users = set()
    for part in properties.get("super.users", "").split(";"):
        if part.strip():
            try:
                super_users.add(check_principal(part.strip()))
            except ValueError as error:
                raise ValueError(f"super.users: {error}") from None
    allow_text = properties.get("allow.everyone.if.no.acl.found", "false").strip().lower()
    if allow_text not in ("true", "false"):
        raise ValueError(f"allow.everyone.if.no.acl.found={allow_text!r}: must be true or false")
    return AuthorizerConfig(frozenset(super_users), allow_text == "true")


def authorizer_from_properties(properties: Mapping[str, str]) -> AclAuthorizer | None:
    """An empty authorizer configured as ``properties`` say, or None without one."""
    config = authorizer_config(properties)
    if config is None:
        return None
    return AclAuthorizer(config.super_users, config.allow_everyone_if_no_acl_found)
