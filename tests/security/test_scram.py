"""SASL/SCRAM on the server, driven by scramp's client and by hand-made messages."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
import scramp

from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.sasl import SaslAuthenticationError, sasl_server
from wirekafka.security.scram_credentials import (
    SCRAM_MECHANISMS,
    ScramCredential,
    new_credential,
    salted_password,
)

MECHANISMS = list(SCRAM_MECHANISMS)
PASSWORD = "alice-secret"
ITERATIONS = 4096
SALT = b"fixed-salt-for-tests"


def _store(mechanism: str, iterations: int = ITERATIONS) -> dict[tuple[str, str], ScramCredential]:
    return {(mechanism, "alice"): new_credential(mechanism, PASSWORD, iterations, salt=SALT)}


def _server(mechanism: str, store=None, **kwargs):
    store = _store(mechanism) if store is None else store
    return sasl_server(mechanism, {}, lambda m, u: store.get((m, u)), **kwargs)


def _exchange(mechanism: str, username: str, password: str, server=None):
    """Runs scramp's client against our server; returns (server, client)."""
    server = _server(mechanism) if server is None else server
    client = scramp.ScramClient([mechanism], username, password)
    server_first = server.evaluate(client.get_client_first().encode())
    client.set_server_first(server_first.decode())
    server_final = server.evaluate(client.get_client_final().encode())
    client.set_server_final(server_final.decode())  # checks the server's signature
    return server, client


def _invalid(mechanism: str) -> str:
    return (
        "Authentication failed during authentication due to invalid credentials"
        f" with SASL mechanism {mechanism}"
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_full_exchange_authenticates_and_the_client_verifies_the_server(mechanism):
    server, _ = _exchange(mechanism, "alice", PASSWORD)
    assert server.complete
    assert server.principal == "User:alice"
    assert server.mechanism == mechanism


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_fails_at_the_proof_with_kafkas_message(mechanism):
    server = _server(mechanism)
    with pytest.raises(SaslAuthenticationError) as failure:
        _exchange(mechanism, "alice", "not-the-password", server)
    assert failure.value.message == _invalid(mechanism)
    assert failure.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "not-the-password" not in failure.value.reason
    assert not server.complete


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_unknown_user_is_answered_like_a_known_one_and_fails_like_a_wrong_password(mechanism):
    known_first = _server(mechanism).evaluate(b"n,,n=alice,r=abc")
    server = _server(mechanism)
    first = server.evaluate(b"n,,n=mallory,r=abc")
    # the same shape: nonce, a salt of the same kind, the default iterations
    assert first.startswith(b"r=abc") and first.endswith(b",i=4096")
    assert known_first.endswith(b",i=4096")
    # asking twice gives the same salt, as for a real user
    again = _server(mechanism).evaluate(b"n,,n=mallory,r=abc")
    assert first.split(b",")[1] == again.split(b",")[1]
    with pytest.raises(SaslAuthenticationError) as failure:
        _exchange(mechanism, "mallory", PASSWORD)
    assert failure.value.message == _invalid(mechanism)


def test_the_credential_is_looked_up_per_mechanism():
    store = _store("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationError):
        _exchange("SCRAM-SHA-512", "alice", PASSWORD, _server("SCRAM-SHA-512", store))


def test_credentials_below_kafkas_minimum_iterations_are_refused():
    weak = {("SCRAM-SHA-256", "alice"): new_credential("SCRAM-SHA-256", PASSWORD, 4095)}
    with pytest.raises(SaslAuthenticationError) as failure:
        _server("SCRAM-SHA-256", weak).evaluate(b"n,,n=alice,r=abc")
    assert failure.value.message == _invalid("SCRAM-SHA-256")
    assert "4095" in failure.value.reason


def test_reauthentication_changes_the_wording():
    server = _server("SCRAM-SHA-256", reauthentication=True)
    with pytest.raises(SaslAuthenticationError, match="during re-authentication"):
        _exchange("SCRAM-SHA-256", "alice", "wrong", server)


# Kafka's grammar: escaped names, the authorization id, extensions


def _client_proof(mechanism, password, client_first_bare, server_first, final_without_proof):
    hash_name = SCRAM_MECHANISMS[mechanism].hash_name
    salted = salted_password(mechanism, password, SALT, ITERATIONS)
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    auth_message = f"{client_first_bare},{server_first},{final_without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, hash_name)
    return base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))


def _manual_exchange(mechanism, client_first: str, username="alice", password=PASSWORD):
    """An exchange with a client-first message scramp's client cannot write."""
    store = {(mechanism, username): new_credential(mechanism, password, ITERATIONS, salt=SALT)}
    server = _server(mechanism, store)
    server_first = server.evaluate(client_first.encode()).decode()
    nonce = server_first.split(",")[0][2:]
    gs2, _, rest = client_first.partition(",")
    authzid, _, bare = rest.partition(",")
    channel = base64.b64encode(f"{gs2},{authzid},".encode()).decode()
    without_proof = f"c={channel},r={nonce}"
    proof = _client_proof(mechanism, password, bare, server_first, without_proof).decode()
    server.evaluate(f"{without_proof},p={proof}".encode())
    return server


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_unknown_extensions_are_ignored_but_signed(mechanism):
    server = _manual_exchange(mechanism, "n,,n=alice,r=abc,foo=bar,x=1")
    assert server.principal == "User:alice"


