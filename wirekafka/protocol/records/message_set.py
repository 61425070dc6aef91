"""Message sets: the record formats of magic 0 and magic 1.

A message set is a run of entries, each::

    offset        int64
    message_size  int32   bytes after this field
    crc           uint32  CRC32 of magic..end
    magic         int8    0 or 1
    attributes    int8    codec (bits 0-2); magic 1: timestamp type (bit 3)
    timestamp     int64   magic 1 only
    key           bytes   int32 length, -1 for null
    value         bytes

A compressed message is a wrapper whose value is a whole message set,
compressed. Inside a magic-0 wrapper the inner messages carry absolute
offsets; inside a magic-1 wrapper they carry offsets relative to the first,
and the wrapper carries the absolute offset of the last. Inner messages are
never compressed themselves.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer, Reader
from wirekafka.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    Compressor,
    compression_of,
    decompress,
)
from wirekafka.protocol.records.record import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
    Record,
    TimestampType,
    is_partial_entry,
    timestamp_type_of,
)

_MIN_MESSAGE_SIZE = {0: 14, 1: 22}  # crc, magic, attributes, [timestamp], two lengths
_ENTRY_HEAD = struct.Struct(">qiIbb")
_SIZE = struct.Struct(">i")
_ATTRIBUTES_AT = 17  # offset, size, crc, magic: then the attributes byte
_INT64 = struct.Struct(">q")


@dataclass(slots=True)
class LegacyMessage:
    """A message from a message set, compressed wrappers already opened.

    ``compression`` and ``timestamp_type`` are those of the top-level
    message the record came in; ``timestamp`` is NO_TIMESTAMP for magic 0.
    """

    offset: int
    magic: int
    compression: CompressionType
    timestamp_type: TimestampType
    timestamp: int
    key: bytes | None
    value: bytes | None

    def to_record(self) -> Record:
        return Record(self.offset, self.timestamp, self.key, self.value)


@dataclass(slots=True)
class _Entry:
    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def _iter_entries(buf: Buffer, allow_partial_tail: bool, verify_crc: bool) -> Iterator[_Entry]:
    view = memoryview(buf)
    position = 0
    while position < len(view):
        if allow_partial_tail and is_partial_entry(view, position):
            break
        entry, position = _read_entry(view, position, verify_crc)
        yield entry


def _entry_positions(view: memoryview) -> Iterator[int]:
    """Where each entry of a message set starts, from the entry heads alone: for a
    look before decoding, which checks every entry whole."""
    position = 0
    while position + LOG_OVERHEAD <= len(view):
        yield position
        (size,) = _SIZE.unpack_from(view, position + 8)
        position += LOG_OVERHEAD + max(size, 0)


def entry_codecs(buf: Buffer) -> Iterator[int]:
    """The codec bits of each top-level message of a message set, unchecked."""
    view = memoryview(buf)
    for position in _entry_positions(view):
        if position + _ATTRIBUTES_AT < len(view):
            yield view[position + _ATTRIBUTES_AT] & 0x07


def first_codec(buf: Buffer) -> CompressionType:
    """The codec of the first compressed message of a message set (NONE if none is)."""
    return compression_of(next((codec for codec in entry_codecs(buf) if codec), 0))


def _last_entry_offset(buf: Buffer) -> int | None:
    """The offset of the last entry of a message set, read from the entry heads alone."""
    view = memoryview(buf)
    last = None
    for position in _entry_positions(view):
        (last,) = _INT64.unpack_from(view, position)
    return last


class MessageHead(NamedTuple):
    """The fields of a message before its key and value (``timestamp`` is
    NO_TIMESTAMP for magic 0)."""

    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int

    @property
    def size_bytes(self) -> int:
        """The whole entry, from its offset to its last byte."""
        return LOG_OVERHEAD + self.message_size


def read_message_head(buf: Buffer, position: int = 0) -> MessageHead:
    """The head of the message at ``position``, which must be in ``buf`` whole
    (its magic 0 or 1, its size large enough for that magic); the CRC is not
    checked (:func:`message_crc_matches`)."""
    available = len(buf) - position
    if available < LOG_OVERHEAD + _MIN_MESSAGE_SIZE[0]:
        raise ProtocolError(f"message of at least 26 bytes is cut off at {available} bytes")
    offset, size, crc, magic, attributes = _ENTRY_HEAD.unpack_from(buf, position)
    if magic not in _MIN_MESSAGE_SIZE:
        raise ProtocolError(f"message magic {magic} is not 0 or 1")
    if size < _MIN_MESSAGE_SIZE[magic]:
        raise ProtocolError(f"message size {size} is too small for magic {magic}")
    if LOG_OVERHEAD + size > available:
        raise ProtocolError(f"message of {size} bytes is cut off at {available - LOG_OVERHEAD}")
    timestamp = _INT64.unpack_from(buf, position + 18)[0] if magic == 1 else NO_TIMESTAMP
    return MessageHead(offset, size, crc, magic, attributes, timestamp)


def message_crc_matches(buf: Buffer, position: int, head: MessageHead) -> bool:
    """Whether the message at ``position`` matches its CRC32 (of magic..end)."""
    view = memoryview(buf)
    return zlib.crc32(view[position + 16 : position + head.size_bytes]) == head.crc


def _read_entry(view: memoryview, position: int, verify_crc: bool) -> tuple[_Entry, int]:
    """The entry at ``position`` and the position after it."""
    head = read_message_head(view, position)
    offset, magic = head.offset, head.magic
    end = position + head.size_bytes
    if verify_crc and not message_crc_matches(view, position, head):
        raise ProtocolError(f"message at offset {offset} fails its CRC")
    reader = Reader(view, position + (26 if magic == 1 else 18), end)
    key = reader.nullable_bytes()
    value = reader.nullable_bytes()
    if reader.remaining:
        raise ProtocolError(f"message at offset {offset} has {reader.remaining} trailing bytes")
    return _Entry(offset, magic, head.attributes, head.timestamp, key, value), end


def iter_message_set(
    buf: Buffer,
    *,
    allow_partial_tail: bool = False,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[LegacyMessage]:
    """Every message in ``buf``, wrappers opened, offsets absolute, one at a time:
    a wrapper's inflated message set is held, not its messages decoded all at
    once. Compressed wrappers may inflate to ``max_decompressed_bytes`` in all."""
    budget = max_decompressed_bytes
    for entry in _iter_entries(buf, allow_partial_tail, verify_crc):
        codec = compression_of(entry.attributes)
        timestamp_type = (
            timestamp_type_of(entry.attributes) if entry.magic == 1 else TimestampType.CREATE_TIME
        )
        if codec == CompressionType.NONE:
            yield LegacyMessage(
                entry.offset, entry.magic, codec, timestamp_type,
                entry.timestamp, entry.key, entry.value,
            )  # fmt: skip
            continue
        if entry.value is None:
            raise ProtocolError(f"compressed message at offset {entry.offset} has no value")
        inner_bytes = decompress(codec, entry.value, legacy_lz4=entry.magic == 0, max_bytes=budget)
        budget -= len(inner_bytes)
        # Magic 1 inner offsets are relative; the wrapper holds the last absolute one.
        last_inner = _last_entry_offset(inner_bytes)
        shift = entry.offset - last_inner if entry.magic == 1 and last_inner is not None else 0
        for message in _iter_entries(inner_bytes, allow_partial_tail=False, verify_crc=verify_crc):
            if message.attributes & 0x07:
                raise ProtocolError("a compressed message holds another compressed message")
            if message.magic != entry.magic:
                raise ProtocolError("inner message magic differs from its wrapper's")
            timestamp = (
                entry.timestamp
                if timestamp_type == TimestampType.LOG_APPEND_TIME
                else message.timestamp
            )
            yield LegacyMessage(
                message.offset + shift, entry.magic, codec, timestamp_type,
                timestamp, message.key, message.value,
            )  # fmt: skip


def decode_message_set(
    buf: Buffer,
    *,
    allow_partial_tail: bool = False,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[LegacyMessage]:
    """Every message in ``buf``, wrappers opened, offsets absolute."""
    return list(
        iter_message_set(
            buf,
            allow_partial_tail=allow_partial_tail,
            verify_crc=verify_crc,
            max_decompressed_bytes=max_decompressed_bytes,
        )
    )


def _encode_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    parts = [bytes((magic, attributes))]
    if magic == 1:
        parts.append(_INT64.pack(timestamp))
    for data in (key, value):
        parts.append(struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data)
    body = b"".join(parts)
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


class MessageSetWriter:
    """Writes records as a message set of one ``magic``, record by record.

    Uncompressed, each record is a message; compressed, all of them go into
    one wrapper message whose offset is the last record's and whose value is
    compressed as records come, so only the compressed bytes are held. Magic 0
    drops timestamps; magic 1 keeps them (or stamps ``log_append_time_ms``).
    """

    def __init__(
        self,
        *,
        magic: int,
        compression: CompressionType = CompressionType.NONE,
        log_append_time_ms: int | None = None,
    ) -> None:
        if magic not in (0, 1):
            raise ValueError(f"message sets have magic 0 or 1, not {magic}")
        self.magic = magic
        self.compression = compression
        self.log_append_time_ms = log_append_time_ms
        self._timestamp_bit = (
            TIMESTAMP_TYPE_BIT if magic == 1 and log_append_time_ms is not None else 0
        )
        self._parts: list[bytes] = []
        self._compressor = (
            None
            if compression == CompressionType.NONE
            else Compressor(compression, legacy_lz4=magic == 0)
        )
        self._first_offset: int | None = None
        self._last_offset = 0
        self._max_timestamp = NO_TIMESTAMP

    def _timestamp_of(self, record: Record) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP
        return record.timestamp if self.log_append_time_ms is None else self.log_append_time_ms

    def add(self, record: Record) -> None:
        timestamp = self._timestamp_of(record)
        if self._compressor is None:
            self._parts.append(
                _encode_message(
                    record.offset,
                    self.magic,
                    self._timestamp_bit,
                    timestamp,
                    record.key,
                    record.value,
                )
            )
            return
        if self._first_offset is None:
            self._first_offset = record.offset
        # Inner offsets of magic 1 are relative to the first; magic 0 keeps them absolute.
        inner_offset = record.offset - self._first_offset if self.magic == 1 else record.offset
        message = _encode_message(inner_offset, self.magic, 0, timestamp, record.key, record.value)
        self._parts.append(self._compressor.compress(message))
        self._last_offset = record.offset
        self._max_timestamp = max(self._max_timestamp, timestamp)

    def finish(self) -> bytes:
        """The message set (empty bytes for no records)."""
        if self._compressor is None:
            return b"".join(self._parts)
        if self._first_offset is None:
            return b""
        wrapper_value = b"".join([*self._parts, self._compressor.flush()])
        return _encode_message(
            self._last_offset,
            self.magic,
            int(self.compression) | self._timestamp_bit,
            self._max_timestamp,
            None,
            wrapper_value,
        )


def encode_message_set(
    records: Sequence[Record],
    *,
    magic: int,
    compression: CompressionType = CompressionType.NONE,
    log_append_time_ms: int | None = None,
) -> bytes:
    """A message set of ``records`` at their offsets (see :class:`MessageSetWriter`)."""
    writer = MessageSetWriter(
        magic=magic, compression=compression, log_append_time_ms=log_append_time_ms
    )
    for record in records:
        writer.add(record)
    return writer.finish()
