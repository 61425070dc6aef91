"""DescribeUserScramCredentials, AlterUserScramCredentials and DescribeClientQuotas,
against the embedded default's security-metadata.json."""

from __future__ import annotations

import json
import stat

import pytest

from tests.handlers.support import TestBroker
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from wirekafka.protocol.messages.describe_client_quotas import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    ComponentData,
    DescribeClientQuotasRequest,
)
from wirekafka.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from wirekafka.security.scram_credentials import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramMechanism,
    new_credential,
    parse_credential,
    salted_password,
)
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE

SHA256, SHA512 = SCRAM_SHA_256.type, SCRAM_SHA_512.type


def upsertion(
    user: str,
    mechanism: ScramMechanism = SCRAM_SHA_256,
    password: str = "secret",
    iterations: int = 4096,
    salt: bytes = b"some-salt",
) -> ScramCredentialUpsertion:
    return ScramCredentialUpsertion(
        name=user,
        mechanism=mechanism.type,
        iterations=iterations,
        salt=salt,
        salted_password=salted_password(mechanism.name, password, salt, iterations),
    )


def deletion(user: str, mechanism: ScramMechanism = SCRAM_SHA_256) -> ScramCredentialDeletion:
    return ScramCredentialDeletion(name=user, mechanism=mechanism.type)


def alter(
    broker: TestBroker,
    upsertions: list[ScramCredentialUpsertion] = [],  # noqa: B006  (never changed)
    deletions: list[ScramCredentialDeletion] = [],  # noqa: B006
) -> list[tuple[str, int, str | None]]:
    response = broker.call(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions),
    )
    assert response.throttle_time_ms == 0
    return [(r.user, r.error_code, r.error_message) for r in response.results]


def describe(broker: TestBroker, users: list[str] | None = None) -> list[tuple[str, int, object]]:
    """(user, error code, error message or [(mechanism type, iterations)])."""
    request = DescribeUserScramCredentialsRequest(
        users=None if users is None else [UserName(name=u) for u in users]
    )
    response = broker.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, request)
    assert (response.error_code, response.error_message) == (ErrorCode.NONE, None)
    return [
        (
            r.user,
            r.error_code,
            r.error_message
            if r.error_code
            else [(i.mechanism, i.iterations) for i in r.credential_infos],
        )
        for r in response.results
    ]


def stored(broker: TestBroker) -> dict[str, dict[str, str]]:
    path = broker.directory / SECURITY_METADATA_FILE
    return json.loads(path.read_text())["scram_credentials"]


def test_credentials_are_added_described_and_kept_salted(broker):
    assert alter(
        broker,
        [
            upsertion("alice", SCRAM_SHA_256, "alice-secret", 8192),
            upsertion("alice", SCRAM_SHA_512, "alice-secret"),
            upsertion("bob", SCRAM_SHA_512, "bob-secret"),
        ],
    ) == [("alice", ErrorCode.NONE, None), ("bob", ErrorCode.NONE, None)]
    everyone = [
        ("alice", ErrorCode.NONE, [(SHA256, 8192), (SHA512, 4096)]),
        ("bob", ErrorCode.NONE, [(SHA512, 4096)]),
    ]
    assert describe(broker) == everyone
    assert describe(broker, []) == everyone  # empty, like null: every user
    assert describe(broker, ["bob"]) == everyone[1:]
    # what a SASL login checks against: the keys of the password, with the salt sent
    expected = new_credential("SCRAM-SHA-256", "alice-secret", 8192, salt=b"some-salt")
    assert broker.ctx.scram_users is not None
    assert broker.ctx.scram_users.lookup("SCRAM-SHA-256", "alice") == expected
    assert broker.ctx.scram_users.lookup("SCRAM-SHA-256", "bob") is None
    # on disk in Kafka's text form, owner-only, without the salted password
    path = broker.directory / SECURITY_METADATA_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert parse_credential(stored(broker)["alice"]["SCRAM-SHA-256"]) == expected
    salted = salted_password("SCRAM-SHA-256", "alice-secret", b"some-salt", 8192)
    assert salted not in path.read_bytes() and b"alice-secret" not in path.read_bytes()
    broker.restart()
    assert describe(broker) == everyone
    assert broker.ctx.scram_users.lookup("SCRAM-SHA-256", "alice") == expected


def test_an_upsertion_replaces_the_credential(broker):
    alter(broker, [upsertion("alice", password="old", iterations=4096)])
    assert alter(broker, [upsertion("alice", password="new", iterations=5000)]) == [
        ("alice", ErrorCode.NONE, None)
    ]
    assert describe(broker, ["alice"]) == [("alice", ErrorCode.NONE, [(SHA256, 5000)])]
    assert broker.ctx.scram_users.lookup("SCRAM-SHA-256", "alice") == new_credential(
        "SCRAM-SHA-256", "new", 5000, salt=b"some-salt"
    )


