"""SASL/PLAIN on the server: RFC 4616 messages against the JAAS users."""

from __future__ import annotations

import pytest

from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.sasl import SaslAuthenticationError, sasl_server

USERS = {"alice": "alice-secret", "admin": "admin-secret", "ünï": "pässwörd"}
INVALID = "Authentication failed: Invalid username or password"
UNEXPLAINED = (
    "Authentication failed during authentication due to invalid credentials"
    " with SASL mechanism PLAIN"
)


def _server(**kwargs):
    return sasl_server("PLAIN", USERS, lambda mechanism, user: None, **kwargs)


@pytest.mark.parametrize(
    ("token", "principal"),
    [
        (b"\x00alice\x00alice-secret", "User:alice"),
        (b"alice\x00alice\x00alice-secret", "User:alice"),  # authzid = the user
        ("\x00ünï\x00pässwörd".encode(), "User:ünï"),
    ],
)
def test_good_credentials_authenticate_in_one_step(token, principal):
    server = _server()
    assert server.evaluate(token) == b""
    assert server.complete
    assert server.principal == principal
    assert server.mechanism == "PLAIN"


@pytest.mark.parametrize(
    "token",
    [
        b"\x00alice\x00wrong",
        b"\x00alice\x00alice-secre",
        b"\x00alice\x00alice-secret2",
        b"\x00mallory\x00alice-secret",
        b"\x00Alice\x00alice-secret",
        b"\x00alice\x00\xffalice-secret",
    ],
)
def test_wrong_password_and_unknown_user_get_the_same_message(token):
    server = _server()
    with pytest.raises(SaslAuthenticationError) as failure:
        server.evaluate(token)
    assert failure.value.message == INVALID
    assert failure.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert b"secret" not in failure.value.reason.encode()
    assert not server.complete


def test_another_authorization_id_is_refused_with_kafkas_message():
    with pytest.raises(SaslAuthenticationError) as failure:
        _server().evaluate(b"admin\x00alice\x00alice-secret")
    assert "authorization id that is different from username" in failure.value.message


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"garbage",
        b"alice\x00alice-secret",  # one separator
        b"\x00alice\x00alice-secret\x00",  # three
        b"\x00\x00alice-secret",  # no user name
        b"\x00alice\x00",  # no password
        b"\x00\xffalice\x00alice-secret",  # user name not UTF-8
        b"\xff\x00alice\x00alice-secret",
        b"\x00" * 1000,
    ],
)
def test_malformed_messages_get_the_message_that_explains_nothing(token):
    with pytest.raises(SaslAuthenticationError) as failure:
        _server().evaluate(token)
    assert failure.value.message == UNEXPLAINED


def test_no_users_means_no_one_authenticates():
    server = sasl_server("PLAIN", {}, lambda mechanism, user: None)
    with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
        server.evaluate(b"\x00alice\x00alice-secret")


def test_reauthentication_changes_the_wording():
    with pytest.raises(SaslAuthenticationError, match="during re-authentication"):
        _server(reauthentication=True).evaluate(b"garbage")


def test_tokens_after_the_exchange_are_an_illegal_state():
    done = _server()
    done.evaluate(b"\x00alice\x00alice-secret")
    failed = _server()
    with pytest.raises(SaslAuthenticationError):
        failed.evaluate(b"\x00alice\x00wrong")
    for server in (done, failed):
        with pytest.raises(SaslAuthenticationError) as failure:
            server.evaluate(b"\x00alice\x00alice-secret")
        assert failure.value.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert not failed.complete
    with pytest.raises(RuntimeError):
        failed.principal  # noqa: B018
