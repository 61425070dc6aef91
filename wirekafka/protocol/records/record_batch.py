"""Record batches (magic 2), read and patched without decoding their records.

Layout of a batch (all big-endian)::

    offset  field
    0       base_offset             int64
    8       batch_length            int32   bytes after this field
    12      partition_leader_epoch  int32
    16      magic                   int8    = 2
    17      crc                     uint32  CRC32C of bytes 21..end
    21      attributes              int16   codec (bits 0-2), timestamp type (3),
                                            transactional (4), control (5)
    23      last_offset_delta       int32
    27      base_timestamp          int64
    35      max_timestamp           int64
    43      producer_id             int64
    51      producer_epoch          int16
    53      base_sequence           int32
    57      record_count            int32
    61      records                 (compressed as a whole when a codec is set)

A record: length (varint), attributes (int8), timestamp delta (varlong),
offset delta (varint), key and value (varint length, -1 for null), then a
varint count of headers, each a varint-length UTF-8 key and a value.

The base offset and the leader epoch sit outside the CRC, so a broker can
assign offsets by patching the first eight bytes in place.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer, Reader, Writer
from wirekafka.protocol.records.compression import (
    COMPRESSION_MASK,
    DEFAULT_CHUNK_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    Compressor,
    compress,
    compression_of,
    iter_decompressed,
)
from wirekafka.protocol.records.record import (
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    Header,
    Record,
    TimestampType,
    is_partial_entry,
    timestamp_type_of,
)

MAGIC = 2
HEADER_BYTES = 61
MIN_BATCH_LENGTH = HEADER_BYTES - LOG_OVERHEAD
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size_bytes(self) -> int:
        """The whole batch on the wire, from base_offset to its last byte."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> CompressionType:
        return compression_of(self.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        return timestamp_type_of(self.attributes)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


_new_header = tuple.__new__


def read_batch_header(buf: Buffer, position: int = 0, *, whole: bool = True) -> BatchHeader:
    """The header of the batch at ``position``.

    With ``whole`` (the default) the entire batch must be in ``buf``; without
    it only the 61 header bytes need be, as when scanning a file header by header.
    """
    available = len(buf) - position
    if available < HEADER_BYTES:
        raise ProtocolError(f"record batch header needs {HEADER_BYTES} bytes, {available} left")
    fields = _HEADER.unpack_from(buf, position)
    # Checked on the plain tuple: this runs for every batch produced.
    batch_length, magic, record_count = fields[1], fields[3], fields[12]
    if magic != MAGIC:
        raise ProtocolError(f"record batch magic {magic}, expected {MAGIC}")
    if batch_length < MIN_BATCH_LENGTH:
        raise ProtocolError(f"record batch length {batch_length} is too small")
    if whole and LOG_OVERHEAD + batch_length > available:
        raise ProtocolError(
            f"record batch of {LOG_OVERHEAD + batch_length} bytes is cut off at {available} bytes"
        )
    if record_count < 0:
        raise ProtocolError(f"negative record count {record_count}")
    return _new_header(BatchHeader, fields)


# batch_length, magic, last_offset_delta, max_timestamp, producer_id, record_count:
# the fields a log append needs, the others skipped over.
_APPEND_FIELDS = struct.Struct(">8xi4xb6xi8xqq6xi")


def single_batch_summary(buf: Buffer) -> tuple[int, int, int, int] | None:
    """(last_offset_delta, max_timestamp, record_count, producer_id) of the one batch in ``buf``.

    None unless ``buf`` is exactly one batch whose header passes the checks of
    :func:`read_batch_header`; the caller then reads the headers one by one,
    which names what is wrong. A log append given no headers reads its batch
    this way: unpacking six fields and building no header costs about 40% of
    :func:`read_batch_header`.
    """
    size = len(buf)
    if size < HEADER_BYTES:
        return None
    batch_length, magic, last_offset_delta, max_timestamp, producer_id, record_count = (
        _APPEND_FIELDS.unpack_from(buf)
    )
    if (
        magic != MAGIC
        or LOG_OVERHEAD + batch_length != size
        or batch_length < MIN_BATCH_LENGTH
        or record_count < 0
    ):
        return None
    return last_offset_delta, max_timestamp, record_count, producer_id


def iter_batches(
    buf: Buffer, *, allow_partial_tail: bool = False
) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch in ``buf``.

    Fetch responses may end in a partial batch (the byte budget cut it); with
    ``allow_partial_tail`` such a tail ends the iteration instead of raising.
    """
    position = 0
    end = len(buf)
    while position < end:
        if allow_partial_tail and is_partial_entry(buf, position):
            return
        header = read_batch_header(buf, position)
        yield position, header
        position += header.size_bytes


def batches_of(buf: Buffer) -> list[tuple[int, BatchHeader]]:
    """(position, header) of each batch in ``buf``, which must be whole batches; one
    header read when ``buf`` is a single batch, as nearly every produce's data is."""
    header = read_batch_header(buf)
    if LOG_OVERHEAD + header.batch_length == len(buf):  # size_bytes, without its call
        return [(0, header)]
    return list(iter_batches(buf))


def compute_crc(buf: Buffer, position: int, size_bytes: int) -> int:
    view = memoryview(buf)
    return crc32c.crc32c(view[position + ATTRIBUTES_OFFSET : position + size_bytes])


def crc_matches(buf: Buffer, position: int = 0, header: BatchHeader | None = None) -> bool:
    header = header or read_batch_header(buf, position)
    return compute_crc(buf, position, header.size_bytes) == header.crc


# set_base_offset(buf, position, base_offset) assigns offsets to a batch in
# place (the CRC does not cover them). It is the bare pack_into, with no call
# around it: a log append runs it for every produced batch.
set_base_offset = _INT64.pack_into


def set_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Stamp the leader epoch on the batch at ``position`` in place (outside the CRC)."""
    _INT32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray | memoryview, position: int, timestamp_ms: int) -> None:
    """Mark a batch as LogAppendTime with this time, and recompute its CRC."""
    header = read_batch_header(buf, position)
    _INT16.pack_into(buf, position + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    crc = compute_crc(buf, position, header.size_bytes)
    _UINT32.pack_into(buf, position + CRC_OFFSET, crc)


@dataclass(slots=True)
class RecordBatch:
    """A batch with its records decoded (offsets and timestamps made absolute)."""

    header: BatchHeader
    records: list[Record] = field(default_factory=list)


def _read_record(reader: Reader, base_offset: int, base_timestamp: int) -> Record:
    length = reader.varint()
    if length < 0:
        raise ProtocolError(f"negative record length {length}")
    body = reader.sub_reader(length, "record")
    body.int8()  # record attributes: unused by every Kafka version so far
    timestamp = base_timestamp + body.varlong()
    offset = base_offset + body.varint()
    key = _read_varint_bytes(body)
    value = _read_varint_bytes(body)
    header_count = body.varint()
    if header_count < 0 or header_count * 2 > body.remaining:
        raise ProtocolError(f"record header count {header_count} does not fit")
    headers: list[Header] = []
    for _ in range(header_count):
        key_bytes = _read_varint_bytes(body)
        if key_bytes is None:
            raise ProtocolError("null record header key")
        try:
            header_key = key_bytes.decode()
        except UnicodeDecodeError as exc:
            raise ProtocolError("record header key is not UTF-8") from exc
        headers.append((header_key, _read_varint_bytes(body)))
    if body.remaining:
        raise ProtocolError(f"record has {body.remaining} bytes beyond its fields")
    return Record(offset, timestamp, key, value, headers)


def _read_varint_bytes(reader: Reader) -> bytes | None:
    length = reader.varint()
    if length < -1:
        raise ProtocolError(f"negative length {length}")
    return None if length == -1 else reader.raw(length)


def _record_end(buf: Buffer, pos: int) -> int | None:
    """Where the record starting at ``pos`` ends, or None when its length is cut off."""
    raw = 0
    for shift, at in enumerate(range(pos, min(len(buf), pos + 5))):
        byte = buf[at]
        raw |= (byte & 0x7F) << (7 * shift)
        if byte < 0x80:
            length = (raw >> 1) ^ -(raw & 1)
            if length < 0:
                raise ProtocolError(f"negative record length {length}")
            return at + 1 + length
    if len(buf) >= pos + 5:
        raise ProtocolError("record length is a varint longer than 5 bytes")
    return None


class RecordCarry:
    """The start of a record that the end of one chunk of a batch's records cut
    off, carried over to the next chunks until the record is whole.

    :meth:`join` gives the bytes to read now: the chunk itself, or the record
    carried with it; None while a record whose length is known is still short
    of it, so a long record is joined once, not once per chunk. :meth:`keep`
    carries what a reader left unread.
    """

    __slots__ = ("_held", "_needed", "_parts")

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._held = 0  # bytes in _parts
        self._needed = 0  # the carried record's length from its start, when known

    def join(self, chunk: Buffer) -> Buffer | None:
        if not self._parts:
            return chunk
        self._parts.append(bytes(chunk))
        self._held += len(chunk)
        if self._held < self._needed:
            return None
        return self.rest()

    def keep(self, data: Buffer, position: int, needed: int = 0) -> None:
        """Carry ``data`` from ``position`` on: the start of a record of ``needed``
        bytes (0 when its length is not known yet)."""
        if position < len(data):
            self._parts = [bytes(data[position:])]
            self._held = len(data) - position
            self._needed = needed

    def rest(self) -> bytes:
        """What is carried (empty if nothing), which is then no longer carried."""
        data = b"".join(self._parts)
        self._parts, self._held, self._needed = [], 0, 0
        return data


def iter_records(
    buf: Buffer,
    position: int = 0,
    *,
    header: BatchHeader | None = None,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Iterator[Record]:
    """The records of the batch at ``position``, one at a time (offsets and
    timestamps made absolute); a compressed payload is inflated as a stream,
    so only the record in hand and a chunk are held. Raises ProtocolError for
    records that do not parse or do not match the header's count."""
    header = header or read_batch_header(buf, position)
    payload = memoryview(buf)[position + HEADER_BYTES : position + header.size_bytes]
    if header.compression == CompressionType.NONE:
        chunks: Iterator[Buffer] = iter((payload,))
    else:
        chunks = iter_decompressed(
            header.compression, payload, max_bytes=max_decompressed_bytes, chunk_bytes=chunk_bytes
        )
    base_offset, base_timestamp, count = (
        header.base_offset,
        header.base_timestamp,
        header.record_count,
    )
    read = 0
    carry = RecordCarry()
    for chunk in chunks:
        data = carry.join(chunk)
        if data is None:
            continue
        pos = needed = 0
        while pos < len(data):
            end = _record_end(data, pos)
            if end is None or end > len(data):
                needed = 0 if end is None else end - pos
                break
            if read == count:
                raise ProtocolError(f"record batch has bytes after its {count} records")
            yield _read_record(Reader(data, pos, end), base_offset, base_timestamp)
            read += 1
            pos = end
        carry.keep(data, pos, needed)
    if carry.rest():
        raise ProtocolError("the last record of the batch is cut off")
    if read != count:
        raise ProtocolError(f"record batch holds {read} records, its header says {count}")


def decode_batch(
    buf: Buffer,
    position: int = 0,
    *,
    verify_crc: bool = True,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> RecordBatch:
    """Decode the batch at ``position`` with all its records."""
    header = read_batch_header(buf, position)
    if verify_crc and compute_crc(buf, position, header.size_bytes) != header.crc:
        raise ProtocolError(f"record batch at offset {header.base_offset} fails its CRC")
    records = iter_records(
        buf,
        position,
        header=header,
        max_decompressed_bytes=max_decompressed_bytes,
        chunk_bytes=max_decompressed_bytes + 1,
    )
    return RecordBatch(header, list(records))


def decode_batches(
    buf: Buffer, *, allow_partial_tail: bool = False, verify_crc: bool = True
) -> list[RecordBatch]:
    return [
        decode_batch(buf, position, verify_crc=verify_crc)
        for position, _ in iter_batches(buf, allow_partial_tail=allow_partial_tail)
    ]


def _write_varint_bytes(writer: Writer, value: bytes | None) -> None:
    if value is None:
        writer.varint(-1)
    else:
        writer.varint(len(value))
        writer.raw(value)


def _encode_record(record: Record, base_offset: int, base_timestamp: int) -> bytes:
    body = Writer()
    body.int8(0)
    body.varlong(record.timestamp - base_timestamp)
    body.varint(record.offset - base_offset)
    _write_varint_bytes(body, record.key)
    _write_varint_bytes(body, record.value)
    body.varint(len(record.headers))
    for header_key, header_value in record.headers:
        _write_varint_bytes(body, header_key.encode())
        _write_varint_bytes(body, header_value)
    data = body.getvalue()
    prefix = Writer()
    prefix.varint(len(data))
    return prefix.getvalue() + data


def encode_batch(
    records: Sequence[Record],
    *,
    compression: CompressionType = CompressionType.NONE,
    log_append_time_ms: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    offset_span: tuple[int, int] | None = None,
) -> bytes:
    """One batch holding ``records``, whose offsets must increase.

    The base offset and base timestamp are the first record's; the offset and
    timestamp of every record are kept. With ``log_append_time_ms`` the batch
    is a LogAppendTime batch whose max timestamp is that time. ``offset_span``
    (base offset, last offset) gives the batch a wider span than its records,
    as compaction keeps a batch's offsets (and so its producer's sequence
    numbers) when it removes some of its records.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    base_offset, last_offset = offset_span or (records[0].offset, records[-1].offset)
    if not base_offset <= records[0].offset <= records[-1].offset <= last_offset:
        raise ValueError(f"records outside the batch's offsets {base_offset}..{last_offset}")
    base_timestamp = records[0].timestamp
    previous = base_offset - 1
    for record in records:
        if record.offset <= previous:
            raise ValueError(f"record offsets must increase: {record.offset} after {previous}")
        previous = record.offset
    body = b"".join(_encode_record(record, base_offset, base_timestamp) for record in records)
    if compression != CompressionType.NONE:
        body = compress(compression, body)
    return _with_header(
        body,
        _BatchFields(
            base_offset,
            last_offset,
            base_timestamp,
            max(record.timestamp for record in records),
            len(records),
            compression,
            log_append_time_ms,
            producer_id,
            producer_epoch,
            base_sequence,
            is_transactional,
            is_control,
            partition_leader_epoch,
        ),
    )


class _BatchFields(NamedTuple):
    base_offset: int
    last_offset: int
    base_timestamp: int
    max_timestamp: int  # of the records
    record_count: int
    compression: CompressionType
    log_append_time_ms: int | None
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    is_transactional: bool = False
    is_control: bool = False
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH


def _with_header(body: bytes, fields: _BatchFields) -> bytes:
    """The batch: its 61-byte header (CRC included) and ``body``, its records as stored."""
    attributes = int(fields.compression)
    max_timestamp = fields.max_timestamp
    if fields.log_append_time_ms is not None:
        attributes |= TIMESTAMP_TYPE_BIT
        max_timestamp = fields.log_append_time_ms
    if fields.is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if fields.is_control:
        attributes |= CONTROL_BIT
    batch = bytearray(HEADER_BYTES) + body
    _HEADER.pack_into(
        batch,
        0,
        fields.base_offset,
        len(batch) - LOG_OVERHEAD,
        fields.partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        fields.last_offset - fields.base_offset,
        fields.base_timestamp,
        max_timestamp,
        fields.producer_id,
        fields.producer_epoch,
        fields.base_sequence,
        fields.record_count,
    )
    _UINT32.pack_into(batch, CRC_OFFSET, compute_crc(batch, 0, len(batch)))
    return bytes(batch)


class BatchWriter:
    """Writes one batch record by record, compressing as records come, so that
    only the compressed bytes are held (converting a message set whose
    wrapper inflates to many small records, say). Offsets must increase; the
    base offset and timestamp are the first record's."""

    def __init__(self, compression: CompressionType = CompressionType.NONE) -> None:
        self.compression = compression
        self._compressor = Compressor(compression)
        self._parts: list[bytes] = []
        self._first: Record | None = None
        self._last_offset = -1
        self._max_timestamp = -1
        self.record_count = 0

    def add(self, record: Record) -> None:
        first = self._first
        if first is None:
            first = self._first = record
        elif record.offset <= self._last_offset:
            raise ValueError(
                f"record offsets must increase: {record.offset} after {self._last_offset}"
            )
        data = _encode_record(record, first.offset, first.timestamp)
        self._parts.append(self._compressor.compress(data))
        self._last_offset = record.offset
        self._max_timestamp = max(self._max_timestamp, record.timestamp)
        self.record_count += 1

    def finish(self, *, log_append_time_ms: int | None = None) -> bytes:
        """The batch; with ``log_append_time_ms`` a LogAppendTime batch of that time."""
        if self._first is None:
            raise ValueError("a record batch needs at least one record")
        body = b"".join([*self._parts, self._compressor.flush()])
        return _with_header(
            body,
            _BatchFields(
                self._first.offset,
                self._last_offset,
                self._first.timestamp,
                self._max_timestamp,
                self.record_count,
                self.compression,
                log_append_time_ms,
            ),
        )


def encode_empty_batch(header: BatchHeader) -> bytes:
    """A batch with ``header``'s offsets, producer and timestamps but no records.

    Compaction leaves one in place of a producer's last batch when it removes
    every record of it, so the producer's sequence numbers survive (Kafka's
    cleaner does the same). It is uncompressed: there is nothing to compress.
    """
    batch = bytearray(HEADER_BYTES)
    _HEADER.pack_into(
        batch,
        0,
        header.base_offset,
        HEADER_BYTES - LOG_OVERHEAD,
        header.partition_leader_epoch,
        MAGIC,
        0,
        header.attributes & ~COMPRESSION_MASK,
        header.last_offset_delta,
        header.max_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        0,
    )
    _UINT32.pack_into(batch, CRC_OFFSET, compute_crc(batch, 0, len(batch)))
    return bytes(batch)
