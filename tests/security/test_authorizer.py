"""The ACL authorizer's decisions, case by case, with the rules of Kafka's
StandardAuthorizer (and the ZooKeeper-era AclAuthorizer, which agree)."""

from __future__ import annotations

import pytest

from wirekafka.security.acl import (
    ANY_BINDING,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    operations_bit_field,
)
from wirekafka.security.authorizer import (
    AclAuthorizer,
    authorizer_config,
    authorizer_from_properties,
)

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALICE, BOB = "User:alice", "User:bob"
HOST = "/10.0.0.5"  # as a Request carries the client's address


def acl(
    permission: str,
    principal: str,
    operation: AclOperation,
    name: str,
    *,
    pattern: PatternType = LIT,
    host: str = "*",
    resource_type: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        resource_type,
        name,
        pattern,
        principal,
        host,
        operation,
        AclPermissionType.ALLOW if permission == "allow" else AclPermissionType.DENY,
    )


def allow(*args, **kwargs) -> AclBinding:
    return acl("allow", *args, **kwargs)


def deny(*args, **kwargs) -> AclBinding:
    return acl("deny", *args, **kwargs)


# (case, acls, principal, operation, topic name, allowed); host HOST, allow.everyone false
CASES = [
    ("no acl at all: default deny", [], ALICE, Op.READ, "t", False),
    ("literal allow", [allow(ALICE, Op.READ, "t")], ALICE, Op.READ, "t", True),
    ("other principal", [allow(BOB, Op.READ, "t")], ALICE, Op.READ, "t", False),
    ("other topic has acls, this none", [allow(ALICE, Op.READ, "u")], ALICE, Op.READ, "t", False),
    ("other operation", [allow(ALICE, Op.WRITE, "t")], ALICE, Op.CREATE, "t", False),
    ("wildcard principal", [allow("User:*", Op.READ, "t")], ALICE, Op.READ, "t", True),
    ("wildcard resource", [allow(ALICE, Op.READ, "*")], ALICE, Op.READ, "t", True),
    ("prefixed", [allow(ALICE, Op.READ, "ord", pattern=PRE)], ALICE, Op.READ, "orders", True),
    ("prefixed equal to the name", [allow(ALICE, Op.READ, "orders", pattern=PRE)], ALICE, Op.READ, "orders", True),
    ("prefixed longer than the name", [allow(ALICE, Op.READ, "orders-eu", pattern=PRE)], ALICE, Op.READ, "orders", False),
    ("prefixed elsewhere", [allow(ALICE, Op.READ, "pay", pattern=PRE)], ALICE, Op.READ, "orders", False),
    ("literal is not a prefix", [allow(ALICE, Op.READ, "ord")], ALICE, Op.READ, "orders", False),
    ("a prefixed * is a prefix, not a wildcard", [allow(ALICE, Op.READ, "*", pattern=PRE)], ALICE, Op.READ, "t", False),
    ("host equal", [allow(ALICE, Op.READ, "t", host="10.0.0.5")], ALICE, Op.READ, "t", True),
    ("host other", [allow(ALICE, Op.READ, "t", host="10.0.0.6")], ALICE, Op.READ, "t", False),
    # Deny wins, whatever the pattern that carries it
    ("deny beats allow", [allow(ALICE, Op.READ, "t"), deny(ALICE, Op.READ, "t")], ALICE, Op.READ, "t", False),
    ("wildcard deny beats literal allow", [allow(ALICE, Op.READ, "t"), deny("User:*", Op.READ, "*")], ALICE, Op.READ, "t", False),
    ("prefixed deny beats literal allow", [allow(ALICE, Op.READ, "orders"), deny(ALICE, Op.READ, "or", pattern=PRE)], ALICE, Op.READ, "orders", False),
    ("deny from one host", [allow(ALICE, Op.READ, "t"), deny(ALICE, Op.READ, "t", host="10.0.0.5")], ALICE, Op.READ, "t", False),
    ("deny for another host", [allow(ALICE, Op.READ, "t"), deny(ALICE, Op.READ, "t", host="10.0.0.9")], ALICE, Op.READ, "t", True),
    ("deny of another principal", [allow(ALICE, Op.READ, "t"), deny(BOB, Op.READ, "t")], ALICE, Op.READ, "t", True),
    ("deny ALL", [allow(ALICE, Op.READ, "t"), deny(ALICE, Op.ALL, "t")], ALICE, Op.READ, "t", False),
    ("deny of another operation", [allow(ALICE, Op.ALL, "t"), deny(ALICE, Op.WRITE, "t")], ALICE, Op.READ, "t", True),
    # implications apply to Allow only
    ("Read implies Describe", [allow(ALICE, Op.READ, "t")], ALICE, Op.DESCRIBE, "t", True),
    ("Write implies Describe", [allow(ALICE, Op.WRITE, "t")], ALICE, Op.DESCRIBE, "t", True),
    ("Delete implies Describe", [allow(ALICE, Op.DELETE, "t")], ALICE, Op.DESCRIBE, "t", True),
    ("Alter implies Describe", [allow(ALICE, Op.ALTER, "t")], ALICE, Op.DESCRIBE, "t", True),
    ("Create does not imply Describe", [allow(ALICE, Op.CREATE, "t")], ALICE, Op.DESCRIBE, "t", False),
    ("AlterConfigs implies DescribeConfigs", [allow(ALICE, Op.ALTER_CONFIGS, "t")], ALICE, Op.DESCRIBE_CONFIGS, "t", True),
    ("Alter does not imply DescribeConfigs", [allow(ALICE, Op.ALTER, "t")], ALICE, Op.DESCRIBE_CONFIGS, "t", False),
    ("Describe does not imply Read", [allow(ALICE, Op.DESCRIBE, "t")], ALICE, Op.READ, "t", False),
    ("Write does not imply Read", [allow(ALICE, Op.WRITE, "t")], ALICE, Op.READ, "t", False),
    ("ALL allows everything", [allow(ALICE, Op.ALL, "t")], ALICE, Op.ALTER_CONFIGS, "t", True),
    ("deny Read leaves Describe by Write", [allow(ALICE, Op.WRITE, "t"), deny(ALICE, Op.READ, "t")], ALICE, Op.DESCRIBE, "t", True),
    ("deny Describe beats Read's implication", [allow(ALICE, Op.READ, "t"), deny(ALICE, Op.DESCRIBE, "t")], ALICE, Op.DESCRIBE, "t", False),
    # principals are compared whole: type and name
    ("another principal type", [allow("Group:alice", Op.READ, "t")], ALICE, Op.READ, "t", False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("acls", "principal", "operation", "name", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_authorize(acls, principal, operation, name, expected):
    authorizer = AclAuthorizer()
    authorizer.add(acls)
    assert authorizer.authorize(principal, HOST, operation, TOPIC, name) is expected


def test_a_host_without_the_slash_is_the_same_host():
    authorizer = AclAuthorizer()
    authorizer.add([allow(ALICE, Op.READ, "t", host="10.0.0.5")])
    assert authorizer.authorize(ALICE, "10.0.0.5", Op.READ, TOPIC, "t")
    assert authorizer.authorize(ALICE, "/10.0.0.5", Op.READ, TOPIC, "t")


def test_resource_types_are_kept_apart():
    authorizer = AclAuthorizer()
    authorizer.add([allow(ALICE, Op.READ, "x", resource_type=GROUP)])
    assert authorizer.authorize(ALICE, HOST, Op.READ, GROUP, "x")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "x")


@pytest.mark.parametrize(
    ("acls", "expected"),
    [
        ([], True),  # no ACL names the resource
        ([allow(BOB, Op.READ, "t")], False),  # some ACL names it: ALICE has none
        ([allow(BOB, Op.READ, "other")], True),  # ACLs elsewhere do not count
        ([deny(BOB, Op.WRITE, "*")], False),  # a wildcard names every topic
        ([allow(BOB, Op.READ, "t", pattern=PRE)], False),  # a prefix of it counts
    ],
)
def test_allow_everyone_if_no_acl_found(acls, expected):
    authorizer = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    authorizer.add(acls)
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "t") is expected


def test_super_users_pass_even_a_deny():
    authorizer = AclAuthorizer(super_users=frozenset({"User:admin"}))
    authorizer.add([deny("User:*", Op.ALL, "*"), deny("User:admin", Op.ALL, "t")])
    assert authorizer.authorize("User:admin", HOST, Op.DELETE, TOPIC, "t")
    assert authorizer.authorize_any("User:admin", HOST, Op.WRITE, TOPIC)
    assert not authorizer.authorize(ALICE, HOST, Op.DELETE, TOPIC, "t")


# authorize_any: Kafka's authorizeByResourceType (Authorizer.java's default)
ANY_CASES = [
    ("nothing", [], False),
    ("a literal allow", [allow(ALICE, Op.WRITE, "t")], True),
    ("a prefixed allow", [allow(ALICE, Op.WRITE, "t", pattern=PRE)], True),
    ("another operation", [allow(ALICE, Op.READ, "t")], False),
    ("ALL held", [allow(ALICE, Op.ALL, "t")], True),
    ("another principal", [allow(BOB, Op.WRITE, "t")], False),
    ("wildcard principal", [allow("User:*", Op.WRITE, "t")], True),
    ("another host", [allow(ALICE, Op.WRITE, "t", host="10.9.9.9")], False),
    ("the literal denied too", [allow(ALICE, Op.WRITE, "t"), deny(ALICE, Op.WRITE, "t")], False),
    ("one of two literals denied", [allow(ALICE, Op.WRITE, "t"), allow(ALICE, Op.WRITE, "u"), deny(ALICE, Op.WRITE, "t")], True),
    ("a prefixed deny covers the literal", [allow(ALICE, Op.WRITE, "orders"), deny(ALICE, Op.WRITE, "ord", pattern=PRE)], False),
    ("a prefixed deny covers a longer prefix", [allow(ALICE, Op.WRITE, "orders", pattern=PRE), deny(ALICE, Op.WRITE, "ord", pattern=PRE)], False),
    ("a literal deny does not cover a prefix", [allow(ALICE, Op.WRITE, "orders", pattern=PRE), deny(ALICE, Op.WRITE, "orders")], True),
    ("a longer prefixed deny does not cover", [allow(ALICE, Op.WRITE, "ord", pattern=PRE), deny(ALICE, Op.WRITE, "orders", pattern=PRE)], True),
    ("a wildcard deny denies all", [allow(ALICE, Op.WRITE, "t"), deny(ALICE, Op.WRITE, "*")], False),
    ("a wildcard allow", [allow(ALICE, Op.WRITE, "*"), deny(ALICE, Op.WRITE, "t")], True),
    ("another resource type", [allow(ALICE, Op.WRITE, "t", resource_type=GROUP)], False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("acls", "expected"), [case[1:] for case in ANY_CASES], ids=[case[0] for case in ANY_CASES]
)
def test_authorize_any(acls, expected):
    authorizer = AclAuthorizer()
    authorizer.add(acls)
    assert authorizer.authorize_any(ALICE, HOST, Op.WRITE, TOPIC) is expected


def test_authorize_any_with_no_acls_follows_allow_everyone():
    assert AclAuthorizer(allow_everyone_if_no_acl_found=True).authorize_any(
        ALICE, HOST, Op.WRITE, TOPIC
    )
    with pytest.raises(ValueError, match="resource type"):
        AclAuthorizer().authorize_any(ALICE, HOST, Op.WRITE, ResourceType.ANY)


def test_authorized_operations_covers_the_supported_operations():
    authorizer = AclAuthorizer()
    authorizer.add([allow(ALICE, Op.WRITE, "t"), allow(ALICE, Op.IDEMPOTENT_WRITE, "t")])
    # IdempotentWrite is not a topic operation; Write brings Describe
    assert authorizer.authorized_operations(ALICE, HOST, TOPIC, "t") == operations_bit_field(
        {Op.WRITE, Op.DESCRIBE}
    )
    everyone = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    assert everyone.authorized_operations(ALICE, HOST, CLUSTER, "kafka-cluster") == (
        # what the describe_cluster handler answers without an authorizer
        sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))
    )


