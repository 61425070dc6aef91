"""SCRAM credentials: the keys, Kafka's text form, AlterUserScramCredentials' checks."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
import scramp

from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.scram_credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    credential_from_salted_password,
    deletion_error,
    format_credential,
    new_credential,
    parse_credential,
    salted_password,
    scram_mechanism,
    scram_mechanism_of_type,
    upsertion_error,
)


def test_rfc_7677_example_verifies_with_the_keys_we_derive():
    # RFC 7677 section 3: user "user", password "pencil"
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = new_credential("SCRAM-SHA-256", "pencil", 4096, salt=salt)
    auth_message = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    signature = hmac.digest(credential.stored_key, auth_message, "sha256")
    client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
    assert hashlib.sha256(client_key).digest() == credential.stored_key
    assert base64.b64encode(hmac.digest(credential.server_key, auth_message, "sha256")) == (
        b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    )


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_keys_agree_with_scramp(mechanism):
    salt = b"salt-1234"
    ours = new_credential(mechanism, "alice-secret", 5000, salt=salt)
    _, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(
        "alice-secret", 5000, salt
    )
    assert (ours.salt, ours.stored_key, ours.server_key, ours.iterations) == (
        salt,
        stored_key,
        server_key,
        5000,
    )


def test_a_salted_password_gives_the_credential_the_password_gives():
    # AlterUserScramCredentials carries the salt and the salted password
    salted = salted_password("SCRAM-SHA-512", "pw", b"s" * 10, 4096)
    assert len(salted) == 64
    assert credential_from_salted_password("SCRAM-SHA-512", b"s" * 10, salted, 4096) == (
        new_credential("SCRAM-SHA-512", "pw", 4096, salt=b"s" * 10)
    )


def test_new_salts_are_random_and_shaped_like_kafkas():
    first = new_credential("SCRAM-SHA-256", "pw")
    second = new_credential("SCRAM-SHA-256", "pw")
    assert first.salt != second.salt
    assert first.stored_key != second.stored_key
    assert first.iterations == 4096
    # base-36 digits of a 130-bit number, as Kafka's ScramFormatter writes salts
    assert first.salt.isalnum() and first.salt == first.salt.lower()
    assert 20 <= len(first.salt) <= 26


def test_repr_shows_no_key():
    credential = new_credential("SCRAM-SHA-256", "pw", salt=b"visible-salt")
    text = repr(credential)
    assert "4096" in text
    for secret in (credential.salt, credential.stored_key, credential.server_key):
        assert repr(secret) not in text


def test_mechanisms_and_their_type_bytes():
    assert scram_mechanism("SCRAM-SHA-256") is SCRAM_SHA_256
    assert (SCRAM_SHA_256.type, SCRAM_SHA_512.type) == (1, 2)
    assert (SCRAM_SHA_256.digest_size, SCRAM_SHA_512.digest_size) == (32, 64)
    assert scram_mechanism_of_type(2) is SCRAM_SHA_512
    assert scram_mechanism_of_type(0) is None
    assert scram_mechanism_of_type(3) is None
    with pytest.raises(ValueError, match="'SCRAM-SHA-1' is not a SCRAM mechanism"):
        scram_mechanism("SCRAM-SHA-1")


# Kafka's text form, /config/users/<name>


def test_text_form_is_kafkas_and_round_trips():
    credential = ScramCredential(
        salt=b"salt", stored_key=b"\x00\x01\x02", server_key=b"\xff" * 4, iterations=8192
    )
    text = format_credential(credential)
    assert text == "salt=c2FsdA==,stored_key=AAEC,server_key=/////w==,iterations=8192"
    assert parse_credential(text) == credential


def test_text_form_in_any_key_order():
    credential = parse_credential("iterations=4096,server_key=AAEC,stored_key=AAEC,salt=c2FsdA==")
    assert credential.salt == b"salt"
    assert credential.iterations == 4096


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_real_credentials_round_trip(mechanism):
    credential = new_credential(mechanism, "pw", 16384)
    assert parse_credential(format_credential(credential)) == credential


GOOD = "salt=c2FsdA==,stored_key=AAEC,server_key=AAEC,iterations=4096"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not a list of key=value"),
        ("garbage", "not a list of key=value"),
        ("=x," + GOOD, "not a list of key=value"),
        (GOOD + ",extra=1", "unknown key 'extra'"),
        (GOOD + ",salt=c2FsdA==", "'salt' twice"),
        ("salt=c2FsdA==,stored_key=AAEC,iterations=4096", "lacks server_key"),
        (GOOD.replace("4096", "-1"), "iterations is not a positive number"),
        (GOOD.replace("4096", "0"), "iterations is not a positive number"),
        (GOOD.replace("4096", "4k"), "iterations is not a positive number"),
        (GOOD.replace("4096", "٤٠٩٦"), "iterations is not a positive number"),
        (GOOD.replace("c2FsdA==", "c2FsdA"), "salt is not base64"),
        (GOOD.replace("c2FsdA==", "c2F!dA=="), "salt is not base64"),
        (GOOD.replace("c2FsdA==", "ç2FsdA=="), "salt is not base64"),
        (GOOD.replace("stored_key=AAEC", "stored_key="), "stored_key is empty"),
    ],
)
def test_text_form_problems_are_named_without_the_keys(text, problem):
    with pytest.raises(ValueError, match=problem) as failure:
        parse_credential(text)
    assert "AAEC" not in str(failure.value)


# AlterUserScramCredentials


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("alice", 1, 4096, b"s", b"p"), None),
        (("alice", 2, MAX_ITERATIONS, b"s", b"p"), None),
        (
            ("", 1, 4096, b"s", b"p"),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ),
        (
            ("alice", 0, 4096, b"s", b"p"),
            (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ),
        (
            ("alice", 3, 4096, b"s", b"p"),
            (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ),
        (
            ("alice", 1, MIN_ITERATIONS - 1, b"s", b"p"),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ),
        (
            ("alice", 1, MAX_ITERATIONS + 1, b"s", b"p"),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ),
        (
            ("alice", 1, 4096, b"", b"p"),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt must not be empty"),
        ),
        (
            ("alice", 1, 4096, b"s", b""),
            (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salted password must not be empty"),
        ),
    ],
)
def test_upsertion_checks_with_kafkas_codes(args, expected):
    assert upsertion_error(*args) == expected


def test_deletion_checks_with_kafkas_codes():
    assert deletion_error("alice", 1) is None
    assert deletion_error("", 1) == (
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "Username must not be empty",
    )
    assert deletion_error("alice", 9) == (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "Unknown SCRAM mechanism",
    )
