"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 on the server (RFC 5802, 7677), on scramp's server side.

Two tokens each way: client-first -> server-first, client-final -> server-final.
This module reads the client's messages by the grammar Kafka accepts (a GS2
header ``n`` without channel binding, an optional authorization id equal to the
user, Kafka's SCRAM extensions) and leaves the key arithmetic to scramp.

* ``tokenauth=true`` (a delegation token, KIP-48) is refused: there are none here.
* An unknown user gets a server-first message like a known one (a salt derived
  from the name, the default iterations) and fails at the proof, as a wrong
  password does, with the same message.
* Every other failure answers Kafka's message that explains nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable

import scramp

from wirekafka.security.principal import user
from wirekafka.security.sasl_mechanism import (
    AUTHORIZATION_ID_MISMATCH,
    OneExchange,
    SaslAuthenticationError,
    invalid_credentials_message,
)
from wirekafka.security.scram_credentials import (
    DEFAULT_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    salt_from_bits,
    scram_mechanism,
)

# (mechanism, user name) -> that user's credential for the mechanism, or None
ScramLookup = Callable[[str, str], ScramCredential | None]

TOKEN_AUTH_REFUSED = (
    "Authentication failed: delegation token authentication (tokenauth) is not supported"
)

# RFC 5802's grammar, as far as Kafka reads it (ScramMessages)
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?"
_EXTENSION = r"[A-Za-z]+=[\x01-\x2b\x2d-\x7f]+"
_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)"
    rf"(?P<bare>n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>(?:,{_EXTENSION})*))"
)
_CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}),p=(?P<proof>{_BASE64})"
)

# Salts of users that do not exist are derived from this, so asking twice gives the same salt
_UNKNOWN_USER_KEY = os.urandom(32)


def _username(saslname: str) -> str | None:
    """A saslname with ``=2C`` and ``=3D`` undone; None if another ``=`` is in it."""
    if "=" in saslname.replace("=2C", "").replace("=3D", ""):
        return None
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramSaslServer(OneExchange):
    def __init__(
        self, mechanism: str, scram_lookup: ScramLookup, *, reauthentication: bool = False
    ) -> None:
        super().__init__()
        self._mechanism = scram_mechanism(mechanism)
        self._scram = scramp.ScramMechanism(mechanism)
        self.mechanism = mechanism
        self._lookup = scram_lookup
        self._reauthentication = reauthentication
        self._server: scramp.ScramServer | None = None
        self._gs2_header = ""
        self._nonce = ""
        self._username: str | None = None
        self._known_user = False

    def _step(self, token: bytes) -> bytes:
        if self._server is None:
            return self._client_first(token)
        return self._client_final(self._server, token)

    def _client_first(self, token: bytes) -> bytes:
        match = _CLIENT_FIRST.fullmatch(_text(token, self._unexplained))
        if match is None:
            raise self._unexplained("malformed client-first message")
        username = _username(match["saslname"])
        authzid = _username(match["authzid"] or "")
        if not username or authzid is None:
            raise self._unexplained("malformed user name in the client-first message")
        extensions = {
            key: value
            for key, _, value in (
                item.partition("=") for item in match["extensions"].split(",")[1:]
            )
        }
        if extensions.get("tokenauth", "").lower() == "true":
            raise SaslAuthenticationError(
                TOKEN_AUTH_REFUSED, reason=f"user {username!r} offered a delegation token"
            )
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                AUTHORIZATION_ID_MISMATCH, reason=f"user {username!r} asked to act as {authzid!r}"
            )
        credential = self._lookup(self.mechanism, username)
        self._known_user = credential is not None
        if credential is None:
            credential = self._stand_in_credential(username)
        elif credential.iterations < MIN_ITERATIONS:
            raise self._unexplained(
                f"user {username!r} has a credential of {credential.iterations} iterations,"
                f" below the minimum {MIN_ITERATIONS}"
            )
        server = self._scram.make_server(
            lambda _saslname: (
                credential.salt,
                credential.stored_key,
                credential.server_key,
                credential.iterations,
            ),
            s_nonce=secrets.token_urlsafe(24),
        )
        try:
            # scramp's parser knows no extensions: it gets the message without them, and
            # the bare message the client signs (with them) is put back for the proof.
            server.set_client_first(match["gs2"] + match["bare"].removesuffix(match["extensions"]))
            server.client_first_bare = match["bare"]
            server_first = server.get_server_first()
        except (scramp.ScramException, ValueError) as exc:
            raise self._unexplained(f"scramp refused the client-first message: {exc}") from None
        self._server = server
        self._gs2_header = match["gs2"]
        self._nonce = server.nonce
        self._username = username
        return str(server_first).encode("utf-8")

    def _client_final(self, server: scramp.ScramServer, token: bytes) -> bytes:
        match = _CLIENT_FINAL.fullmatch(_text(token, self._unexplained))
        if match is None:
            raise self._unexplained("malformed client-final message")
        # Kafka accepts a nonce that ends with the server's (librdkafka 2.0, Debian's kcat, sends
        # the client's part twice); the proof covers what the client sent, and the
        # server's fresh part is still there, so a replay still fails.
        nonce = match["nonce"]
        if not hmac.compare_digest(nonce[-len(self._nonce) :].encode(), self._nonce.encode()):
            raise self._unexplained("the client-final message carries another nonce")
        if match["channel"] != base64.b64encode(self._gs2_header.encode()).decode():
            raise self._unexplained("the channel binding is not the client-first's GS2 header")
        try:
            server.set_client_final(match.group(0))
            server_final = server.get_server_final()
        except (scramp.ScramException, ValueError):
            what = "wrong password" if self._known_user else "unknown user"
            raise self._unexplained(f"{what} for user {self._username!r}") from None
        assert self._username is not None
        self._principal = user(self._username)
        return str(server_final).encode("utf-8")

    def _stand_in_credential(self, username: str) -> ScramCredential:
        """What an unknown user is answered with: a steady salt; keys no proof matches."""
        seed = hmac.digest(
            _UNKNOWN_USER_KEY, f"{self.mechanism}\x00{username}".encode(), hashlib.sha256
        )
        size = self._mechanism.digest_size
        return ScramCredential(
            salt=salt_from_bits(int.from_bytes(seed[:17], "big")),
            stored_key=os.urandom(size),
            server_key=os.urandom(size),
            iterations=DEFAULT_ITERATIONS,
        )

    def _unexplained(self, reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(
            invalid_credentials_message(self.mechanism, self._reauthentication),
            reason=f"SASL/{self.mechanism}: {reason}",
        )


def _text(token: bytes, fail: Callable[[str], SaslAuthenticationError]) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise fail("the message is not UTF-8") from None
