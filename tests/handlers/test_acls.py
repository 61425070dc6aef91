"""CreateAcls, DescribeAcls and DeleteAcls against a broker with the ACL authorizer,
in every version, through the real codec; the ACLs kept in the embedded
security metadata file, across restarts, and nothing held that could not be kept."""

from __future__ import annotations

import json

import pytest

from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from wirekafka.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from wirekafka.protocol.messages.describe_acls import DescribeAclsRequest
from wirekafka.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE, SecurityMetadata

ADMIN, ALICE = "User:admin", "User:alice"
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
VERSIONS = range(4)
RT, PT, OP, PERM = ResourceType, PatternType, AclOperation, AclPermissionType


@pytest.fixture
def secured(make_broker):
    """A broker with Kafka's authorizer class name and ``User:admin`` as super user."""
    return make_broker({"authorizer.class.name": AUTHORIZER, "super.users": ADMIN})


def creation(name: str, pattern: PatternType = PT.LITERAL, **changes: object) -> AclCreation:
    fields = {
        "resource_type": RT.TOPIC,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": ALICE,
        "host": "*",
        "operation": OP.READ,
        "permission_type": PERM.ALLOW,
        **changes,
    }
    return AclCreation(**fields)  # type: ignore[arg-type]


def describe_all(version: int) -> DescribeAclsRequest:
    return DescribeAclsRequest(
        resource_type_filter=RT.ANY,
        resource_name_filter=None,
        pattern_type_filter=PT.ANY if version >= 1 else PT.LITERAL,
        principal_filter=None,
        host_filter=None,
        operation=OP.ANY,
        permission_type=PERM.ANY,
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_create_describe_delete(secured, version):
    created = secured.call(
        ApiKey.CREATE_ACLS,
        version,
        CreateAclsRequest(
            creations=[
                creation("orders"),
                creation("orders", operation=OP.WRITE, permission_type=PERM.DENY, host="10.0.0.9"),
                creation("c", resource_type=RT.CLUSTER),  # the cluster is "kafka-cluster"
                creation("", resource_type=RT.GROUP),
                creation("g", operation=OP.ANY),
            ]
        ),
        ADMIN,
    )
    assert [r.error_code for r in created.results] == [0, 0, 42, 42, 42]
    assert "kafka-cluster" in created.results[2].error_message
    assert created.results[0].error_message is None

    described = secured.call(ApiKey.DESCRIBE_ACLS, version, describe_all(version), ADMIN)
    assert described.error_code == ErrorCode.NONE
    [resource] = described.resources
    assert (resource.resource_type, resource.resource_name) == (RT.TOPIC, "orders")
    assert resource.pattern_type == PT.LITERAL
    assert sorted((a.principal, a.host, a.operation, a.permission_type) for a in resource.acls) == [
        (ALICE, "*", OP.READ, PERM.ALLOW),
        (ALICE, "10.0.0.9", OP.WRITE, PERM.DENY),
    ]
    assert secured.ctx.authorizer.authorize(ALICE, "/10.0.0.1", OP.DESCRIBE, RT.TOPIC, "orders")

    deleted = secured.call(
        ApiKey.DELETE_ACLS,
        version,
        DeleteAclsRequest(
            filters=[
                DeleteAclsFilter(
                    resource_type_filter=RT.TOPIC,
                    resource_name_filter="orders",
                    pattern_type_filter=PT.LITERAL,
                    principal_filter=None,
                    host_filter=None,
                    operation=OP.WRITE,
                    permission_type=PERM.ANY,
                ),
                DeleteAclsFilter(
                    resource_type_filter=RT.TOPIC,
                    resource_name_filter=None,
                    operation=OP.UNKNOWN,
                    permission_type=PERM.ANY,
                ),
            ]
        ),
        ADMIN,
    )
    [removed, refused] = deleted.filter_results
    assert removed.error_code == ErrorCode.NONE
    assert [(m.resource_name, m.operation, m.host) for m in removed.matching_acls] == [
        ("orders", OP.WRITE, "10.0.0.9")
    ]
    assert refused.error_code == ErrorCode.INVALID_REQUEST
    assert len(secured.ctx.authorizer) == 1


@pytest.mark.parametrize("version", [1, 2, 3])
def test_prefixed_acls_and_the_match_filter(secured, version):
    secured.call(
        ApiKey.CREATE_ACLS,
        version,
        CreateAclsRequest(creations=[creation("ord", PT.PREFIXED), creation("other")]),
        ADMIN,
    )
    request = describe_all(version)
    request.resource_type_filter = RT.TOPIC
    request.resource_name_filter = "orders"
    request.pattern_type_filter = PT.MATCH
    described = secured.call(ApiKey.DESCRIBE_ACLS, version, request, ADMIN)
    assert [(r.resource_name, r.pattern_type) for r in described.resources] == [
        ("ord", PT.PREFIXED)
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_principal_without_cluster_acls_is_refused(secured, version):
    create = CreateAclsRequest(creations=[creation("t"), creation("u")])
    created = secured.call(ApiKey.CREATE_ACLS, version, create, ALICE)
    assert [r.error_code for r in created.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
    described = secured.call(ApiKey.DESCRIBE_ACLS, version, describe_all(version), ALICE)
    assert described.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert described.resources == []
    delete = DeleteAclsRequest(filters=[DeleteAclsFilter(resource_type_filter=RT.ANY)])
    deleted = secured.call(ApiKey.DELETE_ACLS, version, delete, ALICE)
    assert deleted.filter_results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert len(secured.ctx.authorizer) == 0


def test_alter_on_the_cluster_lets_a_principal_manage_acls(secured):
    secured.ctx.authorizer.add(
        [AclBinding(RT.CLUSTER, "kafka-cluster", PT.LITERAL, ALICE, "*", OP.ALTER, PERM.ALLOW)]
    )
    created = secured.call(
        ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=[creation("t")]), ALICE
    )
    assert created.results[0].error_code == ErrorCode.NONE
    # Alter implies Describe
    described = secured.call(ApiKey.DESCRIBE_ACLS, 3, describe_all(3), ALICE)
    assert described.error_code == ErrorCode.NONE and len(described.resources) == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_without_an_authorizer_the_security_is_disabled(broker, version):
    created = broker.call(ApiKey.CREATE_ACLS, version, CreateAclsRequest(creations=[creation("t")]))
    assert created.results[0].error_code == ErrorCode.SECURITY_DISABLED
    described = broker.call(ApiKey.DESCRIBE_ACLS, version, describe_all(version))
    assert described.error_code == ErrorCode.SECURITY_DISABLED
    assert "authorizer.class.name" in described.error_message
    delete = DeleteAclsRequest(filters=[DeleteAclsFilter(resource_type_filter=RT.ANY)] * 2)
    deleted = broker.call(ApiKey.DELETE_ACLS, version, delete)
    assert [r.error_code for r in deleted.filter_results] == [ErrorCode.SECURITY_DISABLED] * 2


def test_describe_with_an_unknown_filter_is_invalid(secured):
    request = describe_all(3)
    request.permission_type = 77
    described = secured.call(ApiKey.DESCRIBE_ACLS, 3, request, ADMIN)
    assert described.error_code == ErrorCode.INVALID_REQUEST
    assert "permission type" in described.error_message


def delete_filter(name: str | None = None, **changes: object) -> DeleteAclsFilter:
    fields = {
        "resource_type_filter": RT.TOPIC,
        "resource_name_filter": name,
        "pattern_type_filter": PT.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": OP.ANY,
        "permission_type": PERM.ANY,
        **changes,
    }
    return DeleteAclsFilter(**fields)  # type: ignore[arg-type]


def described(broker) -> list[tuple[str, PatternType, str, AclOperation]]:
    found = broker.call(ApiKey.DESCRIBE_ACLS, 3, describe_all(3), ADMIN)
    assert found.error_code == ErrorCode.NONE
    return [
        (r.resource_name, r.pattern_type, a.principal, a.operation)
        for r in found.resources
        for a in r.acls
    ]


def test_acls_are_kept_in_the_security_metadata_file_across_a_restart(secured):
    created = secured.call(
        ApiKey.CREATE_ACLS,
        3,
        CreateAclsRequest(
            creations=[
                creation("orders"),
                creation("ord", PT.PREFIXED, operation=OP.WRITE),
                creation("g", resource_type=RT.GROUP),
            ]
        ),
        ADMIN,
    )
    assert [r.error_code for r in created.results] == [0, 0, 0]
    before = described(secured)
    assert len(before) == 3
    path = secured.directory / SECURITY_METADATA_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    document = json.loads(path.read_text())
    assert document["version"] == 2
    assert {
        "resourceType": "Topic",
        "name": "ord",
        "patternType": "PREFIXED",
        "principal": ALICE,
        "permissionType": "Allow",
        "host": "*",
        "operation": "Write",
    } in document["acls"]

    secured.restart()
    assert described(secured) == before
    assert secured.ctx.authorizer.authorize(ALICE, "/10.0.0.1", OP.WRITE, RT.TOPIC, "orders")

    deleted = secured.call(
        ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[delete_filter("orders")]), ADMIN
    )
    assert [m.resource_name for m in deleted.filter_results[0].matching_acls] == ["orders"]
    secured.restart()
    assert [name for name, *_ in described(secured)] == ["ord", "g"]  # Topic before Group


def test_acls_and_scram_credentials_share_the_file_without_losing_each_other(secured):
    store = secured.ctx.scram_users.store
    store.set_scram_credentials({("alice", "SCRAM-SHA-256"): "salt=c2FsdA==,iterations=4096"})
    secured.call(ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=[creation("t")]), ADMIN)
    store.set_scram_credentials({("bob", "SCRAM-SHA-512"): "salt=YmFk,iterations=8192"})
    reopened = SecurityMetadata(secured.directory / SECURITY_METADATA_FILE)
    assert sorted(reopened.scram_credentials()) == ["alice", "bob"]
    assert [b.resource_name for b in reopened.acl_bindings()] == ["t"]


