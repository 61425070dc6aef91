"""Requests this broker sends to another (or to itself): one at a time, on one
connection, answered in order. The replica fetcher's Fetch and
OffsetForLeaderEpoch to a leader, the ControlledShutdown to the controller."""

from __future__ import annotations

import itertools

import trio

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.rpc import decode_response, encode_request

RECEIVE_BYTES = 1 << 20


class BrokerConnection:
    """Requests and responses, one at a time, on one connection to a broker."""

    def __init__(self, stream: trio.SocketStream, broker_id: int, client_id: str) -> None:
        self.stream = stream
        self.broker_id = broker_id
        self.client_id = client_id
        self._correlation = itertools.count(1)
        self._frames = FrameDecoder()

    async def call(self, api_key: int, version: int, body: object, timeout_s: float) -> object:
        """Send one request and read its response (TooSlowError after ``timeout_s``;
        ProtocolError for a response that is not the answer to it)."""
        correlation_id = next(self._correlation)
        header = RequestHeader(api_key, version, correlation_id, self.client_id)
        request = encode_request(header, body)
        with trio.fail_after(timeout_s):
            await self.stream.send_all(encode_frame(request))
            frame = await self._read_frame()
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
