"""A connection's responses on their way out: queued in order, written by one task.

The task that reads requests puts each response's parts in a
:class:`ResponseQueue` and goes on to the next request; the queue's own task
writes whatever has gathered when the reader next yields. Requests a client
pipelines (librdkafka keeps up to five, or many more, in flight on a
connection) are answered with one ``writev`` between them, and a response is
never held back behind a request that waits (a long-polling Fetch, a
JoinGroup, an fsync): the reader yields while it waits, and the writer sends
what came before.

Bytes go out with ``writev`` straight from the parts they were encoded into;
file spans (record data) with ``sendfile``, never through Python. What is
queued is bounded (responses and bytes held in memory); a reader that finds
the queue full waits until the writer has made room, so a client that stops
reading stops being served.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence

import trio

from wirekafka.storage.spans import FileSpan

MAX_QUEUED_RESPONSES = 64
MAX_QUEUED_BYTES = 4 * 1024 * 1024  # held in memory; file spans are not counted
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024


async def _sendfile(sock: trio.socket.SocketType, span: FileSpan) -> None:
    position, remaining = span.position, span.size_bytes
    while remaining:
        try:
            sent = os.sendfile(sock.fileno(), span.fileno(), position, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if sent == 0:  # the file ends before the span: the response cannot be completed
            raise OSError(f"{span.file.path}: {remaining} bytes of a span are missing")
        position += sent
        remaining -= sent


async def _writev(sock: trio.socket.SocketType, buffers: list[memoryview]) -> None:
    """Write every buffer, in order, with as few ``writev`` calls as the socket allows."""
    fd = sock.fileno()
    first = 0
    while first < len(buffers):
        try:
            sent = os.writev(fd, buffers[first : first + _IOV_MAX])
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        while sent:
            size = buffers[first].nbytes
            if sent < size:
                buffers[first] = buffers[first][sent:]
                break
            sent -= size
            first += 1


async def send_parts(sock: trio.socket.SocketType, parts: Sequence[object]) -> None:
    """Send responses' parts in order: bytes-like parts with ``writev``, file spans
    with ``sendfile``. Returns without yielding when the socket takes everything."""
    buffers: list[memoryview] = []
    for part in parts:
        if isinstance(part, FileSpan):
            if buffers:
                await _writev(sock, buffers)
                buffers = []
            await _sendfile(sock, part)
        else:
            view = memoryview(part)  # type: ignore[arg-type]
            if view.nbytes:
                buffers.append(view.cast("B") if view.format != "B" else view)
    if buffers:
        await _writev(sock, buffers)


def _memory_bytes(parts: Sequence[object]) -> int:
    held = 0
    for part in parts:
        if not isinstance(part, FileSpan):
            held += len(part)  # type: ignore[arg-type]
    return held


class ResponseQueue:
    """Responses of one connection, written in order by :meth:`run`."""

    __slots__ = ("_bytes", "_closing", "_parts", "_queued", "_room", "_send", "_work")

    def __init__(self, send: Callable[[Sequence[object]], Awaitable[None]]) -> None:
        """``send``: writes parts to the connection (:func:`send_parts` on its socket, or
        through TLS)."""
        self._send = send
        self._parts: list[object] = []
        self._queued = 0  # responses put and not yet written
        self._bytes = 0  # of those, bytes held in memory
        self._closing = False
        self._work = trio.lowlevel.ParkingLot()  # the writer waits here for responses
        self._room = trio.lowlevel.ParkingLot()  # readers wait here for room

    @property
    def full(self) -> bool:
        return self._queued >= MAX_QUEUED_RESPONSES or self._bytes >= MAX_QUEUED_BYTES

    def put(self, parts: Sequence[object]) -> None:
        """Queue one response; it goes out when the writer next runs."""
        self._parts.extend(parts)
        self._queued += 1
        self._bytes += _memory_bytes(parts)
        self._work.unpark()

    async def wait_for_room(self) -> None:
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
            await self._send(parts)
            self._queued -= queued
            self._bytes -= held
            self._room.unpark_all()
