"""What every server-side SASL mechanism shares: its interface, its error, Kafka's messages."""

from __future__ import annotations

from typing import Protocol

from wirekafka.protocol.errors import ErrorCode

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"


class SaslAuthenticationError(Exception):
    """A SASL exchange failed; ``message`` is safe to send to the client.

    ``message`` names no secret and does not tell an unknown user from a wrong
    password. ``reason`` is the server's own detail for its log (still no
    password, key or token). ``error_code`` is SASL_AUTHENTICATION_FAILED, or
    ILLEGAL_SASL_STATE for a token sent after the exchange ended.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        error_code: ErrorCode = ErrorCode.SASL_AUTHENTICATION_FAILED,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or message
        self.error_code = error_code


class SaslServer(Protocol):
    """The server side of one SASL exchange on one connection.

    ``evaluate`` takes the client's next token and returns the token to send
    back (empty when the mechanism has nothing to say); it raises
    :class:`SaslAuthenticationError` and nothing else for anything the client
    sends. Once ``complete`` is true, ``principal`` is who authenticated
    (``User:alice``); a server is used for one exchange only.
    """

    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def principal(self) -> str: ...

    def evaluate(self, token: bytes) -> bytes: ...


def invalid_credentials_message(mechanism: str, reauthentication: bool = False) -> str:
    """Kafka's answer to a failure it does not explain (SaslServerAuthenticator)."""
    phase = "re-authentication" if reauthentication else "authentication"
    return (
        f"Authentication failed during {phase} due to invalid credentials"
        f" with SASL mechanism {mechanism}"
    )


# Kafka's own messages for the failures it does explain to the client
INVALID_USERNAME_OR_PASSWORD = "Authentication failed: Invalid username or password"
AUTHORIZATION_ID_MISMATCH = (
    "Authentication failed: Client requested an authorization id that is different from username"
)


def exchange_over_error(mechanism: str, complete: bool) -> SaslAuthenticationError:
    """The error for a token that arrives after the exchange succeeded or failed."""
    state = "complete" if complete else "failed"
    return SaslAuthenticationError(
        f"Unexpected SASL/{mechanism} token: the exchange is already {state}",
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
    )


def not_complete() -> RuntimeError:
    return RuntimeError("the SASL exchange has not completed: there is no principal yet")


class OneExchange:
    """What every mechanism's server shares: one exchange, its outcome, and no token
    after it has ended. A mechanism gives :meth:`_step` (one token in, one out), which
    sets ``_principal`` when the client has proved who it is."""

    mechanism: str

    def __init__(self) -> None:
        self._principal: str | None = None
        self._failed = False

    @property
    def complete(self) -> bool:
        return self._principal is not None

    @property
    def principal(self) -> str:
        if self._principal is None:
            raise not_complete()
        return self._principal

    def evaluate(self, token: bytes) -> bytes:
        if self._principal is not None or self._failed:
            raise exchange_over_error(self.mechanism, self.complete)
        try:
            return self._step(token)
        except SaslAuthenticationError:
            self._failed = True
            raise

    def _step(self, token: bytes) -> bytes:
        raise NotImplementedError