def test_a_creation_that_cannot_be_stored_is_refused_and_not_held(secured, tmp_path):
    secured.call(ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=[creation("kept")]), ADMIN)
    # the store's directory is gone: the file cannot be written
    secured.ctx.acl_changes.store.path = tmp_path / "gone" / SECURITY_METADATA_FILE
    created = secured.call(
        ApiKey.CREATE_ACLS,
        3,
        CreateAclsRequest(creations=[creation("t"), creation("u", operation=OP.ANY)]),
        ADMIN,
    )
    assert [r.error_code for r in created.results] == [
        ErrorCode.UNKNOWN_SERVER_ERROR,
        ErrorCode.INVALID_REQUEST,
    ]
    assert "could not be stored" in created.results[0].error_message
    assert [name for name, *_ in described(secured)] == ["kept"]

    deleted = secured.call(
        ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[delete_filter("kept")]), ADMIN
    )
    [result] = deleted.filter_results
    assert result.error_code == ErrorCode.NONE
    [matched] = result.matching_acls
    assert (matched.resource_name, matched.error_code) == ("kept", ErrorCode.UNKNOWN_SERVER_ERROR)
    assert [name for name, *_ in described(secured)] == ["kept"]
    secured.restart()
    assert [name for name, *_ in described(secured)] == ["kept"]


