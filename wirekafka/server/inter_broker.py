"""Requests this broker sends to another (or to itself): one at a time, on one
connection, answered in order. The replica fetcher's Fetch and
OffsetForLeaderEpoch to a leader, the ControlledShutdown to the controller.

The connection is opened, and secured as the inter-broker listener is, by
:mod:`wirekafka.server.inter_broker_connector`; on a SASL listener whose
sessions expire (``connections.max.reauth.ms``), a request after the time to
authenticate again does so first (KIP-368).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable

import trio

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.rpc import decode_response, encode_request

RECEIVE_BYTES = 1 << 20

# Authenticates a connection (within the timeout, in seconds): the trio time to do so
# again, or None if its session does not expire.
Authenticate = Callable[["BrokerConnection", float], Awaitable[float | None]]


class BrokerConnection:
    """Requests and responses, one at a time, on one connection to a broker."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        broker_id: int,
        client_id: str,
        *,
        authenticate: Authenticate | None = None,
    ) -> None:
        self.stream = stream
        self.broker_id = broker_id
        self.client_id = client_id
        self._correlation = itertools.count(1)
        self._frames = FrameDecoder()
        self._authenticate = authenticate
        self._reauthenticate_at: float | None = None

    async def __aenter__(self) -> BrokerConnection:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def authenticate(self, timeout_s: float) -> None:
        """Authenticate (again), if the listener asks for it."""
        if self._authenticate is not None:
            self._reauthenticate_at = await self._authenticate(self, timeout_s)

    async def call(self, api_key: int, version: int, body: object, timeout_s: float) -> object:
        """Send one request and read its response (TooSlowError after ``timeout_s``;
        ProtocolError for a response that is not the answer to it), authenticating
        again first when the session is about to end."""
        if self._reauthenticate_at is not None and trio.current_time() >= self._reauthenticate_at:
            await self.authenticate(timeout_s)
        return await self.send_request(api_key, version, body, timeout_s)

    async def send_request(
        self, api_key: int, version: int, body: object, timeout_s: float
    ) -> object:
        """:meth:`call` without the re-authentication: for the SASL exchange itself."""
        correlation_id = next(self._correlation)
        header = RequestHeader(api_key, version, correlation_id, self.client_id)
        request = encode_request(header, body)
        try:
            with trio.fail_after(timeout_s):
                await self.stream.send_all(encode_frame(request))
                frame = await self._read_frame()
        except trio.BrokenResourceError as exc:  # TLS's, whose own message is empty
            reason = exc.__cause__ or "the connection broke"
            raise ConnectionError(f"broker {self.broker_id}: {reason}") from None
        header_read, response = decode_response(api_key, version, frame)
        if header_read.correlation_id != correlation_id:
            raise ProtocolError(
                f"response {header_read.correlation_id} to request {correlation_id}"
            )
        return response

    async def _read_frame(self) -> bytearray:
        frames = self._frames
        while (frame := frames.next_frame()) is None:
            chunk = await self.stream.receive_some(RECEIVE_BYTES)
            if not chunk:
                raise ConnectionError(f"broker {self.broker_id} closed the connection")
            frames.receive_data(chunk)
        return frame