def test_authorization_id_equal_to_the_user_is_accepted():
    server = _manual_exchange("SCRAM-SHA-256", "n,a=alice,n=alice,r=abc")
    assert server.principal == "User:alice"


def test_escaped_user_names_are_unescaped():
    server = _manual_exchange("SCRAM-SHA-256", "n,,n=a=2Cb=3Dc,r=abc", username="a,b=c")
    assert server.principal == "User:a,b=c"


def test_another_authorization_id_gets_kafkas_message():
    with pytest.raises(SaslAuthenticationError) as failure:
        _server("SCRAM-SHA-256").evaluate(b"n,a=bob,n=alice,r=abc")
    assert failure.value.message == (
        "Authentication failed: Client requested an authorization id that is different"
        " from username"
    )


@pytest.mark.parametrize("value", ["true", "TRUE", "True"])
def test_delegation_tokens_are_refused(value):
    with pytest.raises(SaslAuthenticationError, match="delegation token") as failure:
        _server("SCRAM-SHA-256").evaluate(f"n,,n=alice,r=abc,tokenauth={value}".encode())
    assert failure.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


# Bad messages: each raises SaslAuthenticationError with the unexplained message


BAD_CLIENT_FIRST = [
    b"",
    b"\xff\xfe garbage",
    b"n,,",
    b"n,,n=alice",  # truncated: no nonce
    b"n,,n=alice,r=",
    b"n,,r=abc,n=alice",
    b"y,,n=alice,r=abc",  # channel binding flags Kafka does not take
    b"p=tls-unique,,n=alice,r=abc",
    b"n,,m=ext,n=alice,r=abc",  # a mandatory extension nobody knows
    b"n,,n=al=ice,r=abc",  # '=' not escaped
    b"n,,n=,r=abc",
    b"n,,n=alice,r=a b",
    b"n,,n=alice,r=abc,",
    b"n,,n=alice,r=abc,1=x",
    "n,,n=ünï,r=abc".encode(),
    b"n,,n=alice,r=abc\n",
    b"n,,n=alice\x00,r=abc",
    b"\x00" * 100,
]


@pytest.mark.parametrize("token", BAD_CLIENT_FIRST)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_bad_client_first_messages_fail_cleanly(mechanism, token):
    server = _server(mechanism)
    with pytest.raises(SaslAuthenticationError) as failure:
        server.evaluate(token)
    assert failure.value.message == _invalid(mechanism)
    assert not server.complete


def _after_first(mechanism):
    client = scramp.ScramClient([mechanism], "alice", PASSWORD)
    server = _server(mechanism)
    client.set_server_first(server.evaluate(client.get_client_first().encode()).decode())
    return server, client, client.get_client_final()


def _final_variants(final: str) -> list[str]:
    channel, nonce, proof = final.split(",")
    return [
        "",
        "garbage",
        final[: len(final) // 2],  # truncated
        final[:-1],  # truncated proof: no longer base64
        f"{channel},{nonce}",  # no proof
        f"{channel},{nonce}x,{proof}",  # wrong nonce
        f"{channel},{nonce[:-1]},{proof}",  # the server's nonce shortened
        f"{channel},r=abc,{proof}",  # the client's nonce only
        f"c=eSws,{nonce},{proof}",  # channel binding 'y,,' instead of 'n,,'
        f"c=,{nonce},{proof}",
        f"{channel},{nonce},p=AAAA",  # a proof of the wrong length
        f"{channel},{nonce},p=" + "A" * 88,
        f"{nonce},{channel},{proof}",
        f"{final},x=1",
        final + "\n",
    ]


@pytest.mark.parametrize("index", range(len(_final_variants("c=a,r=b,p=c"))))
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_bad_client_final_messages_fail_cleanly(mechanism, index):
    server, _, final = _after_first(mechanism)
    token = _final_variants(final)[index].encode()
    with pytest.raises(SaslAuthenticationError) as failure:
        server.evaluate(token)
    assert failure.value.message == _invalid(mechanism)
    assert not server.complete


def test_non_utf8_client_final_fails_cleanly():
    server, _, final = _after_first("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(final.encode() + b"\xff")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_token_after_the_exchange_is_an_illegal_state(mechanism):
    server, _ = _exchange(mechanism, "alice", PASSWORD)
    with pytest.raises(SaslAuthenticationError) as failure:
        server.evaluate(b"n,,n=alice,r=abc")
    assert failure.value.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert server.principal == "User:alice"


def test_a_token_after_a_failure_is_an_illegal_state():
    server = _server("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(b"garbage")
    with pytest.raises(SaslAuthenticationError) as failure:
        server.evaluate(b"n,,n=alice,r=abc")
    assert failure.value.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_the_principal_is_not_there_before_completion():
    server = _server("SCRAM-SHA-256")
    server.evaluate(b"n,,n=alice,r=abc")
    assert not server.complete
    with pytest.raises(RuntimeError):
        server.principal  # noqa: B018
