"""One client connection: frames in, requests handled one at a time, responses out in order.

Pipelined requests wait in the socket's receive buffer and the frame decoder
until the one before them is answered. A frame that is too big, a malformed
request, an unknown API or version (except ApiVersions, answered with
UNSUPPORTED_VERSION) close this connection alone, with a log line naming the
peer and the API.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Protocol

import trio

from wirekafka.handlers.api_versions import api_versions_response
from wirekafka.handlers.context import BrokerContext, CloseConnection, client_host
from wirekafka.handlers.registry import HANDLERS
from wirekafka.protocol.api_table import ApiKey, api_for
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.framing import FrameDecoder
from wirekafka.protocol.headers import RequestHeader, peek_request_header
from wirekafka.protocol.rpc import decode_request, encode_response_parts
from wirekafka.server.sending import send_parts

log = logging.getLogger("wirekafka.server")

RECEIVE_BYTES = 256 * 1024


class ConnectionHost(Protocol):
    """What a connection needs from the server that runs it."""

    context: BrokerContext
    stopping: bool

    def add_idle(self, scope: trio.CancelScope) -> None: ...

    def remove_idle(self, scope: trio.CancelScope) -> None: ...


def _describe(header: RequestHeader | None) -> str:
    if header is None:
        return "before a whole request header"
    api = api_for(header.api_key)
    name = api.name if api is not None else f"api key {header.api_key}"
    return f"{name} v{header.api_version} (correlation id {header.correlation_id})"


async def _respond(
    host: ConnectionHost, frame: bytearray, header: RequestHeader
) -> list[Any] | None:
    api = api_for(header.api_key)
    if api is None:
        raise ProtocolError("unknown api key")
    if not api.supports(header.api_version):
        if header.api_key == ApiKey.API_VERSIONS:  # answered as v0, so any client can read it
            body = api_versions_response(ErrorCode.UNSUPPORTED_VERSION)
            return encode_response_parts(ApiKey.API_VERSIONS, 0, header.correlation_id, body)
        raise ProtocolError(f"version not served (v{api.min_version}-v{api.max_version} are)")
    request = decode_request(frame)
    response = await HANDLERS[header.api_key](host.context, request)
    if response is None:
        return None
    return encode_response_parts(
        header.api_key, header.api_version, header.correlation_id, response
    )


async def serve_connection(host: ConnectionHost, stream: trio.SocketStream) -> None:
    config = host.context.config
    try:
        address = stream.socket.getpeername()
        peer = f"{address[0]}:{address[1]}"
    except OSError:
        peer = "an unknown peer"
    else:
        client_host.set(f"/{address[0]}")
    idle_seconds = (
        math.inf if config.connections_max_idle_ms < 0 else config.connections_max_idle_ms / 1000
    )
    decoder = FrameDecoder(config.socket_request_max_bytes)
    header: RequestHeader | None = None
    try:
        while not host.stopping:
            frame = decoder.next_frame()
            if frame is None:
                with trio.CancelScope() as idle:
                    host.add_idle(idle)
                    try:
                        with trio.move_on_after(idle_seconds) as timer:
                            data = await stream.receive_some(RECEIVE_BYTES)
                    finally:
                        host.remove_idle(idle)
                if idle.cancelled_caught:
                    return  # the broker is stopping
                if timer.cancelled_caught:
                    log.info("closing connection from %s: idle for %.0f s", peer, idle_seconds)
                    return
                if not data:
                    return
                decoder.receive_data(data)
                continue
            header = None  # a header that cannot be read is not the last request's
            header = peek_request_header(frame)
            parts = await _respond(host, frame, header)
            if parts is not None:
                await send_parts(stream, parts)
    except (ProtocolError, CloseConnection) as exc:
        log.warning("closing connection from %s: %s: %s", peer, _describe(header), exc)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:
        log.exception("closing connection from %s after an error in %s", peer, _describe(header))
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()
