"""Server-side SASL: the mechanisms wirekafka serves and the factory the connection calls.

A connection asks :func:`sasl_server` for the mechanism its client named in
SaslHandshake, then feeds it the client's tokens (``SaslServer.evaluate``)
until it is ``complete`` or raises :class:`SaslAuthenticationError`.
"""

from __future__ import annotations

from collections.abc import Mapping

from wirekafka.security.sasl_mechanism import (
    PLAIN,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SaslAuthenticationError,
    SaslServer,
    invalid_credentials_message,
)
from wirekafka.security.sasl_plain import PlainSaslServer
from wirekafka.security.scram import ScramLookup, ScramSaslServer

__all__ = [
    "PLAIN",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "SUPPORTED_MECHANISMS",
    "SaslAuthenticationError",
    "SaslServer",
    "ScramLookup",
    "invalid_credentials_message",
    "sasl_server",
]

SUPPORTED_MECHANISMS: tuple[str, ...] = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)


def sasl_server(
    mechanism: str,
    plain_users: Mapping[str, str],
    scram_lookup: ScramLookup,
    *,
    reauthentication: bool = False,
) -> SaslServer:
    """A new exchange for ``mechanism`` (one of SUPPORTED_MECHANISMS; ValueError otherwise).

    ``plain_users`` maps user names to passwords for PLAIN; ``scram_lookup``
    finds a user's SCRAM credential. ``reauthentication`` (KIP-368) only
    changes the wording of failures, as in Kafka.
    """
    if mechanism == PLAIN:
        return PlainSaslServer(plain_users, reauthentication=reauthentication)
    if mechanism in (SCRAM_SHA_256, SCRAM_SHA_512):
        return ScramSaslServer(mechanism, scram_lookup, reauthentication=reauthentication)
    raise ValueError(
        f"SASL mechanism {mechanism!r} is not supported (supported: {', '.join(SUPPORTED_MECHANISMS)})"
    )
