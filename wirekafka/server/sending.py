"""Writing a response's parts to a socket: bytes with send, file spans with sendfile."""

from __future__ import annotations

import os
from collections.abc import Sequence

import trio

from wirekafka.storage.spans import FileSpan


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


async def send_parts(stream: trio.SocketStream, parts: Sequence[object]) -> None:
    """Send a response's parts in order; nothing in a FileSpan passes through Python."""
    pending: list[bytes] = []  # bytes-like parts, joined before sending
    for part in parts:
        if isinstance(part, FileSpan):
            if pending:
                await stream.send_all(b"".join(pending))
                pending = []
            await _sendfile(stream.socket, part)
        else:
            pending.append(part)  # type: ignore[arg-type]
    if pending:
        await stream.send_all(b"".join(pending))
    else:
        await trio.lowlevel.checkpoint()
