"""ACL vocabulary and filters, as Kafka's clients and tools encode and print them."""

from __future__ import annotations

import pytest

from wirekafka.security.acl import (
    ANY_BINDING,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    binding_filter,
    invalid_binding,
    operations_bit_field,
)

# Kafka's wire codes (ResourceType, PatternType, AclOperation, AclPermissionType .java)
CODES = [
    (ResourceType, {"UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4,
                    "TRANSACTIONAL_ID": 5, "DELEGATION_TOKEN": 6, "USER": 7}),
    (PatternType, {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}),
    (AclOperation, {"UNKNOWN": 0, "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5,
                    "DELETE": 6, "ALTER": 7, "DESCRIBE": 8, "CLUSTER_ACTION": 9,
                    "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12,
                    "CREATE_TOKENS": 13, "DESCRIBE_TOKENS": 14}),
    (AclPermissionType, {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}),
]  # fmt: skip


@pytest.mark.parametrize(("enum_type", "codes"), CODES, ids=lambda v: getattr(v, "__name__", ""))
def test_codes_are_kafkas(enum_type, codes):
    assert {member.name: member.value for member in enum_type} == codes


@pytest.mark.parametrize(
    ("member", "printed"),
    [
        (ResourceType.TOPIC, "Topic"),
        (ResourceType.TRANSACTIONAL_ID, "TransactionalId"),
        (AclOperation.CLUSTER_ACTION, "ClusterAction"),
        (AclOperation.IDEMPOTENT_WRITE, "IdempotentWrite"),
        (AclPermissionType.ALLOW, "Allow"),
        (PatternType.LITERAL, "LITERAL"),
        (PatternType.PREFIXED, "PREFIXED"),
    ],
)
def test_names_print_as_kafka_prints_them(member, printed):
    assert member.kafka_name == printed
    assert type(member).parse(printed) == member


@pytest.mark.parametrize(
    ("enum_type", "text", "expected"),
    [
        (AclOperation, "ClusterAction", AclOperation.CLUSTER_ACTION),
        (AclOperation, "CLUSTER_ACTION", AclOperation.CLUSTER_ACTION),
        (AclOperation, "CLUSTERACTION", AclOperation.CLUSTER_ACTION),
        (AclOperation, "read", AclOperation.READ),
        (AclOperation, "Reed", AclOperation.UNKNOWN),
        (ResourceType, "transactionalid", ResourceType.TRANSACTIONAL_ID),
        (PatternType, "prefixed", PatternType.PREFIXED),
        (AclPermissionType, "", AclPermissionType.UNKNOWN),
    ],
)
def test_parse_takes_any_case_and_answers_unknown(enum_type, text, expected):
    assert enum_type.parse(text) == expected


def test_unknown_codes_read_as_unknown():
    assert ResourceType.from_code(99) == ResourceType.UNKNOWN
    assert AclOperation.from_code(-1) == AclOperation.UNKNOWN
    assert PatternType.from_code(4) == PatternType.PREFIXED


def test_operations_bit_field():
    assert operations_bit_field({AclOperation.READ, AclOperation.DESCRIBE}) == (1 << 3) | (1 << 8)


def topic(name: str, pattern: PatternType = PatternType.LITERAL, **entry: object) -> AclBinding:
    fields = {
        "principal": "User:alice",
        "host": "*",
        "operation": AclOperation.READ,
        "permission_type": AclPermissionType.ALLOW,
        **entry,
    }
    return AclBinding(ResourceType.TOPIC, name, pattern, **fields)  # type: ignore[arg-type]


LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED

# (filter, binding, matches), after Kafka's ResourcePatternFilter and AccessControlEntryFilter
FILTER_CASES = [
    (ANY_BINDING, topic("orders"), True),
    (AclBindingFilter(ResourceType.GROUP), topic("orders"), False),
    (AclBindingFilter(ResourceType.TOPIC, "orders"), topic("orders"), True),
    (AclBindingFilter(ResourceType.TOPIC, "orders"), topic("orders", PRE), True),  # ANY: exact
    (AclBindingFilter(ResourceType.TOPIC, "orders-eu"), topic("orders", PRE), False),
    (AclBindingFilter(ResourceType.TOPIC, "orders", LIT), topic("orders", PRE), False),
    (AclBindingFilter(ResourceType.TOPIC, "orders", PRE), topic("orders", PRE), True),
    # MATCH: what applies to a literal name: itself, "*", and prefixes of it
    (AclBindingFilter(ResourceType.TOPIC, "orders-eu", PatternType.MATCH), topic("orders", PRE), True),
    (AclBindingFilter(ResourceType.TOPIC, "orders-eu", PatternType.MATCH), topic("orders-eu"), True),
    (AclBindingFilter(ResourceType.TOPIC, "orders-eu", PatternType.MATCH), topic("*"), True),
    (AclBindingFilter(ResourceType.TOPIC, "orders-eu", PatternType.MATCH), topic("orders"), False),
    (AclBindingFilter(ResourceType.TOPIC, "orders", PatternType.MATCH), topic("orders-eu", PRE), False),
    (AclBindingFilter(ResourceType.TOPIC, None, PatternType.MATCH), topic("x", PRE), True),
    # "*" as a filter name is only that literal name unless MATCH
    (AclBindingFilter(ResourceType.TOPIC, "*"), topic("orders"), False),
    (AclBindingFilter(ResourceType.TOPIC, "*"), topic("*"), True),
    # entry fields
    (AclBindingFilter(principal="User:bob"), topic("t"), False),
    (AclBindingFilter(principal="User:alice"), topic("t"), True),
    (AclBindingFilter(principal="User:*"), topic("t"), False),  # exact, not a wildcard
    (AclBindingFilter(host="10.0.0.1"), topic("t"), False),
    (AclBindingFilter(host="10.0.0.1"), topic("t", host="10.0.0.1"), True),
    (AclBindingFilter(operation=AclOperation.WRITE), topic("t"), False),
    (AclBindingFilter(operation=AclOperation.READ), topic("t"), True),
    (AclBindingFilter(operation=AclOperation.DESCRIBE), topic("t"), False),  # no implication
    (AclBindingFilter(permission_type=AclPermissionType.DENY), topic("t"), False),
]  # fmt: skip


@pytest.mark.parametrize(("binding_filter_", "binding", "expected"), FILTER_CASES)
def test_filter_matching(binding_filter_, binding, expected):
    assert binding_filter_.matches(binding) is expected


def test_a_bindings_own_filter_matches_it_alone():
    binding = topic("orders", PRE, host="10.0.0.1")
    assert binding_filter(binding).matches(binding)
    assert not binding_filter(binding).matches(topic("orders", PRE))


def test_unknown_filter_fields_are_named():
    assert AclBindingFilter(operation=AclOperation.UNKNOWN).unknown_field() == (
        "the filter's operation is UNKNOWN"
    )
    assert ANY_BINDING.unknown_field() is None


def _with(**changes: object) -> AclBinding:
    fields = {
        "resource_type": ResourceType.TOPIC,
        "resource_name": "t",
        "pattern_type": LIT,
        "principal": "User:alice",
        "host": "*",
        "operation": AclOperation.READ,
        "permission_type": AclPermissionType.ALLOW,
        **changes,
    }
    return AclBinding(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("binding", "problem"),
    [
        (_with(), None),
        (_with(pattern_type=PRE, resource_name="*"), None),  # Kafka accepts a PREFIXED "*"
        (_with(resource_type=ResourceType.CLUSTER, resource_name="kafka-cluster"), None),
        (_with(resource_type=ResourceType.CLUSTER, resource_name="other"), "kafka-cluster"),
        (_with(resource_name=""), "empty"),
        (_with(resource_type=ResourceType.ANY), "resource type ANY"),
        (_with(resource_type=ResourceType.UNKNOWN), "resource type UNKNOWN"),
        (_with(pattern_type=PatternType.MATCH), "pattern type MATCH"),
        (_with(pattern_type=PatternType.ANY), "pattern type ANY"),
        (_with(operation=AclOperation.ANY), "operation ANY"),
        (_with(operation=AclOperation.UNKNOWN), "operation UNKNOWN"),
        (_with(permission_type=AclPermissionType.ANY), "permission type ANY"),
        (_with(principal="alice"), "Type:name"),
    ],
)
def test_invalid_binding(binding, problem):
    found = invalid_binding(binding)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_slash_is_refused_only_where_names_become_znodes():
    binding = _with(resource_type=ResourceType.GROUP, resource_name="team/a")
    assert invalid_binding(binding) is None
    assert "'/'" in (invalid_binding(binding, zookeeper=True) or "")