def test_deletions_remove_credentials_and_then_the_user(broker):
    alter(broker, [upsertion("alice", SCRAM_SHA_256), upsertion("alice", SCRAM_SHA_512)])
    assert alter(broker, deletions=[deletion("alice", SCRAM_SHA_512)]) == [
        ("alice", ErrorCode.NONE, None)
    ]
    assert describe(broker) == [("alice", ErrorCode.NONE, [(SHA256, 4096)])]
    assert broker.ctx.scram_users.lookup("SCRAM-SHA-512", "alice") is None
    assert alter(broker, deletions=[deletion("alice", SCRAM_SHA_256)]) == [
        ("alice", ErrorCode.NONE, None)
    ]
    assert describe(broker) == []
    assert stored(broker) == {}


def test_one_mechanism_deleted_and_another_added_in_one_request(broker):
    # kafka-configs --add-config SCRAM-SHA-512=[...] --delete-config SCRAM-SHA-256
    alter(broker, [upsertion("alice", SCRAM_SHA_256)])
    assert alter(
        broker, [upsertion("alice", SCRAM_SHA_512)], [deletion("alice", SCRAM_SHA_256)]
    ) == [("alice", ErrorCode.NONE, None)]
    assert describe(broker) == [("alice", ErrorCode.NONE, [(SHA512, 4096)])]


def test_describe_names_duplicates_and_users_without_credentials(broker):
    alter(broker, [upsertion("alice")])
    assert describe(broker, ["carol", "alice", "dave", "carol", "carol"]) == [
        (
            "carol",
            ErrorCode.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: carol",
        ),
        ("alice", ErrorCode.NONE, [(SHA256, 4096)]),
        (
            "dave",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: dave",
        ),
    ]


def test_describe_with_no_users_at_all(broker):
    assert describe(broker) == []
    assert describe(broker, ["alice"]) == [
        (
            "alice",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: alice",
        )
    ]


TWICE = (
    ErrorCode.DUPLICATE_RESOURCE,
    "A user credential cannot be altered twice in the same request",
)


@pytest.mark.parametrize(
    ("upsertions", "deletions"),
    [
        ([upsertion("carol"), upsertion("carol", password="other")], []),
        ([upsertion("carol")], [deletion("carol")]),
        ([], [deletion("carol"), deletion("carol")]),
    ],
    ids=["upserted-twice", "deleted-and-upserted", "deleted-twice"],
)
def test_the_same_credential_twice_refuses_that_user_alone(broker, upsertions, deletions):
    alter(broker, [upsertion("carol", SCRAM_SHA_512)])
    before = stored(broker)
    results = alter(broker, [*upsertions, upsertion("erin")], deletions)
    assert sorted(results) == sorted([("carol", *TWICE), ("erin", ErrorCode.NONE, None)])
    assert stored(broker)["carol"] == before["carol"]
    assert describe(broker, ["carol"]) == [("carol", ErrorCode.NONE, [(SHA512, 4096)])]


