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


class _Areas:
    """Buffers of one size, lent to decoders while they hold bytes not yet in a frame,
    and kept for the next one (up to ``MAX_FREE``): an idle connection holds none."""

    MAX_FREE = 16

    def __init__(self) -> None:
        self._free: dict[int, list[bytearray]] = {}

    def take(self, size: int) -> bytearray:
        free = self._free.get(size)
        try:
            return free.pop() if free else bytearray(size)
        except IndexError:  # another thread took the last (one loop each, one pool)
            return bytearray(size)

    def give(self, area: bytearray) -> None:
        free = self._free.setdefault(len(area), [])
        if len(free) < self.MAX_FREE:
            free.append(area)


_AREAS = _Areas()


class FrameDecoder:
    """Turns a byte stream into frames (bodies without their size prefix).

    Bytes arrive in a buffer of ``buffer_bytes``: a reader fills :meth:`fill_view`
    (``recv_into``, no copy of its own) and says how much with :meth:`filled`, or
    hands bytes to :meth:`receive_data`. Each whole frame is copied out of it
    once, into a bytearray of its own that whoever takes it may keep and patch in
    place (a produce request's offsets, say). The buffer is borrowed from those
    of other decoders while bytes not yet in a frame are held, and handed back
    when all have gone into frames: a decoder between requests holds none. A
    frame larger than the buffer is received straight into its own bytearray
    once its size is known, never copied.
    """

    __slots__ = (
        "_area", "_big", "_big_filled", "_body_size", "_buffer_bytes", "_end", "_frames",
        "_start", "_view", "max_frame_bytes",
    )  # fmt: skip

    def __init__(
        self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, buffer_bytes: int = 64 * 1024
    ) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer_bytes = buffer_bytes
        self._area: bytearray | None = None  # borrowed while bytes wait in it
        self._view = memoryview(b"")
        self._start = 0  # the area's bytes from _start to _end are not yet in a frame
        self._end = 0
        self._body_size: int | None = None
        self._big: bytearray | None = None  # a frame too large for the area, arriving
        self._big_filled = 0
        self._frames: deque[bytearray] = deque()

    @property
    def buffered_bytes(self) -> int:
        """Bytes received that are not yet part of a whole frame (besides a size prefix read)."""
        return self._end - self._start + self._big_filled

    @property
    def pending_frame_bytes(self) -> int | None:
        """Size of the frame being received, once its prefix has arrived."""
        return self._body_size

    def fill_view(self, size: int) -> memoryview:
        """Where the next bytes of the stream go: a view of up to ``size`` bytes (fewer
        when the buffer has less room) to write into, then :meth:`filled`. A frame
        larger than the buffer gets its own bytearray here, when its bytes are
        asked for, not when its size arrives (a server reserves memory between)."""
        big = self._big
        pending = self._body_size
        if big is None and pending is not None and pending > self._buffer_bytes:
            big = self._big = bytearray(pending)
            arrived = self._end - self._start  # all of the area: it holds none of the next
            big[:arrived] = self._view[self._start : self._end]
            self._big_filled = arrived
            self._release_area()
        if big is not None:
            filled = self._big_filled
            return memoryview(big)[filled : filled + size]
        if self._area is None:
            self._area = _AREAS.take(self._buffer_bytes)
            self._view = memoryview(self._area)
        start, end = self._start, self._end
        room = self._buffer_bytes - end
        if room < size and start:  # what is buffered moves to the front
            kept = bytes(self._view[start:end])
            end = self._end = len(kept)
            self._view[:end] = kept
            self._start = 0
            room = self._buffer_bytes - end
        return self._view[end : end + min(size, room)]

    def filled(self, count: int) -> None:
        """``count`` bytes were written into the last :meth:`fill_view`; raises
        ProtocolError on a bad frame size."""
        big = self._big
        if big is not None:
            self._big_filled += count
            if self._big_filled == len(big):
                self._frames.append(big)
                self._big = None
                self._big_filled = 0
                self._body_size = None
            return
        self._end += count
        self._split()

    def _release_area(self) -> None:
        """Hand the buffer back: it holds nothing not yet in a frame."""
        area = self._area
        if area is not None:
            self._area = None
            self._view = memoryview(b"")
            self._start = self._end = 0
            _AREAS.give(area)

    def receive_data(self, data: Buffer) -> None:
        """Take bytes from the stream (copied in); raises ProtocolError on a bad frame size."""
        view = memoryview(data).cast("B")
        while view.nbytes:
            target = self.fill_view(view.nbytes)
            count = target.nbytes
            target[:] = view[:count]
            self.filled(count)
            view = view[count:]

    def _split(self) -> None:
        """Take the whole frames the area holds; hand it back if that is all it held."""
        area = self._area
        assert area is not None, "bytes were filled into the area"
        start, end = self._start, self._end
        while True:
            size = self._body_size
            if size is None:
                if end - start < SIZE_PREFIX_BYTES:
                    break
                size = check_frame_size(_SIZE.unpack_from(area, start)[0], self.max_frame_bytes)
                start += SIZE_PREFIX_BYTES
                self._body_size = size
            if end - start < size:  # a frame larger than the area ends here too
                break
            self._frames.append(area[start : start + size])
            start += size
            self._body_size = None
        self._start = start
        if start == end:
            self._release_area()

    def next_frame(self) -> bytearray | None:
        """The next whole frame body, or None until more data arrives."""
        return self._frames.popleft() if self._frames else None

    def peek_frame(self) -> bytearray | None:
        """The frame :meth:`next_frame` would return, left in place."""
        return self._frames[0] if self._frames else None
