"""A connection's responses on their way out: queued in order, sent in order.

The task that reads requests puts each response's parts in a
:class:`ResponseQueue` and goes on to the next request. Requests a client
pipelines (librdkafka keeps up to five, or many more, in flight on a
connection) are answered with one ``writev`` between them. When the reader has
nothing more to read, it sends what gathered itself, if the socket takes it
all at once (:meth:`ResponseQueue.send_now`): a client that sends one request
at a time is answered without a second task waking up. Otherwise the queue's
own task (:meth:`ResponseQueue.run`) writes it, waiting for the socket; and
before the reader handles a request that may wait (a long-polling Fetch, a
JoinGroup, an fsync), it hands what came before to that task
(:meth:`ResponseQueue.kick`), so a response is never held back behind one.

Bytes go out with ``writev`` straight from the parts they were encoded into;
file spans (record data) with ``sendfile``, never through Python, but for
small ones (:data:`INLINE_SPAN_BYTES`). What is queued is bounded (responses
and bytes held in memory); a reader that finds the queue full waits until the
writer has made room, so a client that stops reading stops being served.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence

import trio

from wirekafka.storage.spans import FileSpan

# A span this small is read and written with the response's other bytes: one
# send (one TCP segment on its way to the client, one wake-up of the client)
# costs less than a writev and a sendfile; a consumer reading along, and a
# follower, mostly get such spans.
INLINE_SPAN_BYTES = 16 * 1024
MAX_QUEUED_RESPONSES = 64
MAX_QUEUED_BYTES = 4 * 1024 * 1024  # held in memory; file spans are not counted
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024


def _writev_ready(fd: int, buffers: list[memoryview]) -> list[memoryview]:
    """Write ``buffers`` in order, as much as the socket takes now; what is left."""
    first = 0
    while first < len(buffers):
        try:
            sent = os.writev(fd, buffers[first : first + _IOV_MAX])
        except BlockingIOError:
            break
        while sent:
            size = buffers[first].nbytes
            if sent < size:
                buffers[first] = buffers[first][sent:]
                break
            sent -= size
            first += 1
    return buffers[first:]


def _sendfile_ready(fd: int, span: FileSpan) -> FileSpan | None:
    """Send ``span`` as far as the socket takes it now; what is left of it."""
    position, remaining = span.position, span.size_bytes
    while remaining:
        try:
            sent = os.sendfile(fd, span.fileno(), position, remaining)
        except BlockingIOError:
            return FileSpan(span.file, position, remaining)
        if sent == 0:  # the file ends before the span: the response cannot be completed
            raise OSError(f"{span.file.path}: {remaining} bytes of a span are missing")
        position += sent
        remaining -= sent
    return None


def send_ready(fd: int, parts: Sequence[object]) -> list[object]:
    """Send responses' parts in order, as much as the socket ``fd`` takes without
    waiting: bytes-like parts with ``writev``, file spans with ``sendfile`` (a span of
    up to :data:`INLINE_SPAN_BYTES` is read and goes out in the ``writev`` with the
    bytes around it). Returns what is left to send, in order (empty: everything)."""
    buffers: list[memoryview] = []
    for at, part in enumerate(parts):
        if isinstance(part, FileSpan):
            if part.size_bytes <= INLINE_SPAN_BYTES:
                buffers.append(memoryview(part.read_bytes()))
                continue
            if buffers:
                buffers = _writev_ready(fd, buffers)
                if buffers:
                    return [*buffers, *parts[at:]]
            left = _sendfile_ready(fd, part)
            if left is not None:
                return [left, *parts[at + 1 :]]
        else:
            view = memoryview(part)  # type: ignore[arg-type]
            if view.nbytes:
                buffers.append(view.cast("B") if view.format != "B" else view)
    if buffers:
        return list(_writev_ready(fd, buffers))
    return []


async def send_parts(sock: trio.socket.SocketType, parts: Sequence[object]) -> None:
    """Send responses' parts in order (see :func:`send_ready`), waiting for the socket
    as needed. Returns without yielding when the socket takes everything."""
    fd = sock.fileno()
    left = send_ready(fd, parts)
    while left:
        await trio.lowlevel.wait_writable(sock)
        left = send_ready(fd, left)


def _memory_bytes(parts: Sequence[object]) -> int:
    held = 0
    for part in parts:
        if not isinstance(part, FileSpan):
            held += len(part)  # type: ignore[arg-type]
    return held


class ResponseQueue:
    """Responses of one connection, sent in order: by the reader (:meth:`send_now`) or
    by :meth:`run`."""

    __slots__ = (
        "_bytes", "_closing", "_parts", "_queued", "_room", "_send", "_send_ready", "_sending",
        "_work",
    )  # fmt: skip

    def __init__(
        self,
        send: Callable[[Sequence[object]], Awaitable[None]],
        send_ready: Callable[[Sequence[object]], list[object]] | None = None,
    ) -> None:
        """``send``: writes parts to the connection (:func:`send_parts` on its socket, or
        through TLS); ``send_ready``: writes what it can now and returns the rest
        (:func:`send_ready` on its socket), None where the reader cannot send."""
        self._send = send
        self._send_ready = send_ready
        self._parts: list[object] = []
        self._queued = 0  # responses put and not yet written
        self._bytes = 0  # of those, bytes held in memory
        self._closing = False
        self._sending = False  # the writer is in the middle of a send
        self._work = trio.lowlevel.ParkingLot()  # the writer waits here for responses
        self._room = trio.lowlevel.ParkingLot()  # readers wait here for room

    @property
    def full(self) -> bool:
        return self._queued >= MAX_QUEUED_RESPONSES or self._bytes >= MAX_QUEUED_BYTES

    @property
    def holding(self) -> bool:
        """Whether responses wait to be sent."""
        return bool(self._parts)

    def put(self, parts: Sequence[object]) -> None:
        """Queue one response; it goes out when the writer next runs."""
        self.hold(parts)
        self._work.unpark()

    def hold(self, parts: Sequence[object]) -> None:
        """Queue one response, for :meth:`send_now` or :meth:`kick` to send: the caller
        calls one of them before it waits for anything."""
        self._parts.extend(parts)
        self._queued += 1
        self._bytes += _memory_bytes(parts)

    def kick(self) -> None:
        """Have the writer send what is queued (when the caller next yields)."""
        if self._parts:
            self._work.unpark()

    def send_now(self) -> None:
        """Send what is queued, here, if the socket takes all of it at once; else (or
        while the writer is sending) the writer sends it, or what is left of it."""
        if not self._parts:
            return
        if self._sending or self._send_ready is None:
            self._work.unpark()
            return
        left = self._send_ready(self._parts)
        if left:
            self._parts = left
            self._work.unpark()
            return
        self._parts = []
        self._queued = self._bytes = 0

    async def wait_for_room(self) -> None:
        self.kick()
        while self.full:
            await self._room.park()

    def finish(self) -> None:
        """No more responses: :meth:`run` returns once what is queued is written."""
        self._closing = True
        self._work.unpark()

    async def run(self) -> None:
        """Write queued responses until finished; raises what the socket raises."""
        while True:
            if not self._parts:
                if self._closing:
                    return
                await self._work.park()
                continue
            parts, self._parts = self._parts, []
            queued, held = self._queued, self._bytes
            self._sending = True
            try:
                await self._send(parts)
            finally:
                self._sending = False
            self._queued -= queued
            self._bytes -= held
            self._room.unpark_all()