def test_add_remove_describe_replace():
    authorizer = AclAuthorizer()
    first = [allow(ALICE, Op.READ, "t"), allow(ALICE, Op.READ, "ord", pattern=PRE)]
    assert authorizer.add(first) == first
    assert authorizer.add([*first, allow(BOB, Op.READ, "t")]) == [allow(BOB, Op.READ, "t")]
    assert len(authorizer) == 3
    assert authorizer.describe(AclBindingFilter(principal=BOB)) == [allow(BOB, Op.READ, "t")]
    assert authorizer.describe(ANY_BINDING) == sorted([*first, allow(BOB, Op.READ, "t")])

    removed = authorizer.remove(AclBindingFilter(TOPIC, "orders", PatternType.MATCH))
    assert removed == [allow(ALICE, Op.READ, "ord", pattern=PRE)]
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "orders")
    assert authorizer.remove(AclBindingFilter(TOPIC, "orders", PatternType.MATCH)) == []

    pattern = ResourcePattern(TOPIC, "t", LIT)
    authorizer.replace(pattern, [allow(BOB, Op.WRITE, "t"), allow(BOB, Op.WRITE, "elsewhere")])
    assert authorizer.bindings_for(pattern) == [allow(BOB, Op.WRITE, "t")]
    assert len(authorizer) == 1
    assert authorizer.authorize(BOB, HOST, Op.WRITE, TOPIC, "t")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "t")


