"""The SASL state of a connection: handshake, tokens in SaslAuthenticate or bare (v0),
refusals, and re-authentication (KIP-368), without sockets."""

from __future__ import annotations

import pytest
import scramp

from wirekafka.listener_security import ListenerSecurity, SaslSettings
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from wirekafka.protocol.messages.sasl_handshake import SaslHandshakeRequest
from wirekafka.protocol.rpc import decode_request, encode_request
from wirekafka.security.scram_credentials import new_credential
from wirekafka.server.authentication import AuthenticationFailed, SaslAuthenticator

MECHANISMS = ("PLAIN", "SCRAM-SHA-256")
CREDENTIALS = {("SCRAM-SHA-256", "carol"): new_credential("SCRAM-SHA-256", "carol-secret")}


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def authenticator(reauth_ms: int = 0, clock: Clock | None = None) -> SaslAuthenticator:
    listener = ListenerSecurity(
        "SASL_PLAINTEXT",
        "SASL_PLAINTEXT",
        tls=None,
        sasl=SaslSettings(MECHANISMS, {}, {"alice": "alice-secret"}),
        reauth_ms=reauth_ms,
    )
    return SaslAuthenticator(
        listener,
        {"alice": "alice-secret"},
        lambda mechanism, user: CREDENTIALS.get((mechanism, user)),
        clock or Clock(),
    )


def request(api_key: ApiKey, version: int, body: object):
    return decode_request(bytearray(encode_request(RequestHeader(api_key, version, 1, "t"), body)))


def handshake(auth: SaslAuthenticator, mechanism: str, version: int = 1):
    body = SaslHandshakeRequest(mechanism=mechanism)
    return auth.handshake(request(ApiKey.SASL_HANDSHAKE, version, body))


def authenticate(auth: SaslAuthenticator, token: bytes, version: int = 2):
    return auth.authenticate(
        request(ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token))
    )


def test_plain_in_saslauthenticate_sets_the_principal():
    auth = authenticator()
    answer = handshake(auth, "PLAIN")
    assert (answer.error_code, answer.mechanisms) == (ErrorCode.NONE, list(MECHANISMS))
    assert authenticate(auth, b"\x00alice\x00alice-secret").error_code == ErrorCode.NONE
    assert auth.principal == "User:alice"
    assert not auth.exchanging


def test_scram_takes_two_round_trips():
    auth = authenticator()
    handshake(auth, "SCRAM-SHA-256")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "carol", "carol-secret")
    first = authenticate(auth, client.get_client_first().encode())
    assert auth.principal is None and auth.exchanging
    client.set_server_first(first.auth_bytes.decode())
    final = authenticate(auth, client.get_client_final().encode())
    client.set_server_final(final.auth_bytes.decode())  # the server proved it knows the key
    assert auth.principal == "User:carol"


def test_handshake_v0_switches_to_bare_tokens():
    auth = authenticator()
    handshake(auth, "PLAIN", version=0)
    assert auth.raw_tokens
    assert auth.raw_token(b"\x00alice\x00alice-secret") == b""
    assert auth.principal == "User:alice" and not auth.raw_tokens
    refused = authenticator()
    handshake(refused, "PLAIN", version=0)
    with pytest.raises(AuthenticationFailed) as failed:
        refused.raw_token(b"\x00alice\x00wrong")
    assert failed.value.response is None  # v0 has no error answer: the connection closes


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones():
    with pytest.raises(AuthenticationFailed) as failed:
        handshake(authenticator(), "GSSAPI")
    response = failed.value.response
    assert (response.error_code, response.mechanisms) == (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        list(MECHANISMS),
    )


def test_a_wrong_password_is_answered_with_kafkas_message_and_no_secret():
    auth = authenticator()
    handshake(auth, "PLAIN")
    with pytest.raises(AuthenticationFailed) as failed:
        authenticate(auth, b"\x00alice\x00not-the-password")
    response = failed.value.response
    assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert response.error_message == "Authentication failed: Invalid username or password"
    assert "not-the-password" not in failed.value.reason + repr(response)
    assert auth.principal is None


def test_out_of_order_requests_are_illegal_states():
    auth = authenticator()
    with pytest.raises(AuthenticationFailed) as failed:
        authenticate(auth, b"\x00alice\x00alice-secret")  # before any handshake
    assert failed.value.response.error_code == ErrorCode.ILLEGAL_SASL_STATE
    handshake(auth, "PLAIN")
    with pytest.raises(AuthenticationFailed) as again:
        handshake(auth, "PLAIN")  # a second handshake in one exchange
    assert again.value.response.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_reauthentication_gives_a_lifetime_and_keeps_the_principal():
    clock = Clock()
    auth = authenticator(reauth_ms=5000, clock=clock)
    handshake(auth, "PLAIN")
    assert authenticate(auth, b"\x00alice\x00alice-secret").session_lifetime_ms == 5000
    clock.now_s += 4.9
    assert not auth.expired()
    clock.now_s += 0.2
    assert auth.expired()
    handshake(auth, "PLAIN")  # the client authenticates again, on the same connection
    assert authenticate(auth, b"\x00alice\x00alice-secret").session_lifetime_ms == 5000
    assert not auth.expired() and auth.principal == "User:alice"


def test_reauthentication_as_another_principal_is_refused():
    auth = authenticator(reauth_ms=5000)
    handshake(auth, "PLAIN")
    authenticate(auth, b"\x00alice\x00alice-secret")
    handshake(auth, "SCRAM-SHA-256")
    client = scramp.ScramClient(["SCRAM-SHA-256"], "carol", "carol-secret")
    first = authenticate(auth, client.get_client_first().encode())
    client.set_server_first(first.auth_bytes.decode())
    with pytest.raises(AuthenticationFailed) as failed:
        authenticate(auth, client.get_client_final().encode())
    assert "Cannot change principals" in failed.value.response.error_message
    assert auth.principal == "User:alice"
