"""SaslAuthenticate (key 36): one SASL token each way (KIP-152); v1 adds the session lifetime (KIP-368)."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class SaslAuthenticateRequest:
    auth_bytes: bytes = wire.bytes_("0+", secret=True)


@wire.message
class SaslAuthenticateResponse:
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)
    auth_bytes: bytes = wire.bytes_("0+", secret=True)
    session_lifetime_ms: int = wire.int64("1+")
