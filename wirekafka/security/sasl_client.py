"""The client side of SASL, as a broker speaks it to another broker: credentials, tokens, answers.

The exchange is Kafka's (handshake v1): SaslHandshake names the mechanism, then
each token goes out in a SaslAuthenticate request and the broker's token comes
back in its response. A :class:`SaslClient` makes the tokens:
``initial_token()`` first, then ``evaluate(answer)`` with each answer's bytes,
which returns the next token or None once the exchange is over (the server
proved to know the password too, for SCRAM).

Credentials come from a JAAS entry's ``username`` and ``password`` options, as
Kafka's PlainLoginModule and ScramLoginModule give them to a client.
Errors name the user and the mechanism, never a password.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import scramp

from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from wirekafka.protocol.messages.sasl_handshake import SaslHandshakeResponse
from wirekafka.security.jaas import JaasEntry
from wirekafka.security.sasl_mechanism import PLAIN, SCRAM_SHA_256, SCRAM_SHA_512

CLIENT_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)


class SaslClientError(Exception):
    """The exchange failed; the message says why and holds no secret."""


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """Who a client authenticates as, with which mechanism."""

    mechanism: str
    username: str
    password: str = field(repr=False)


def client_credentials(mechanism: str, entry: JaasEntry) -> SaslCredentials:
    """The ``username`` and ``password`` options of a login module's entry; ValueError
    naming what is missing (never a value)."""
    if mechanism not in CLIENT_MECHANISMS:
        raise ValueError(
            f"SASL mechanism {mechanism!r} has no client here ({', '.join(CLIENT_MECHANISMS)})"
        )
    missing = [name for name in ("username", "password") if not entry.options.get(name)]
    if missing:
        raise ValueError(
            f"the {mechanism} JAAS entry has no {' and no '.join(missing)} option"
            " (a broker authenticates to the others with them)"
        )
    return SaslCredentials(mechanism, entry.options["username"], entry.options["password"])


class SaslClient(Protocol):
    """The client side of one exchange (see the module's documentation)."""

    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    def initial_token(self) -> bytes: ...

    def evaluate(self, token: bytes) -> bytes | None: ...


class PlainSaslClient:
    """RFC 4616: one message, ``NUL username NUL password``; the answer is empty."""

    mechanism = PLAIN

    def __init__(self, credentials: SaslCredentials) -> None:
        self._credentials = credentials
        self._sent = False
        self.complete = False

    def initial_token(self) -> bytes:
        if self._sent:
            raise SaslClientError("SASL/PLAIN: the initial token was already sent")
        self._sent = True
        credentials = self._credentials
        return b"\x00%s\x00%s" % (
            credentials.username.encode("utf-8"),
            credentials.password.encode("utf-8"),
        )

    def evaluate(self, token: bytes) -> bytes | None:
        if not self._sent or self.complete:
            raise SaslClientError("SASL/PLAIN: an answer the exchange does not expect")
        self.complete = True
        return None


class ScramSaslClient:
    """RFC 5802/7677 on scramp's client: client-first, client-final, and the server's
    signature checked in its final message."""

    def __init__(self, credentials: SaslCredentials) -> None:
        self.mechanism = credentials.mechanism
        # RFC 5802's saslname: "=" and "," written as =3D and =2C, as Kafka's client does
        saslname = credentials.username.replace("=", "=3D").replace(",", "=2C")
        self._username = credentials.username
        self._client = scramp.ScramClient([self.mechanism], saslname, credentials.password)
        self._step = 0
        self.complete = False

    def initial_token(self) -> bytes:
        if self._step != 0:
            raise SaslClientError(f"SASL/{self.mechanism}: the initial token was already sent")
        self._step = 1
        try:
            return str(self._client.get_client_first()).encode("utf-8")
        except scramp.ScramException as exc:  # the user name fails SASLprep
            raise SaslClientError(
                f"SASL/{self.mechanism}: user {self._username!r} cannot be sent: {exc}"
            ) from None

    def evaluate(self, token: bytes) -> bytes | None:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._error("the server's message is not UTF-8") from None
        try:
            if self._step == 1:
                self._client.set_server_first(text)
                final = str(self._client.get_client_final())
                self._step = 2
                return final.encode("utf-8")
            if self._step == 2:
                self._client.set_server_final(text)
                self._step = 3
                self.complete = True
                return None
        except (scramp.ScramException, ValueError, KeyError) as exc:
            raise self._error(f"{exc}") from None
        raise self._error("an answer the exchange does not expect")

    def _error(self, reason: str) -> SaslClientError:
        self._step = 4  # failed: nothing more is evaluated
        return SaslClientError(f"SASL/{self.mechanism} as user {self._username!r}: {reason}")


def sasl_client(credentials: SaslCredentials) -> SaslClient:
    """A new exchange for the credentials' mechanism."""
    if credentials.mechanism == PLAIN:
        return PlainSaslClient(credentials)
    return ScramSaslClient(credentials)


def check_handshake(response: SaslHandshakeResponse, mechanism: str) -> None:
    """SaslClientError unless the broker accepted ``mechanism``."""
    code = response.error_code
    if code == ErrorCode.NONE:
        return
    if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(response.mechanisms) or "none"
        raise SaslClientError(
            f"the broker does not enable SASL mechanism {mechanism} on this listener"
            f" (it enables: {enabled})"
        )
    raise SaslClientError(f"SaslHandshake for {mechanism} answered {_error_name(code)}")


def check_authenticate(response: SaslAuthenticateResponse, credentials: SaslCredentials) -> None:
    """SaslClientError with the broker's message if it refused the token."""
    if response.error_code == ErrorCode.NONE:
        return
    message = response.error_message or "no message"
    raise SaslClientError(
        f"SASL/{credentials.mechanism} authentication as user {credentials.username!r} "
        f"failed: {_error_name(response.error_code)}: {message}"
    )


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
