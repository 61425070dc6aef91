"""The mechanism factory and the messages every mechanism shares."""

from __future__ import annotations

import pytest

from wirekafka.security.sasl import (
    SUPPORTED_MECHANISMS,
    SaslAuthenticationError,
    invalid_credentials_message,
    sasl_server,
)


def _no_scram(mechanism, user):
    return None


@pytest.mark.parametrize("mechanism", SUPPORTED_MECHANISMS)
def test_factory_makes_a_fresh_server_per_exchange(mechanism):
    first = sasl_server(mechanism, {}, _no_scram)
    second = sasl_server(mechanism, {}, _no_scram)
    assert first is not second
    assert first.mechanism == mechanism
    assert not first.complete


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "plain", "SCRAM-SHA-1", ""])
def test_other_mechanisms_are_refused_with_the_supported_list(mechanism):
    with pytest.raises(ValueError, match="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"):
        sasl_server(mechanism, {}, _no_scram)


def test_kafkas_unexplained_failure_message():
    assert invalid_credentials_message("SCRAM-SHA-512") == (
        "Authentication failed during authentication due to invalid credentials"
        " with SASL mechanism SCRAM-SHA-512"
    )
    assert invalid_credentials_message("PLAIN", reauthentication=True).startswith(
        "Authentication failed during re-authentication"
    )


def test_the_error_keeps_the_message_for_the_client_apart_from_the_reason():
    error = SaslAuthenticationError("for the client", reason="for the log")
    assert str(error) == error.message == "for the client"
    assert error.reason == "for the log"
    assert SaslAuthenticationError("only").reason == "only"
