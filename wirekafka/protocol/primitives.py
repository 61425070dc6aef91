"""Kafka's primitive wire types: a bounds-checked reader and an appending writer.

Every length read from the wire is checked against the bytes that are left
before anything is sliced; a short read raises :class:`ProtocolError` and
never returns fewer bytes than asked for.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Protocol, TypeAlias

from wirekafka.protocol.errors import ProtocolError

Buffer: TypeAlias = bytes | bytearray | memoryview

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")

# The longest legal encodings: 5 bytes for 32-bit varints, 10 for 64-bit.
_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10

# A string holds at most 32767 bytes, compact or not: Kafka's generated
# readers and writers refuse longer ones in every version.
MAX_STRING_BYTES = 0x7FFF


class ExternalBytes(Protocol):
    """Bytes the writer does not copy, such as a span of a log segment.

    The codec only needs their length; whoever sends the encoded parts
    (the server, with ``os.sendfile``) knows how to move them.
    """

    @property
    def size_bytes(self) -> int: ...


def zigzag_encode(value: int) -> int:
    """Map a signed integer to an unsigned one, small magnitudes first."""
    return (value << 1) ^ (value >> 63) if value < 0 else value << 1


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


class Reader:
    """Reads primitives from a buffer, from ``pos`` up to ``end``."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, data: Buffer, pos: int = 0, end: int | None = None) -> None:
        self.buf = memoryview(data).cast("B")
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        if not 0 <= self.pos <= self.end <= len(self.buf):
            raise ValueError("reader bounds outside the buffer")

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, size: int, what: str) -> int:
        start = self.pos
        if not 0 <= size <= self.end - start:
            raise ProtocolError(
                f"short read: {what} needs {size} bytes at offset {start}, {self.end - start} left"
            )
        self.pos = start + size
        return start

    def sub_reader(self, size: int, what: str) -> Reader:
        """A reader over the next ``size`` bytes, which this reader skips."""
        start = self._need(size, what)
        return Reader(self.buf, start, start + size)

    def int8(self) -> int:
        value: int = _INT8.unpack_from(self.buf, self._need(1, "int8"))[0]
        return value

    def int16(self) -> int:
        value: int = _INT16.unpack_from(self.buf, self._need(2, "int16"))[0]
        return value

    def uint16(self) -> int:
        value: int = _UINT16.unpack_from(self.buf, self._need(2, "uint16"))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack_from(self.buf, self._need(4, "int32"))[0]
        return value

    def uint32(self) -> int:
        value: int = _UINT32.unpack_from(self.buf, self._need(4, "uint32"))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack_from(self.buf, self._need(8, "int64"))[0]
        return value

    def float64(self) -> float:
        value: float = _FLOAT64.unpack_from(self.buf, self._need(8, "float64"))[0]
        return value

    def boolean(self) -> bool:
        return self.buf[self._need(1, "bool")] != 0

    def uuid(self) -> uuid.UUID:
        start = self._need(16, "uuid")
        return uuid.UUID(bytes=bytes(self.buf[start : start + 16]))

    def raw(self, size: int, what: str = "bytes") -> bytes:
        start = self._need(size, what)
        return bytes(self.buf[start : start + size])

    def _unsigned_varint(self, max_bytes: int, what: str) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        result = 0
        shift = 0
        for _ in range(max_bytes):
            if pos >= end:
                raise ProtocolError(f"short read: {what} at offset {self.pos} is cut off")
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self.pos = pos
                return result
            shift += 7
        raise ProtocolError(f"{what} at offset {self.pos} is longer than {max_bytes} bytes")

    def unsigned_varint(self) -> int:
        value = self._unsigned_varint(_MAX_VARINT_BYTES, "unsigned varint")
        if value > 0xFFFFFFFF:
            raise ProtocolError("unsigned varint exceeds 32 bits")
        return value

    def varint(self) -> int:
        value = self._unsigned_varint(_MAX_VARINT_BYTES, "varint")
        if value > 0xFFFFFFFF:
            raise ProtocolError("varint exceeds 32 bits")
        return zigzag_decode(value)

    def varlong(self) -> int:
        value = self._unsigned_varint(_MAX_VARLONG_BYTES, "varlong")
        if value > 0xFFFFFFFFFFFFFFFF:
            raise ProtocolError("varlong exceeds 64 bits")
        return zigzag_decode(value)

    # Lengths: each returns -1 for null, else a length already known to fit.

    def _checked_length(self, length: int, what: str) -> int:
        if length < -1:
            raise ProtocolError(f"negative {what} length {length}")
        if length > self.end - self.pos:
            raise ProtocolError(
                f"short read: {what} of {length} bytes at offset {self.pos}, "
                f"{self.end - self.pos} left"
            )
        return length

    def _text(self, length: int, what: str) -> str:
        start = self._need(length, what)
        try:
            return str(self.buf[start : start + length], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{what} at offset {start} is not UTF-8") from exc

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ProtocolError("null in a non-nullable string")
        return value

    def nullable_string(self) -> str | None:
        length = self._checked_length(self.int16(), "string")
        return None if length == -1 else self._text(length, "string")

    def compact_nullable_string(self) -> str | None:
        length = self._checked_length(self.unsigned_varint() - 1, "compact string")
        if length > MAX_STRING_BYTES:  # as Kafka's readers refuse it
            raise ProtocolError(f"compact string of {length} bytes is longer than a string may be")
        return None if length == -1 else self._text(length, "compact string")

    def compact_string(self) -> str:
        value = self.compact_nullable_string()
        if value is None:
            raise ProtocolError("null in a non-nullable compact string")
        return value

    def nullable_bytes(self) -> bytes | None:
        length = self._checked_length(self.int32(), "bytes")
        return None if length == -1 else self.raw(length)

    def compact_nullable_bytes(self) -> bytes | None:
        length = self._checked_length(self.unsigned_varint() - 1, "compact bytes")
        return None if length == -1 else self.raw(length)

    def view(self, size: int, what: str = "bytes") -> memoryview:
        """The next ``size`` bytes as a view into the buffer, without copying."""
        start = self._need(size, what)
        return self.buf[start : start + size]

    def nullable_bytes_view(self) -> memoryview | None:
        length = self._checked_length(self.int32(), "bytes")
        return None if length == -1 else self.view(length)

    def compact_nullable_bytes_view(self) -> memoryview | None:
        length = self._checked_length(self.unsigned_varint() - 1, "compact bytes")
        return None if length == -1 else self.view(length)

    def array_length(self, min_element_bytes: int) -> int:
        """An int32 array count (-1 for null), checked against the bytes left."""
        return self._checked_count(self.int32(), min_element_bytes)

    def compact_array_length(self, min_element_bytes: int) -> int:
        return self._checked_count(self.unsigned_varint() - 1, min_element_bytes)

    def _checked_count(self, count: int, min_element_bytes: int) -> int:
        if count < -1:
            raise ProtocolError(f"negative array length {count}")
        if count * min_element_bytes > self.end - self.pos:
            raise ProtocolError(
                f"array of {count} elements cannot fit in the {self.end - self.pos} bytes left"
            )
        return count


def string_bytes(value: str) -> bytes:
    data = value.encode()
    if len(data) > MAX_STRING_BYTES:
        raise ValueError(f"string of {len(data)} bytes is too long (at most {MAX_STRING_BYTES})")
    return data


def unsigned_varint_bytes(value: int) -> bytes:
    """``value`` as an unsigned varint: 7 bits a byte, least significant first."""
    if not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Writer:
    """Appends primitives; large byte strings and external parts are not copied.

    ``_buf`` is the running buffer. The codec's generated encoders append to it
    directly, holding on to it across calls that may flush: it is emptied when
    flushed, never replaced.
    """

    __slots__ = ("_buf", "_parts", "_size")

    def __init__(self) -> None:
        self._parts: list[Any] = []
        self._buf = bytearray()
        self._size = 0

    def __len__(self) -> int:
        return self._size + len(self._buf)

    def int8(self, value: int) -> None:
        self._buf += _INT8.pack(value)

    def int16(self, value: int) -> None:
        self._buf += _INT16.pack(value)

    def uint16(self, value: int) -> None:
        self._buf += _UINT16.pack(value)

    def int32(self, value: int) -> None:
        self._buf += _INT32.pack(value)

    def uint32(self, value: int) -> None:
        self._buf += _UINT32.pack(value)

    def int64(self, value: int) -> None:
        self._buf += _INT64.pack(value)

    def float64(self, value: float) -> None:
        self._buf += _FLOAT64.pack(value)

    def boolean(self, value: bool) -> None:
        self._buf.append(1 if value else 0)

    def uuid(self, value: uuid.UUID) -> None:
        self._buf += value.bytes

    def unsigned_varint(self, value: int) -> None:
        self._buf += unsigned_varint_bytes(value)

    def varint(self, value: int) -> None:
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"varint out of range: {value}")
        self.unsigned_varint(zigzag_encode(value))

    def varlong(self, value: int) -> None:
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"varlong out of range: {value}")
        self.unsigned_varint(zigzag_encode(value))

    # Big payloads (record batches) become parts of their own instead of being
    # copied into the running buffer.
    _COPY_LIMIT = 4096

    def raw(self, data: Buffer) -> None:
        view = memoryview(data)
        if view.nbytes < self._COPY_LIMIT:
            self._buf += view
        else:
            self._flush()
            self._parts.append(view)
            self._size += view.nbytes

    def external(self, part: ExternalBytes) -> None:
        """Append a part that the sender moves itself (see :class:`ExternalBytes`)."""
        self._flush()
        self._parts.append(part)
        self._size += part.size_bytes

    def _flush(self) -> None:
        if self._buf:
            self._parts.append(bytes(self._buf))
            self._size += len(self._buf)
            self._buf.clear()

    def string(self, value: str) -> None:
        data = string_bytes(value)
        self.int16(len(data))
        self._buf += data

    def nullable_string(self, value: str | None) -> None:
        if value is None:
            self.int16(-1)
        else:
            self.string(value)

    def compact_nullable_string(self, value: str | None) -> None:
        if value is None:
            self.unsigned_varint(0)
        else:
            data = string_bytes(value)
            self.unsigned_varint(len(data) + 1)
            self._buf += data

    compact_string = compact_nullable_string

    def nullable_bytes(self, value: Buffer | None) -> None:
        if value is None:
            self.int32(-1)
        else:
            self.int32(memoryview(value).nbytes)
            self.raw(value)

    def compact_nullable_bytes(self, value: Buffer | None) -> None:
        if value is None:
            self.unsigned_varint(0)
        else:
            self.unsigned_varint(memoryview(value).nbytes + 1)
            self.raw(value)

    def array_length(self, count: int) -> None:
        self.int32(count)

    def compact_array_length(self, count: int) -> None:
        self.unsigned_varint(count + 1)

    @property
    def in_one_buffer(self) -> bool:
        """Whether everything written is in the running buffer (nothing was flushed)."""
        return not self._parts

    def prefixed(self) -> bytearray:
        """The running buffer itself, after a 4-byte size prefix put before it: the
        whole frame of a message :attr:`in_one_buffer`. The writer is done with."""
        buf = self._buf
        buf[:0] = _INT32.pack(len(buf))
        self._buf = bytearray()
        return buf

    def parts(self) -> list[Any]:
        """The encoded message as a list of bytes-like objects and external parts."""
        self._flush()
        return list(self._parts)

    def getvalue(self) -> bytes:
        """The encoded message as one byte string (no external parts allowed)."""
        self._flush()
        if any(not isinstance(part, (bytes, memoryview)) for part in self._parts):
            raise TypeError("message holds external parts; use parts()")
        return b"".join(self._parts)
