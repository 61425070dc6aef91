"""``/metrics`` and ``/health`` over HTTP/1.1, on the broker's event loop.

A connection carries one request: the request line and headers are read (at
most ``MAX_HEAD_BYTES``, within ``HEAD_TIMEOUT_S``), answered, and the
connection closed (``Connection: close``) once the client has closed its side
or a second has passed; a request body is never used. A
client that sends too slowly is dropped without an answer, one whose head is
too large gets 431, a malformed one 400, another method than GET or HEAD 405,
another path 404. ``/health`` answers 200 ``ok`` while the broker serves, 503
once it is stopping. At most ``MAX_CONNECTIONS`` are served at once; beyond
that a connection is closed at once, so scrapers cannot take more of the
broker's descriptors than that.

The head is parsed by :func:`parse_request_head`, without I/O; what
``/metrics`` answers comes from the ``scrape`` the server is given.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import trio

log = logging.getLogger("wirekafka.server.metrics")

MAX_HEAD_BYTES = 8 * 1024
HEAD_TIMEOUT_S = 2.0  # for the whole request line and headers
SEND_TIMEOUT_S = 30.0  # for the whole answer
MAX_CONNECTIONS = 8
RECEIVE_BYTES = 4096
# after the answer, what is read and dropped before closing (see _drain)
DRAIN_TIMEOUT_S = 1.0
DRAIN_BYTES = 256 * 1024
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus text format

_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class BadRequest(Exception):
    """The request head is not HTTP/1.x."""


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: str
    path: str  # the target without its query string


def parse_request_head(head: bytes) -> RequestHead:
    """The request line and header lines (CRLF-separated, without the blank line)."""
    request_line, *header_lines = head.split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3:
        raise BadRequest("the request line is not METHOD TARGET VERSION")
    method, target, version = parts
    if not method or not set(method) <= _TOKEN:
        raise BadRequest("the method is not a token")
    if version not in (b"HTTP/1.0", b"HTTP/1.1"):
        raise BadRequest("the version is not HTTP/1.0 or HTTP/1.1")
    if not target.startswith(b"/") or not all(0x21 <= byte < 0x7F for byte in target):
        raise BadRequest("the target is not an absolute path")
    for line in header_lines:
        name, colon, _ = line.partition(b":")
        if not colon or not name or not set(name) <= _TOKEN:
            raise BadRequest("a header line is not NAME: VALUE")
    path = target.split(b"?", 1)[0].decode("ascii")
    return RequestHead(method.decode("ascii"), path)


def response_bytes(
    status: int, body: bytes, *, content_type: str = "text/plain; charset=utf-8", head: bool = False
) -> bytes:
    """A whole HTTP/1.1 response that closes the connection; ``head``: without the body."""
    lines = [
        f"HTTP/1.1 {status} {_REASONS[status]}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if status == 405:
        lines.append("Allow: GET, HEAD")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (b"" if head else body)


class TooLarge(Exception):
    """The request head exceeds ``MAX_HEAD_BYTES``."""


async def read_head(stream: trio.abc.ReceiveStream) -> bytes | None:
    """The bytes before the blank line that ends the head; None if the client
    closed first. Raises TooLarge past ``MAX_HEAD_BYTES``."""
    buffer = bytearray()
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end > MAX_HEAD_BYTES or (end < 0 and len(buffer) > MAX_HEAD_BYTES):
            raise TooLarge
        if end >= 0:
            return bytes(buffer[:end])
        data = await stream.receive_some(RECEIVE_BYTES)
        if not data:
            return None
        buffer += data


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    """Read what the client still sends (a head cut short, a body) until it closes,
    briefly: closing a socket with unread data resets the connection, and the
    client could lose the answer with it."""
    received = 0
    with trio.move_on_after(DRAIN_TIMEOUT_S):
        while received < DRAIN_BYTES and (data := await stream.receive_some(RECEIVE_BYTES)):
            received += len(data)


class MetricsServer:
    """Serves ``/metrics`` (``scrape()`` gives the text) and ``/health`` (``serving()``
    says whether the broker is up and not stopping)."""

    def __init__(self, scrape: Callable[[], Awaitable[bytes]], serving: Callable[[], bool]) -> None:
        self._scrape = scrape
        self._serving = serving
        self.active = 0  # connections being served

    async def run(self, listeners: list[trio.SocketListener]) -> None:
        """Accept and serve until cancelled (``serve_listeners`` waits and retries
        when descriptors run out)."""
        await trio.serve_listeners(self.handle, listeners)

    async def handle(self, stream: trio.abc.HalfCloseableStream) -> None:
        """Serve one connection; it is closed by the caller (``serve_listeners``)."""
        if self.active >= MAX_CONNECTIONS:
            return
        self.active += 1
        try:
            answer = await self._answer_for(stream)
            if answer is not None:
                with trio.move_on_after(SEND_TIMEOUT_S):
                    await stream.send_all(answer)
                    await stream.send_eof()
                await _drain(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # a bug: this connection ends, the broker goes on
            log.exception("serving a metrics connection failed")
        finally:
            self.active -= 1

    async def _answer_for(self, stream: trio.abc.Stream) -> bytes | None:
        head = None
        with trio.move_on_after(HEAD_TIMEOUT_S):
            try:
                head = await read_head(stream)
            except TooLarge:
                return response_bytes(431, b"request head too large\n")
        if head is None:  # too slow, or gone
            return None
        try:
            request = parse_request_head(head)
        except BadRequest as exc:
            return response_bytes(400, f"{exc}\n".encode())
        if request.method not in ("GET", "HEAD"):
            return response_bytes(405, b"only GET and HEAD\n")
        answer = partial(response_bytes, head=request.method == "HEAD")
        if request.path == "/health":
            if self._serving():
                return answer(200, b"ok\n")
            return answer(503, b"stopping\n")
        if request.path == "/metrics":
            try:
                text = await self._scrape()
            except Exception:  # a bug: this scrape fails, the broker goes on
                log.exception("rendering /metrics failed")
                return answer(500, b"rendering the metrics failed\n")
            return answer(200, text, content_type=METRICS_CONTENT_TYPE)
        return answer(404, b"not found: try /metrics or /health\n")
