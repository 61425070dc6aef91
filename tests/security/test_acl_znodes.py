"""Kafka's ZooKeeper ACL nodes and change notifications, byte for byte where Kafka
fixes the bytes, and read back from what Kafka writes."""

from __future__ import annotations

import json

import pytest

from wirekafka.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from wirekafka.security.acl_znodes import (
    acl_change_node,
    acl_path,
    acl_paths_to_create,
    decode_acl_change,
    decode_zk_acls,
    encode_zk_acls,
)

LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def binding(
    name: str,
    principal: str,
    host: str,
    operation: AclOperation,
    permission: AclPermissionType,
    *,
    resource_type: ResourceType = ResourceType.TOPIC,
    pattern: PatternType = LIT,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        (ResourcePattern(ResourceType.TOPIC, "topic-1", LIT), "/kafka-acl/Topic/topic-1"),
        (
            ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", LIT),
            "/kafka-acl/Cluster/kafka-cluster",
        ),
        (
            ResourcePattern(ResourceType.GROUP, "group-1", PRE),
            "/kafka-acl-extended/prefixed/Group/group-1",
        ),
        (
            ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", LIT),
            "/kafka-acl/TransactionalId/tx",
        ),
    ],
)
def test_paths(pattern, path):
    assert acl_path(pattern) == path


def test_a_name_with_a_slash_has_no_path():
    with pytest.raises(ValueError, match="znode"):
        acl_path(ResourcePattern(ResourceType.GROUP, "a/b", LIT))


def test_paths_kafka_creates_at_startup():
    paths = acl_paths_to_create()
    assert "/kafka-acl/Topic" in paths
    assert "/kafka-acl/DelegationToken" in paths
    assert "/kafka-acl-extended/prefixed/User" in paths
    assert paths[-2:] == ["/kafka-acl-changes", "/kafka-acl-extended-changes"]
    assert not any("/Any" in path or "/Unknown" in path for path in paths)


# What Kafka's docs (ZkData.scala) show at /kafka-acl/Topic/topic-1
KAFKA_DOC_NODE = (
    b'{"version": 1, "acls": [ { "host":"host1", "permissionType": "Allow",'
    b'"operation": "Read","principal": "User:alice"}]}'
)
# Kafka's own AclEntryTest input: spaces, and an operation in upper case
KAFKA_TEST_NODE = b"""{"version": 1, "acls": [{"host": "host1","permissionType": "Deny","operation": "READ", "principal": "User:alice"  },
    {  "host":  "*" ,  "permissionType": "Allow",  "operation":  "Read", "principal": "User:bob"  },
    {  "host": "host1",  "permissionType": "Deny",  "operation":   "Read" ,  "principal": "User:bob"}]}"""


def test_reads_the_node_kafkas_docs_show():
    assert decode_zk_acls(ResourceType.TOPIC, "topic-1", LIT, KAFKA_DOC_NODE) == [
        binding("topic-1", "User:alice", "host1", AclOperation.READ, AclPermissionType.ALLOW)
    ]


def test_reads_kafkas_test_node_and_writes_it_back():
    read = decode_zk_acls(ResourceType.TOPIC, "t", LIT, KAFKA_TEST_NODE)
    assert sorted(read) == sorted(
        [
            binding("t", "User:alice", "host1", AclOperation.READ, AclPermissionType.DENY),
            binding("t", "User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW),
            binding("t", "User:bob", "host1", AclOperation.READ, AclPermissionType.DENY),
        ]
    )
    data = encode_zk_acls(read)
    assert decode_zk_acls(ResourceType.TOPIC, "t", LIT, data) == sorted(read)
    # as Kafka's Jackson writes it: compact, names Pascal-cased, its HashMap key order
    assert data.startswith(
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Deny",'
        b'"host":"host1","operation":"Read"}'
    )
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Deny",
                "host": "host1",
                "operation": "Read",
            },
            {"principal": "User:bob", "permissionType": "Allow", "host": "*", "operation": "Read"},
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "host": "host1",
                "operation": "Read",
            },
        ],
    }


