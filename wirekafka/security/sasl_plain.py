"""SASL/PLAIN (RFC 4616) on the server: ``authzid NUL authcid NUL passwd`` against known users.

Users and passwords come from the listener's JAAS config (``jaas.plain_users``).
As in Kafka, the authorization id must be empty or the user name itself.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from wirekafka.security.principal import user
from wirekafka.security.sasl_mechanism import (
    AUTHORIZATION_ID_MISMATCH,
    INVALID_USERNAME_OR_PASSWORD,
    PLAIN,
    OneExchange,
    SaslAuthenticationError,
    invalid_credentials_message,
)

# Compared against when the user is unknown, so both cases cost the same
_NO_PASSWORD = b"\x00" * 32


class PlainSaslServer(OneExchange):
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str], *, reauthentication: bool = False) -> None:
        super().__init__()
        self._users = users
        self._reauthentication = reauthentication

    def _step(self, token: bytes) -> bytes:
        self._principal = user(self._authenticate(token))
        return b""

    def _authenticate(self, token: bytes) -> str:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise self._unexplained(f"the message has {len(parts) - 1} NUL separators, not 2")
        authzid_bytes, username_bytes, password = parts
        try:
            authzid = authzid_bytes.decode("utf-8")
            username = username_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise self._unexplained("the user name is not UTF-8") from None
        if not username:
            raise self._unexplained("no user name")
        if not password:
            raise self._unexplained(f"no password for user {username!r}")
        expected = self._users.get(username)
        matches = hmac.compare_digest(
            password, _NO_PASSWORD if expected is None else expected.encode("utf-8")
        )
        if expected is None or not matches:
            raise SaslAuthenticationError(
                INVALID_USERNAME_OR_PASSWORD,
                reason=f"unknown user or wrong password for user {username!r}",
            )
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                AUTHORIZATION_ID_MISMATCH,
                reason=f"user {username!r} asked to act as {authzid!r}",
            )
        return username

    def _unexplained(self, reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(
            invalid_credentials_message(self.mechanism, self._reauthentication),
            reason=f"malformed SASL/PLAIN message: {reason}",
        )
