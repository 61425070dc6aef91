"""The embedded security metadata file's ACL part: what older files read as, and
files that are not this broker's refused with the file named."""

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
from wirekafka.security.acl_updates import adding
from wirekafka.storage.security_metadata import (
    FILE_MODE,
    SECURITY_METADATA_FILE,
    SecurityMetadata,
    SecurityMetadataError,
)

CREDENTIAL = "salt=c2FsdA==,stored_key=a2V5,server_key=c2Vy,iterations=4096"
READ_T = AclBinding(
    ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", "*",
    AclOperation.READ, AclPermissionType.ALLOW,
)  # fmt: skip


def test_a_version_1_file_has_no_acls_and_keeps_its_credentials_when_they_come(tmp_path):
    path = tmp_path / SECURITY_METADATA_FILE
    path.write_text(
        json.dumps({"version": 1, "scram_credentials": {"alice": {"SCRAM-SHA-256": CREDENTIAL}}})
    )
    store = SecurityMetadata(path)
    assert store.acl_bindings() == []
    [update] = store.update_acls({READ_T.pattern: adding([READ_T])}).values()
    assert update.after == {READ_T} and update.changed
    document = json.loads(path.read_text())
    assert document["version"] == 2
    assert document["scram_credentials"] == {"alice": {"SCRAM-SHA-256": CREDENTIAL}}
    assert path.stat().st_mode & 0o777 == FILE_MODE
    assert SecurityMetadata(path).acl_bindings() == [READ_T]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"version": 3, "scram_credentials": {}}, "not a version 1 or 2 document"),
        ({"version": 2, "scram_credentials": {}, "acls": {"t": 1}}, "malformed ACLs"),
        (
            {"version": 2, "scram_credentials": {}, "acls": [{"resourceType": "Topic"}]},
            "malformed ACLs",
        ),
    ],
)
def test_a_file_that_is_not_this_brokers_is_refused_naming_it(tmp_path, document, message):
    path = tmp_path / SECURITY_METADATA_FILE
    path.write_text(json.dumps(document))
    with pytest.raises(SecurityMetadataError, match=message) as caught:
        SecurityMetadata(path)
    assert str(path) in str(caught.value)


def test_a_change_that_changes_nothing_writes_nothing(tmp_path):
    path = tmp_path / SECURITY_METADATA_FILE
    store = SecurityMetadata(path)
    [update] = store.update_acls({READ_T.pattern: lambda held: held}).values()
    assert not update.changed
    assert not path.exists()