def test_prefix_index_follows_removals():
    authorizer = AclAuthorizer()
    authorizer.add(
        [allow(ALICE, Op.READ, "ab", pattern=PRE), allow(BOB, Op.READ, "ab", pattern=PRE)]
    )
    authorizer.add([allow(ALICE, Op.READ, "abc", pattern=PRE)])
    authorizer.remove(AclBindingFilter(TOPIC, "ab", PRE, principal=ALICE))
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "abz")
    assert authorizer.authorize(BOB, HOST, Op.READ, TOPIC, "abz")
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "abcd")
    authorizer.remove(ANY_BINDING)
    assert len(authorizer) == 0
    assert not authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "abcd")


def test_many_acls_are_looked_up_without_a_scan():
    authorizer = AclAuthorizer()
    authorizer.add(allow(ALICE, Op.READ, f"topic-{i}") for i in range(20_000))
    authorizer.add(allow(BOB, Op.READ, f"team-{i}-", pattern=PRE) for i in range(20_000))
    assert authorizer.authorize(ALICE, HOST, Op.READ, TOPIC, "topic-19999")
    assert authorizer.authorize(BOB, HOST, Op.READ, TOPIC, "team-123-orders")
    # what is visited for one name: its literal, the wildcard and its prefixes only
    visited = list(authorizer._applying(TOPIC, "team-123-orders"))
    assert visited == [allow(BOB, Op.READ, "team-123-", pattern=PRE)]


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, None),
        ({"authorizer.class.name": ""}, None),
        (
            {
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:admin; User:ops ;",
                "allow.everyone.if.no.acl.found": "TRUE",
            },
            (frozenset({"User:admin", "User:ops"}), True),
        ),
        (
            {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"},
            (frozenset(), False),
        ),
    ],
)
def test_authorizer_config(properties, expected):
    config = authorizer_config(properties)
    if expected is None:
        assert config is None
        assert authorizer_from_properties(properties) is None
    else:
        assert (config.super_users, config.allow_everyone_if_no_acl_found) == expected
        made = authorizer_from_properties(properties)
        assert made is not None and made.super_users == expected[0]


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"authorizer.class.name": "com.example.MyAuthorizer"}, "authorizer.class.name"),
        (
            {
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "super.users": "admin",
            },
            "super.users",
        ),
        (
            {
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "allow.everyone.if.no.acl.found": "yes",
            },
            "allow.everyone.if.no.acl.found",
        ),
    ],
)
def test_authorizer_config_errors_name_the_key(properties, named):
    with pytest.raises(ValueError, match=named):
        authorizer_config(properties)


def test_authorize_any_uses_no_implications():
    authorizer = AclAuthorizer()
    authorizer.add([allow(ALICE, Op.READ, "t")])
    assert authorizer.authorize(ALICE, HOST, Op.DESCRIBE, TOPIC, "t")
    assert not authorizer.authorize_any(ALICE, HOST, Op.DESCRIBE, TOPIC)
