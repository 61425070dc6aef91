"""SaslHandshake (key 17): the client names the SASL mechanism it will use.

Version 0 is followed by the mechanism's tokens as raw size-prefixed frames;
from version 1 the tokens travel in SaslAuthenticate requests.
"""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class SaslHandshakeRequest:
    mechanism: str = wire.string("0+")


@wire.message
class SaslHandshakeResponse:
    error_code: int = wire.int16("0+")
    mechanisms: list[str] = wire.array(wire.STRING, "0+")
