"""SaslHandshake and SaslAuthenticate that reach the handlers: sent where no SASL exchange
is going on (a listener without SASL, or after authentication), so, as Kafka answers
them there, ILLEGAL_SASL_STATE. A SASL listener's connection handles its own exchange
(wirekafka.server.authentication)."""

from __future__ import annotations

from wirekafka.broker.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from wirekafka.protocol.messages.sasl_handshake import SaslHandshakeResponse
from wirekafka.protocol.rpc import Request


async def handle_sasl_handshake(ctx: BrokerContext, request: Request) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


async def handle_sasl_authenticate(
    ctx: BrokerContext, request: Request
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received with no SASL exchange under way",
        auth_bytes=b"",
    )
