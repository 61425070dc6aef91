"""Size-prefixed frames: a 4-byte big-endian length, then that many bytes.

:class:`FrameDecoder` is fed whatever the socket produced and hands back whole
frames. A frame's size is checked against the maximum as soon as its four
size bytes have arrived, before any of its body is buffered.
"""

from __future__ import annotations

import struct
from collections import deque

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer

SIZE_PREFIX_BYTES = 4
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes

_SIZE = struct.Struct(">i")


def check_frame_size(size: int, max_frame_bytes: int) -> int:
    """Validate a frame size read from the wire and return it."""
    if size < 0:
        raise ProtocolError(f"negative frame size {size}")
    if size > max_frame_bytes:
        raise ProtocolError(f"frame of {size} bytes exceeds the limit of {max_frame_bytes} bytes")
    return size


def encode_frame(body: Buffer) -> bytes:
    return _SIZE.pack(memoryview(body).nbytes) + bytes(body)


def frame_prefix(body_size: int) -> bytes:
    """The size prefix alone, for a body sent in several parts."""
    return _SIZE.pack(body_size)


class FrameDecoder:
    """Turns a byte stream into frames (bodies without their size prefix).

    Frames are handed out as the bytearrays they were received into: a frame
    that arrives on its own is never copied, and whoever takes it may patch
    it in place (a produce request's offsets, say).
    """

    __slots__ = ("_body_size", "_buf", "_frames", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._body_size: int | None = None
        self._frames: deque[bytearray] = deque()

    @property
    def buffered_bytes(self) -> int:
        """Bytes received that are not yet part of a whole frame."""
        return len(self._buf)

    @property
    def pending_frame_bytes(self) -> int | None:
        """Size of the frame being received, once its prefix has arrived."""
        return self._body_size

    def receive_data(self, data: Buffer) -> None:
        """Take bytes from the stream; raises ProtocolError on a bad frame size."""
        self._buf += data
        while True:
            if self._body_size is None:
                if len(self._buf) < SIZE_PREFIX_BYTES:
                    return
                size = _SIZE.unpack_from(self._buf)[0]
                self._body_size = check_frame_size(size, self.max_frame_bytes)
                del self._buf[:SIZE_PREFIX_BYTES]
            size = self._body_size
            if len(self._buf) < size:
                return
            if len(self._buf) == size:
                frame, self._buf = self._buf, bytearray()
            else:
                frame = self._buf[:size]
                del self._buf[:size]
            self._frames.append(frame)
            self._body_size = None

    def next_frame(self) -> bytearray | None:
        """The next whole frame body, or None until more data arrives."""
        return self._frames.popleft() if self._frames else None
