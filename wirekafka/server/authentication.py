"""The SASL state of one connection on a SASL listener (what Kafka's SaslServerAuthenticator does).

Before a client is authenticated it may send ApiVersions, then SaslHandshake
naming a mechanism, then the mechanism's tokens: in SaslAuthenticate
requests (handshake v1), or as raw size-prefixed frames with raw answers
(handshake v0, the framing of older clients). Any other request closes the
connection. A failed exchange is answered SASL_AUTHENTICATION_FAILED with
the mechanism's message, and the connection closes.

With ``connections.max.reauth.ms`` (KIP-368) the SaslAuthenticate answer
gives the session's lifetime; the client authenticates again on the same
connection before it ends, as the same principal, and a connection whose
session has ended is closed at its next request.

The connection does the reading and writing; this module keeps the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from wirekafka.listener_security import ListenerSecurity
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from wirekafka.protocol.messages.sasl_handshake import (
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.sasl import (
    SaslAuthenticationError,
    SaslServer,
    ScramLookup,
    sasl_server,
)

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
FIRST_AUTHENTICATE_HANDSHAKE_VERSION = 1  # from here tokens travel in SaslAuthenticate
REAUTHENTICATED_PRINCIPAL_CHANGED = (
    "Cannot change principals during re-authentication from {old}: {new}"
)


class AuthenticationFailed(Exception):
    """The exchange failed: ``response`` (None for raw tokens) is the last answer, sent
    after ``connection.failed.authentication.delay.ms``; then the connection closes.
    ``reason`` is for the broker's log and holds no secret."""

    def __init__(self, response: Any | None, reason: str) -> None:
        super().__init__(reason)
        self.response = response
        self.reason = reason


class SaslAuthenticator:
    """One connection's SASL exchange, first or again (re-authentication)."""

    def __init__(
        self,
        listener: ListenerSecurity,
        plain_users: Mapping[str, str],
        scram_lookup: ScramLookup,
        now_s: Callable[[], float],
    ) -> None:
        assert listener.sasl is not None, "a SASL listener"
        self.mechanisms = listener.sasl.enabled_mechanisms
        self.reauth_ms = listener.reauth_ms
        self._plain_users = plain_users
        self._scram_lookup = scram_lookup
        self._now_s = now_s
        self._server: SaslServer | None = None
        self.raw_tokens = False  # handshake v0: the next frames are bare tokens
        self.principal: str | None = None  # once authenticated
        self.expires_at_s: float | None = None  # trio time when the session ends (reauth)

    @property
    def reauthenticating(self) -> bool:
        return self.principal is not None

    def expired(self) -> bool:
        return self.expires_at_s is not None and self._now_s() >= self.expires_at_s

    def handshake(self, request: Request) -> SaslHandshakeResponse:
        """Answer SaslHandshake; AuthenticationFailed for an unknown mechanism or a second
        handshake in one exchange."""
        body: SaslHandshakeRequest = request.body
        enabled = list(self.mechanisms)
        if self._server is not None or (
            self.reauthenticating and request.version < FIRST_AUTHENTICATE_HANDSHAKE_VERSION
        ):
            raise AuthenticationFailed(
                SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled),
                "a second SaslHandshake in one exchange",
            )
        if body.mechanism not in self.mechanisms:
            raise AuthenticationFailed(
                SaslHandshakeResponse(
                    error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
                ),
                f"unsupported SASL mechanism {body.mechanism!r} (enabled: {', '.join(enabled)})",
            )
        self._server = sasl_server(
            body.mechanism,
            self._plain_users,
            self._scram_lookup,
            reauthentication=self.reauthenticating,
        )
        self.raw_tokens = request.version < FIRST_AUTHENTICATE_HANDSHAKE_VERSION
        return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)

    def authenticate(self, request: Request) -> SaslAuthenticateResponse:
        """Answer SaslAuthenticate; AuthenticationFailed if the token is refused."""
        body: SaslAuthenticateRequest = request.body
        if self._server is None or self.raw_tokens:
            raise AuthenticationFailed(
                SaslAuthenticateResponse(
                    error_code=ErrorCode.ILLEGAL_SASL_STATE,
                    error_message="SaslAuthenticate before a SaslHandshake v1 or later",
                    auth_bytes=b"",
                ),
                "SaslAuthenticate out of order",
            )
        try:
            challenge = self._evaluate(body.auth_bytes)
        except SaslAuthenticationError as exc:
            raise AuthenticationFailed(
                SaslAuthenticateResponse(
                    error_code=exc.error_code, error_message=exc.message, auth_bytes=b""
                ),
                exc.reason,
            ) from None
        return SaslAuthenticateResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            auth_bytes=challenge,
            session_lifetime_ms=self.reauth_ms if self.principal is not None else 0,
        )

    def raw_token(self, token: bytes) -> bytes:
        """The answer to a bare token (after handshake v0); AuthenticationFailed if refused."""
        try:
            return self._evaluate(token)
        except SaslAuthenticationError as exc:
            raise AuthenticationFailed(None, exc.reason) from None

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        challenge = server.evaluate(token)
        if server.complete:
            if self.principal is not None and server.principal != self.principal:
                raise SaslAuthenticationError(
                    REAUTHENTICATED_PRINCIPAL_CHANGED.format(
                        old=self.principal, new=server.principal
                    )
                )
            self.principal = server.principal
            self._server = None
            self.raw_tokens = False
            if self.reauth_ms:
                self.expires_at_s = self._now_s() + self.reauth_ms / 1000
        return challenge

    @property
    def exchanging(self) -> bool:
        """A handshake was answered and its exchange has not finished."""
        return self._server is not None