def test_round_trip_of_every_operation_on_a_prefixed_pattern():
    bindings = [
        binding("pay-", "User:*", "*", operation, AclPermissionType.ALLOW, pattern=PRE)
        for operation in AclOperation
        if operation not in (AclOperation.UNKNOWN, AclOperation.ANY)
    ]
    data = encode_zk_acls(bindings)
    assert b'"operation":"ClusterAction"' in data and b'"operation":"IdempotentWrite"' in data
    assert decode_zk_acls(ResourceType.TOPIC, "pay-", PRE, data) == sorted(bindings)


def test_one_node_holds_one_pattern():
    with pytest.raises(ValueError, match="one resource pattern"):
        encode_zk_acls(
            [
                binding("a", "User:x", "*", AclOperation.READ, AclPermissionType.ALLOW),
                binding("b", "User:x", "*", AclOperation.READ, AclPermissionType.ALLOW),
            ]
        )


def test_an_empty_node_holds_nothing():
    assert decode_zk_acls(ResourceType.TOPIC, "t", LIT, b"") == []
    assert decode_zk_acls(ResourceType.TOPIC, "t", LIT, None) == []


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\xff", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"version": 2, "acls": []}', "version"),
        (b'{"version": 1}', "'acls'"),
        (b'{"version": 1, "acls": [7]}', "not a JSON object"),
        (b'{"version": 1, "acls": [{"host": "*", "permissionType": "Allow", "operation": "Read"}]}', "principal"),
        (b'{"version": 1, "acls": [{"principal": "alice", "host": "*", "permissionType": "Allow", "operation": "Read"}]}', "Type:name"),
        (b'{"version": 1, "acls": [{"principal": "User:a", "host": "*", "permissionType": "Maybe", "operation": "Read"}]}', "permissionType"),
        (b'{"version": 1, "acls": [{"principal": "User:a", "host": "*", "permissionType": "Allow", "operation": "Any"}]}', "operation"),
        (b'{"version": 1, "acls": [{"principal": "User:a", "host": 5, "permissionType": "Allow", "operation": "Read"}]}', "'host'"),
    ],
)  # fmt: skip
def test_bad_nodes_are_named(data, problem):
    with pytest.raises(ValueError, match=problem):
        decode_zk_acls(ResourceType.TOPIC, "t", LIT, data)


def test_literal_change_notification():
    pattern = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx:1", LIT)
    path, data = acl_change_node(pattern)
    assert path == "/kafka-acl-changes/acl_changes_"
    assert data == b"TRANSACTIONAL_ID:tx:1"  # the Java enum's name, then the name
    assert decode_acl_change(LIT, data) == pattern
    # older brokers wrote the type Pascal-cased
    assert decode_acl_change(LIT, b"Topic:t") == ResourcePattern(ResourceType.TOPIC, "t", LIT)


def test_extended_change_notification():
    pattern = ResourcePattern(ResourceType.TOPIC, "z_other", PRE)
    path, data = acl_change_node(pattern)
    assert path == "/kafka-acl-extended-changes/acl_changes_"
    assert data == (
        b'{"version":1,"resourceType":"TOPIC","name":"z_other","patternType":"PREFIXED"}'
    )
    assert decode_acl_change(PRE, data) == pattern


@pytest.mark.parametrize(
    ("pattern_type", "data", "problem"),
    [
        (LIT, b"Topic", "ResourceType:name"),
        (LIT, b"Nothing:t", "resource type"),
        (LIT, b"\xfe:t", "UTF-8"),
        (PRE, b"{", "not JSON"),
        (PRE, b'{"version":2,"resourceType":"TOPIC","name":"a","patternType":"PREFIXED"}', "version"),
        (PRE, b'{"version":1,"resourceType":"TOPIC","patternType":"PREFIXED"}', "lacks"),
        (PRE, b'{"version":1,"resourceType":"TOPIC","name":"a","patternType":"MATCH"}', "pattern type"),
    ],
)  # fmt: skip
def test_bad_change_notifications_are_named(pattern_type, data, problem):
    with pytest.raises(ValueError, match=problem):
        decode_acl_change(pattern_type, data)