def test_deleting_matches_each_filter_and_keeps_the_rest(secured):
    secured.call(
        ApiKey.CREATE_ACLS,
        3,
        CreateAclsRequest(
            creations=[
                creation("a"),
                creation("a", operation=OP.WRITE),
                creation("b", principal="User:bob"),
                creation("b", PT.PREFIXED),
            ]
        ),
        ADMIN,
    )
    deleted = secured.call(
        ApiKey.DELETE_ACLS,
        3,
        DeleteAclsRequest(
            filters=[
                delete_filter("a", operation=OP.READ),
                delete_filter(None, principal_filter="User:bob"),
                delete_filter("b", pattern_type_filter=PT.PREFIXED),
                delete_filter("missing", pattern_type_filter=PT.LITERAL),
            ]
        ),
        ADMIN,
    )
    assert [
        [(m.resource_name, m.pattern_type, m.principal, m.operation) for m in r.matching_acls]
        for r in deleted.filter_results
    ] == [
        [("a", PT.LITERAL, ALICE, OP.READ)],
        [("b", PT.LITERAL, "User:bob", OP.READ)],
        [("b", PT.PREFIXED, ALICE, OP.READ)],
        [],
    ]
    secured.restart()
    assert described(secured) == [("a", PT.LITERAL, ALICE, OP.WRITE)]
