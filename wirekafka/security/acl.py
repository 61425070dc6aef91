"""ACLs as Kafka has them: resource types, pattern types, operations, permissions,
bindings, the filters that find bindings, and the checks a new binding must pass.

Codes are Kafka's wire codes (int8 in CreateAcls, DescribeAcls, DeleteAcls).
Names print as Kafka prints them: ``Topic``, ``Read``, ``Allow`` (Pascal case)
and ``LITERAL``, ``PREFIXED`` (pattern types keep their upper-case names).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Self

from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.principal import check_principal

WILDCARD_RESOURCE = "*"  # a LITERAL name that stands for every resource of its type
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"  # the one name a Cluster resource has


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class _AclEnum(enum.IntEnum):
    """An enum of Kafka's ACL vocabulary: unknown codes and names read as UNKNOWN (0)."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    @classmethod
    def parse(cls, text: str) -> Self:
        """The member named ``text`` in any case, as Kafka's enum name (``CLUSTER_ACTION``)
        or its printed name (``ClusterAction``); UNKNOWN for anything else."""
        wanted = text.upper()
        for member in cls:
            if wanted in (member.name, member.name.replace("_", "")):
                return member
        return cls(0)

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints and stores (``Topic``, ``ClusterAction``, ``Allow``)."""
        return _pascal(self.name)

    @property
    def is_unknown(self) -> bool:
        return self.value == 0


class ResourceType(_AclEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_AclEnum):
    UNKNOWN = 0
    ANY = 1  # a filter: every pattern type, names compared exactly
    MATCH = 2  # a filter: the patterns that would apply to a literal name
    LITERAL = 3
    PREFIXED = 4

    @property
    def kafka_name(self) -> str:
        return self.name

    @property
    def is_specific(self) -> bool:
        """LITERAL or PREFIXED: a pattern a binding can have, not only a filter."""
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_AclEnum):
    UNKNOWN = 0
    ANY = 1  # a filter only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_AclEnum):
    UNKNOWN = 0
    ANY = 1  # a filter only
    DENY = 2
    ALLOW = 3


# The operations that mean something on each resource type (Kafka's AclEntry.supportedOperations):
# what the authorized-operations bit fields of Metadata, DescribeGroups and DescribeCluster cover.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset(
        {
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.CLUSTER: frozenset(
        {
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
    ResourceType.USER: frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS}),
}

# The error a request gets when the principal lacks the ACL on a resource of this type.
AUTHORIZATION_FAILED: dict[ResourceType, ErrorCode] = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}


def operations_bit_field(operations: frozenset[AclOperation] | set[AclOperation]) -> int:
    """The int32 the authorized-operations fields carry: bit ``code`` set per operation."""
    return sum(1 << operation.value for operation in operations)


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    """What a binding applies to: a type, a name and how the name is matched."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"{self.resource_type.kafka_name}:{self.pattern_type.kafka_name}:{self.name}"


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: ``principal`` from ``host`` is allowed or denied ``operation`` on the
    resources the pattern (type, name, pattern type) names."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @property
    def pattern(self) -> ResourcePattern:
        return ResourcePattern(self.resource_type, self.resource_name, self.pattern_type)

    def __str__(self) -> str:
        return (
            f"{self.principal} has {self.permission_type.kafka_name} permission for "
            f"operation {self.operation.kafka_name} from host {self.host} on {self.pattern}"
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which bindings DescribeAcls lists and DeleteAcls removes.

    ``None`` fields match anything; ANY types match every type. Pattern type
    ANY compares names exactly; MATCH finds the bindings that apply to the
    literal name: that name, the wildcard ``*``, and prefixes of it."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self._matches_entry(binding)

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.resource_name == pattern.name
        # MATCH: the patterns that apply to this literal name
        if pattern.pattern_type == PatternType.LITERAL:
            return pattern.name in (self.resource_name, WILDCARD_RESOURCE)
        return self.resource_name.startswith(pattern.name)

    def _matches_entry(self, binding: AclBinding) -> bool:
        return (
            self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission_type in (AclPermissionType.ANY, binding.permission_type)
        )

    def unknown_field(self) -> str | None:
        """What makes the filter unusable (Kafka refuses UNKNOWN elements), or None."""
        for field, value in (
            ("resource type", self.resource_type),
            ("pattern type", self.pattern_type),
            ("operation", self.operation),
            ("permission type", self.permission_type),
        ):
            if value.is_unknown:
                return f"the filter's {field} is UNKNOWN"
        return None


ANY_BINDING = AclBindingFilter()


def binding_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter that matches exactly ``binding``."""
    return AclBindingFilter(
        binding.resource_type,
        binding.resource_name,
        binding.pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def invalid_binding(binding: AclBinding, *, zookeeper: bool = False) -> str | None:
    """Why CreateAcls refuses ``binding`` (Kafka answers INVALID_REQUEST), or None.

    Kafka's broker checks the Cluster name and an empty name; its authorizer
    then refuses filter values (ANY, MATCH) and UNKNOWN ones. A principal must
    be ``Type:name``. With ZooKeeper the name becomes a znode's name, so
    it may not hold ``/``."""
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return f"a Cluster ACL must name {CLUSTER_NAME!r}, not {binding.resource_name!r}"
    if not binding.resource_name:
        return "the resource name is empty"
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"resource type {binding.resource_type.name} cannot be given to an ACL"
    if not binding.pattern_type.is_specific:
        return f"pattern type {binding.pattern_type.name} cannot be given to an ACL (LITERAL or PREFIXED)"
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"operation {binding.operation.name} cannot be given to an ACL"
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"permission type {binding.permission_type.name} cannot be given to an ACL (Allow or Deny)"
    try:
        check_principal(binding.principal)
    except ValueError as error:
        return str(error)
    if zookeeper and "/" in binding.resource_name:
        return f"resource name {binding.resource_name!r} holds '/', which a znode name cannot"
    return None