def test_deleting_a_missing_credential_refuses_the_whole_user(broker):
    alter(broker, [upsertion("alice", SCRAM_SHA_256)])
    results = alter(
        broker,
        [upsertion("alice", SCRAM_SHA_256, "changed", 5000), upsertion("bob")],
        [deletion("alice", SCRAM_SHA_512)],
    )
    assert results == [
        (
            "alice",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        ("bob", ErrorCode.NONE, None),
    ]
    # alice's upsertion was not made either
    assert describe(broker, ["alice"]) == [("alice", ErrorCode.NONE, [(SHA256, 4096)])]
    assert alter(broker, deletions=[deletion("nobody")]) == [
        (
            "nobody",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        )
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            upsertion("carol", iterations=4095),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ),
        (
            upsertion("carol", iterations=16385),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ),
        (
            upsertion("carol", salt=b""),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt must not be empty"),
        ),
        (
            ScramCredentialUpsertion(
                name="carol", mechanism=3, iterations=4096, salt=b"s", salted_password=b"p"
            ),
            (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ),
        (
            ScramCredentialUpsertion(
                name="carol", mechanism=1, iterations=4096, salt=b"s", salted_password=b""
            ),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salted password must not be empty"),
        ),
        (deletion(""), (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")),
        (
            ScramCredentialDeletion(name="carol", mechanism=0),
            (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ),
    ],
    ids=[
        "few-iterations",
        "many-iterations",
        "empty-salt",
        "unknown-mechanism",
        "empty-salted-password",
        "empty-name",
        "unknown-deletion",
    ],
)
def test_unacceptable_changes_refuse_their_user(broker, change, expected):
    upsertions = [change] if isinstance(change, ScramCredentialUpsertion) else []
    deletions = [change] if isinstance(change, ScramCredentialDeletion) else []
    # the same user's acceptable change is not made either
    upsertions.append(upsertion(change.name, SCRAM_SHA_512))
    assert alter(broker, upsertions, deletions) == [(change.name, *expected)]
    assert describe(broker) == []


def test_a_change_that_cannot_be_stored_refuses_its_users(broker):
    alter(broker, [upsertion("alice")])
    path = broker.directory / SECURITY_METADATA_FILE
    path.unlink()
    path.mkdir()  # the file cannot be replaced now
    try:
        results = alter(broker, [upsertion("bob")], [deletion("alice")])
    finally:
        path.rmdir()
    assert results == [
        ("alice", ErrorCode.UNKNOWN_SERVER_ERROR, "The SCRAM credentials could not be stored"),
        ("bob", ErrorCode.UNKNOWN_SERVER_ERROR, "The SCRAM credentials could not be stored"),
    ]
    assert describe(broker) == [("alice", ErrorCode.NONE, [(SHA256, 4096)])]


def test_a_user_name_outside_ascii_is_kept_as_it_is(broker):
    name = "zoë ~*/+%"
    assert alter(broker, [upsertion(name)]) == [(name, ErrorCode.NONE, None)]
    broker.restart()
    assert describe(broker, [name]) == [(name, ErrorCode.NONE, [(SHA256, 4096)])]


# DescribeClientQuotas


def quotas(broker: TestBroker, version: int, *components: ComponentData, strict: bool = False):
    response = broker.call(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        version,
        DescribeClientQuotasRequest(components=list(components), strict=strict),
    )
    return response.error_code, response.error_message, response.entries


@pytest.mark.parametrize("version", [0, 1])
def test_client_quotas_are_none(broker, version):
    # what kafka-configs --describe --entity-type users asks
    any_user = ComponentData(entity_type="user", match_type=MATCH_ANY, match=None)
    assert quotas(broker, version, any_user) == (ErrorCode.NONE, None, [])
    alice = ComponentData(entity_type="user", match_type=MATCH_EXACT, match="alice")
    default_client = ComponentData(entity_type="client-id", match_type=MATCH_DEFAULT, match=None)
    assert quotas(broker, version, alice, default_client, strict=True) == (ErrorCode.NONE, None, [])


@pytest.mark.parametrize(
    ("components", "expected"),
    [
        ([("", MATCH_ANY, None)], (ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")),
        (
            [("user", MATCH_ANY, None), ("user", MATCH_EXACT, "a")],
            (
                ErrorCode.INVALID_REQUEST,
                "Entity type user cannot appear more than once in the filter.",
            ),
        ),
        (
            [("group", MATCH_ANY, None)],
            (ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group"),
        ),
        (
            [("user", MATCH_EXACT, None)],
            (
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            ),
        ),
        (
            [("user", MATCH_DEFAULT, "a")],
            (
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            ),
        ),
        (
            [("user", MATCH_ANY, "a")],
            (
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
            ),
        ),
        ([("user", 7, None)], (ErrorCode.INVALID_REQUEST, "Unknown match type 7")),
        (
            [("ip", MATCH_ANY, None), ("client-id", MATCH_ANY, None)],
            (
                ErrorCode.INVALID_REQUEST,
                "Invalid entity filter component combination. IP filter component should not "
                "be used with user or clientId filter component.",
            ),
        ),
    ],
)
def test_client_quota_filters_kafka_refuses(broker, components, expected):
    asked = [ComponentData(entity_type=t, match_type=m, match=v) for t, m, v in components]
    assert quotas(broker, 1, *asked) == (*expected, None)


def test_a_stored_credential_that_cannot_be_read_is_reported_not_used(broker):
    alter(broker, [upsertion("alice"), upsertion("bob")])
    path = broker.directory / SECURITY_METADATA_FILE
    document = json.loads(path.read_text())
    document["scram_credentials"]["alice"]["SCRAM-SHA-256"] = "salt=,iterations=x"
    path.write_text(json.dumps(document))
    broker.restart()
    assert describe(broker) == [
        (
            "alice",
            ErrorCode.UNKNOWN_SERVER_ERROR,
            "The stored SCRAM credential cannot be read: alice",
        ),
        ("bob", ErrorCode.NONE, [(SHA256, 4096)]),
    ]
    assert broker.ctx.scram_users.lookup("SCRAM-SHA-256", "alice") is None
    # a new credential replaces it
    assert alter(broker, [upsertion("alice")]) == [("alice", ErrorCode.NONE, None)]
    assert describe(broker, ["alice"]) == [("alice", ErrorCode.NONE, [(SHA256, 4096)])]
