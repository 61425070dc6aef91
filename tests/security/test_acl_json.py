"""Whole bindings as JSON, for the embedded metadata."""

from __future__ import annotations

import json

import pytest

from wirekafka.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from wirekafka.security.acl_json import bindings_from_json, bindings_to_json

BINDINGS = [
    AclBinding(
        ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    ),
    AclBinding(
        ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED, "User:*", "10.0.0.1",
        AclOperation.WRITE, AclPermissionType.DENY,
    ),
]  # fmt: skip


def test_round_trip_through_json_text():
    text = json.dumps(bindings_to_json(BINDINGS))
    assert bindings_from_json(json.loads(text)) == sorted(BINDINGS)
    assert bindings_to_json(BINDINGS)[1] == {
        "resourceType": "TransactionalId",
        "name": "tx-",
        "patternType": "PREFIXED",
        "principal": "User:*",
        "permissionType": "Deny",
        "host": "10.0.0.1",
        "operation": "Write",
    }


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({}, "not a JSON list"),
        (["x"], "not a JSON object"),
        ([{"resourceType": "Any", "name": "a", "patternType": "LITERAL"}], "resourceType"),
        ([{"resourceType": "Topic", "name": "a", "patternType": "MATCH"}], "patternType"),
        ([{"resourceType": "Topic", "patternType": "LITERAL"}], "'name'"),
    ],
)
def test_bad_bindings_are_named(value, problem):
    with pytest.raises(ValueError, match=problem):
        bindings_from_json(value)
