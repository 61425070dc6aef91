"""The client side of SASL (what a broker sends another), driven against the server side."""

from __future__ import annotations

import pytest

from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from wirekafka.protocol.messages.sasl_handshake import SaslHandshakeResponse
from wirekafka.security.jaas import parse_jaas_config
from wirekafka.security.sasl import SaslAuthenticationError, SaslServer, sasl_server
from wirekafka.security.sasl_client import (
    SaslClient,
    SaslClientError,
    SaslCredentials,
    check_authenticate,
    check_handshake,
    client_credentials,
    sasl_client,
)
from wirekafka.security.scram_credentials import SCRAM_MECHANISMS, new_credential

PASSWORD = "broker-secret"
USERS = {"broker": PASSWORD, "a=b,c": PASSWORD}


def _server(mechanism: str) -> SaslServer:
    store = {
        (m, name): new_credential(m, password, 4096)
        for m in SCRAM_MECHANISMS
        for name, password in USERS.items()
    }
    return sasl_server(mechanism, USERS, lambda m, u: store.get((m, u)))


def _run(client: SaslClient, server: SaslServer) -> int:
    """The exchange as the connection drives it; the number of tokens sent."""
    token: bytes | None = client.initial_token()
    sent = 0
    while token is not None:
        sent += 1
        token = client.evaluate(server.evaluate(token))
    return sent


@pytest.mark.parametrize("mechanism", ["PLAIN", *SCRAM_MECHANISMS])
@pytest.mark.parametrize("username", list(USERS))
def test_the_client_authenticates_to_the_server(mechanism, username):
    client = sasl_client(SaslCredentials(mechanism, username, PASSWORD))
    server = _server(mechanism)
    assert _run(client, server) == (1 if mechanism == "PLAIN" else 2)
    assert client.complete and client.mechanism == mechanism
    assert server.principal == f"User:{username}"


@pytest.mark.parametrize("mechanism", ["PLAIN", *SCRAM_MECHANISMS])
def test_a_wrong_password_is_refused_by_the_server(mechanism):
    client = sasl_client(SaslCredentials(mechanism, "broker", "not-the-password"))
    with pytest.raises(SaslAuthenticationError):
        _run(client, _server(mechanism))
    assert not client.complete


@pytest.mark.parametrize("mechanism", SCRAM_MECHANISMS)
def test_a_server_that_does_not_know_the_password_is_refused_by_the_client(mechanism):
    client = sasl_client(SaslCredentials(mechanism, "broker", PASSWORD))
    server = _server(mechanism)
    client_final = client.evaluate(server.evaluate(client.initial_token()))
    assert client_final is not None
    server.evaluate(client_final)
    forged = "v=" + "A" * (44 if mechanism.endswith("256") else 88)
    with pytest.raises(SaslClientError, match="signature") as raised:
        client.evaluate(forged.encode())
    assert PASSWORD not in str(raised.value)
    assert "'broker'" in str(raised.value)
    assert not client.complete
    with pytest.raises(SaslClientError):  # a failed exchange stays failed
        client.evaluate(b"v=x")


@pytest.mark.parametrize(
    "answer", [b"\xff\xfe", b"garbage", b"r=other-nonce,s=c2FsdA==,i=4096", b"e=other-error"]
)
def test_a_malformed_server_first_message_is_a_client_error(answer):
    client = sasl_client(SaslCredentials("SCRAM-SHA-256", "broker", PASSWORD))
    client.initial_token()
    with pytest.raises(SaslClientError, match="SASL/SCRAM-SHA-256 as user 'broker'"):
        client.evaluate(answer)


def test_tokens_out_of_order_are_client_errors():
    plain = sasl_client(SaslCredentials("PLAIN", "broker", PASSWORD))
    with pytest.raises(SaslClientError):
        plain.evaluate(b"")  # before the initial token
    plain.initial_token()
    with pytest.raises(SaslClientError):
        plain.initial_token()
    assert plain.evaluate(b"") is None and plain.complete
    with pytest.raises(SaslClientError):
        plain.evaluate(b"")
    scram = sasl_client(SaslCredentials("SCRAM-SHA-512", "broker", PASSWORD))
    with pytest.raises(SaslClientError, match="does not expect"):
        scram.evaluate(b"r=x,s=eA==,i=4096")


def test_the_plain_token_is_rfc_4616s():
    client = sasl_client(SaslCredentials("PLAIN", "brøker", "pässword"))
    assert client.initial_token() == b"\x00br\xc3\xb8ker\x00p\xc3\xa4ssword"


@pytest.mark.parametrize(
    ("module", "mechanism"),
    [
        ("org.apache.kafka.common.security.plain.PlainLoginModule", "PLAIN"),
        ("org.apache.kafka.common.security.scram.ScramLoginModule", "SCRAM-SHA-512"),
    ],
)
def test_credentials_are_the_username_and_password_options(module, mechanism):
    entry = parse_jaas_config(
        f'{module} required username="broker" password="{PASSWORD}" user_broker="{PASSWORD}";'
    )
    credentials = client_credentials(mechanism, entry)
    assert (credentials.mechanism, credentials.username, credentials.password) == (
        mechanism,
        "broker",
        PASSWORD,
    )
    assert PASSWORD not in repr(credentials)


@pytest.mark.parametrize(
    ("options", "missing"),
    [
        ('user_broker="x"', "no username and no password option"),
        ('username="broker"', "no password option"),
        ('password="x"', "no username option"),
        ('username="" password="x"', "no username option"),
    ],
)
def test_credentials_without_username_or_password_are_errors(options, missing):
    entry = parse_jaas_config(
        f"org.apache.kafka.common.security.plain.PlainLoginModule required {options};"
    )
    with pytest.raises(ValueError, match=missing) as raised:
        client_credentials("PLAIN", entry)
    assert '"x"' not in str(raised.value) and "'x'" not in str(raised.value)


def test_a_mechanism_without_a_client_is_an_error():
    entry = parse_jaas_config("x required username=a password=b;")
    with pytest.raises(ValueError, match="GSSAPI"):
        client_credentials("GSSAPI", entry)


def test_handshake_answers():
    check_handshake(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]), "PLAIN")
    refused = SaslHandshakeResponse(
        error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=["SCRAM-SHA-512"]
    )
    with pytest.raises(
        SaslClientError, match=r"PLAIN on this listener \(it enables: SCRAM-SHA-512\)"
    ):
        check_handshake(refused, "PLAIN")
    state = SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    with pytest.raises(SaslClientError, match="answered ILLEGAL_SASL_STATE"):
        check_handshake(state, "PLAIN")


def test_authenticate_answers_carry_the_brokers_message():
    credentials = SaslCredentials("PLAIN", "broker", PASSWORD)
    ok = SaslAuthenticateResponse(
        error_code=0, error_message=None, auth_bytes=b"", session_lifetime_ms=0
    )
    check_authenticate(ok, credentials)
    failed = SaslAuthenticateResponse(
        error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
        error_message="Authentication failed: Invalid username or password",
        auth_bytes=b"",
        session_lifetime_ms=0,
    )
    with pytest.raises(SaslClientError) as raised:
        check_authenticate(failed, credentials)
    assert str(raised.value) == (
        "SASL/PLAIN authentication as user 'broker' failed: SASL_AUTHENTICATION_FAILED: "
        "Authentication failed: Invalid username or password"
    )
