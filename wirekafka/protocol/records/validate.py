"""Looking inside a record batch before it is stored, as Kafka's log validator does.

The CRC proves only that the bytes arrived as the producer sent them; a batch
is stored only when every client can read it back. :class:`BatchCheck` walks
the batch's records (inflating a compressed payload as a stream, in bounded
chunks, up to a limit) and checks that each record parses: its length, its
varints, key, value and headers within that length, header keys in UTF-8,
its offset delta equal to its place in the batch, its attributes byte below
0x80 (kafka-python reads it as a varint), and, on a compacted topic, a key.
The records must be exactly as many as the header says, and fill the batch
exactly, and the header's max timestamp must be the base timestamp plus the
largest timestamp delta (Kafka rewrites it from the records; every producer
writes it so), unless the batch is a LogAppendTime batch. A failure raises :class:`InvalidRecords` with the Kafka error
that answers it: INVALID_RECORD for records that do not parse or do not fit
the header (Kafka's InvalidRecordException), CORRUPT_MESSAGE for a payload
that does not decompress, MESSAGE_TOO_LARGE for one that inflates past the
limit.

Looking costs time per record, and one produce may carry tens of thousands.
A record read on its own costs about 0.7 µs of Python. But producers mostly
send records of one layout (the same key and value sizes, no headers), which
differ from one another only in their timestamp and offset deltas. So after
reading a record (its layout is where the walk found its fields), the walk
checks how many of the records after it repeat its layout, if the next one has
its length, with slices that step through the buffer one record size at a time:
the bytes that must be equal (lengths, header count) counted, the offset
deltas against a table of their encodings, the attributes and the timestamp
deltas' continuation bits by ``translate`` deleting what is allowed, and the
deltas' largest value (the last record's, mostly, which a few passes confirm,
or by laying them out as integers for one ``struct.unpack``). Each condition
gives how many records in a row meet it, from one pass in C (and, where it
fails, the first difference read off the XOR of both sides taken as
integers); the run is the shortest. So a run of records of one layout costs a
few tens of nanoseconds a record. After a try that finds no run the walk
reads more records on their own before it tries again, so records that do
not repeat cost little more than their own reading. A small batch of the size
and record count of an earlier one whose records all had one layout is checked
against that layout at once, its first record too: one strided slice per byte
place the layout fixes (:func:`_uniform_batch`).

The check is sans-IO and resumable: :meth:`BatchCheck.run` stops at a
deadline, and the caller can finish it later (in a worker thread, so that a
large batch does not hold up other clients).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import NamedTuple

from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records.compression import (
    COMPRESSION_MASK,
    DecompressedTooLarge,
    compression_of,
    iter_decompressed,
)
from wirekafka.protocol.records.record import LOG_OVERHEAD, TIMESTAMP_TYPE_BIT
from wirekafka.protocol.records.record_batch import HEADER_BYTES, BatchHeader, RecordCarry

CHUNK_BYTES = 256 * 1024
_MIN_RECORD_BODY_BYTES = 6  # attributes, two deltas, key and value lengths, header count
_MIN_RUN = 8  # fewer records than this are not worth checking as a run
_MAX_PROBE_BACKOFF = 256  # records read one at a time, at most, between run checks
_EVEN_BYTES = bytes(range(0, 0x100, 2))
_UP_TO = [bytes(range(top + 1)) for top in range(0x80)]  # bytes 0..top, for translate()
# for translate(): the bytes whose low 7 bits are at most top
_LOW_7_BITS_UP_TO = [bytes(b for b in range(0x100) if b & 0x7F <= top) for top in range(0x80)]
_LOW_7_BITS = bytes(byte & 0x7F for byte in range(0x100))  # a translate() table
# translate() tables: 1 for the bytes a column must not hold, 0 for the rest
_IS_HIGH = bytes(int(byte >= 0x80) for byte in range(0x100))
_IS_LOW = bytes(int(byte < 0x80) for byte in range(0x100))
_LOW_BYTES = bytes(range(0x80))  # translate()'s delete: what is left is not below 0x80
_HIGH_BYTES = bytes(range(0x80, 0x100))
_NO_DELTA = -(2**64)
_MAX_RUN_TIMESTAMP_WIDTH = 8  # a run's timestamp deltas are compared as 8-byte integers
# Offset deltas d = 0, 1, 2, ... are zigzag varints of 2d: one byte below 64,
# two below 8192, three below 2**20.
_OFFSET_DELTA_LIMITS = (64, 8192, 1 << 20)

# A record's layout, when it has no headers: where its timestamp and offset
# deltas are and how wide, and where the bytes are that the records of a run
# share (the length, key length and value length varints, and the header count).
Layout = tuple[int, int, int, int, tuple[int, ...]]


class InvalidRecords(ProtocolError):
    """A batch that must not be stored, and the Kafka error that answers it."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class _NeedMore(Exception):
    """The record runs past the bytes inflated so far."""

    def __init__(self, needed: int = 0) -> None:
        super().__init__()
        self.needed = needed  # bytes from the record's start, when known


def _invalid(index: int, message: str) -> InvalidRecords:
    return InvalidRecords(ErrorCode.INVALID_RECORD, f"record {index}: {message}")


_delta_tables: dict[int, tuple[bytes, ...]] = {}
_big_endian_u64s: dict[int, struct.Struct] = {}  # by count, for _largest_delta
_layouts: dict[tuple[int, ...], Layout] = {}
_MAX_CACHED_LAYOUTS = 1024


def _delta_table(width: int) -> tuple[bytes, ...]:
    """Byte j of the encoding of every offset delta of ``width`` bytes, indexed by
    the delta; built on first use (three-byte deltas take 3 MiB) from repeated
    blocks, since byte j of delta d depends only on d >> (7j - 1)."""
    table = _delta_tables.get(width)
    if table is None:
        limit = _OFFSET_DELTA_LIMITS[width - 1]
        columns = []
        for j in range(width):
            continuation = 0x80 if j < width - 1 else 0
            if j == 0:  # (2d) & 0x7f: the even numbers below 128, over and over
                cycle = bytes(value | continuation for value in range(0, 128, 2))
            else:  # (2d >> 7j) & 0x7f: each value held for 2 ** (7j - 1) deltas
                block = 1 << (7 * j - 1)
                cycle = b"".join(bytes((value | continuation,)) * block for value in range(128))
            columns.append((cycle * (limit // len(cycle) + 1))[:limit])
        table = tuple(columns)
        _delta_tables[width] = table
    return table


def _varint(
    buf: bytes, pos: int, end: int, max_bytes: int, index: int, what: str, *, at_start: bool = False
) -> tuple[int, int]:
    """(raw unsigned value, next position) of the varint at ``pos``; the caller
    undoes the zigzag. ``end`` is the record's end, or with ``at_start`` (the
    record's length) the end of the bytes so far, which more may follow."""
    value = 0
    shift = 0
    for at in range(pos, min(end, pos + max_bytes)):
        byte = buf[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at + 1
        shift += 7
    if pos + max_bytes <= end:
        raise _invalid(index, f"{what} is a varint longer than {max_bytes} bytes")
    if at_start:
        raise _NeedMore
    raise _invalid(index, f"{what} runs past the record's length")


def _signed(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


class _RecordWalk:
    """Checks the records of one batch as their bytes arrive, chunk by chunk."""

    __slots__ = (
        "backoff", "carry", "count", "first", "index", "keys_required", "max_delta", "needed",
        "probe_at", "timestamp_span", "uniform",
    )  # fmt: skip

    def __init__(self, count: int, keys_required: bool, timestamp_span: int | None) -> None:
        self.count = count
        self.keys_required = keys_required
        self.timestamp_span = timestamp_span  # max timestamp - base timestamp, if to be checked
        self.max_delta = _NO_DELTA  # the largest timestamp delta read so far
        self.index = 0
        self.carry = RecordCarry()  # a record cut by the end of a chunk
        self.needed = 0  # how many bytes that record takes, when its length is known
        self.probe_at = 0  # the record index from which runs are looked for again
        self.backoff = 1
        # A batch whose records all have the first one's layout: that layout and
        # the first record (see _uniform_check)
        self.uniform: tuple[Layout, bytes] | None = None
        # A batch of fewer records, read one by one: its first record's fields
        # (offsets as _layout takes them) and size, if it has no headers
        self.first: tuple[tuple[int, ...], int] | None = None

    def feed(self, chunk: Buffer) -> None:
        joined = self.carry.join(chunk)
        if joined is None:
            return  # a long record: wait for all of it
        data = bytes(joined)  # runs are checked with strided slices of bytes
        pos = self._walk(data, final=False)
        self.carry.keep(data, pos, self.needed)

    def whole(self, buf: bytes) -> None:
        """Check all the records at once (``buf`` holds every one)."""
        self._walk(buf, final=True)
        self._check_totals()

    def _check_totals(self) -> None:
        if self.index < self.count:
            raise InvalidRecords(
                ErrorCode.INVALID_RECORD,
                f"the batch holds {self.index} records, its header says {self.count}",
            )
        span = self.timestamp_span
        if span is not None and self.max_delta != span:
            raise InvalidRecords(
                ErrorCode.INVALID_RECORD,
                f"the records' timestamps reach {self.max_delta} ms past the batch's base "
                f"timestamp, its max timestamp says {span}",
            )

    def finish(self) -> None:
        """No more bytes: no record may be cut off, and there must be ``count``."""
        rest = self.carry.rest()
        if rest:
            self._walk(rest, final=True)
        self._check_totals()

    def _walk(self, buf: bytes, *, final: bool) -> int:
        """Check records from the start of ``buf``; return where the unchecked bytes begin.

        The loop reads one record per turn, inline (a call per record would
        cost a fifth of the time): each varint of one or two bytes, as nearly
        all are, is read in place, and :func:`_varint` reads the rest and
        says what is wrong. Fields are not checked against the record's end
        one by one: a record whose fields overrun it cannot end exactly at
        its end with a header count of 0 and goes to :func:`_headers`, which
        finds the overrun; reading past ``buf`` raises IndexError. Every few
        records the loop looks for a run (see :func:`_run_length`) and steps
        over it.
        """
        pos, end = 0, len(buf)
        count = self.count
        index = self.index
        keys_required = self.keys_required
        probe_at = self.probe_at
        max_delta = self.max_delta
        self.needed = 0
        try:
            while pos < end:
                if index >= count:
                    raise InvalidRecords(
                        ErrorCode.INVALID_RECORD,
                        f"bytes follow the {count} records the batch's header counts",
                    )
                # the record's length
                raw = buf[pos]
                if raw < 0x80:
                    body = pos + 1
                elif pos + 1 < end and buf[pos + 1] < 0x80:
                    raw = (raw & 0x7F) | (buf[pos + 1] << 7)
                    body = pos + 2
                else:
                    raw, body = _varint(buf, pos, end, 5, index, "the length", at_start=True)
                length = (raw >> 1) ^ -(raw & 1)
                if length < _MIN_RECORD_BODY_BYTES:
                    raise _invalid(index, f"record length {length} is too small")
                record_end = body + length
                if record_end > end:
                    raise _NeedMore(record_end - pos)
                # the attributes byte: unused by Kafka, but kafka-python reads it as a
                # varint, so one with its top bit set would shift every field after it
                if buf[body] >= 0x80:
                    raise _invalid(index, f"attributes {buf[body]:#04x} have the top bit set")
                at = body + 1  # the timestamp delta
                raw = buf[at]
                if raw < 0x80:
                    at += 1
                elif buf[at + 1] < 0x80:
                    raw = (raw & 0x7F) | (buf[at + 1] << 7)
                    at += 2
                else:
                    raw, at = _varint(buf, at, record_end, 10, index, "the timestamp delta")
                delta = (raw >> 1) ^ -(raw & 1)
                if delta > max_delta:
                    max_delta = delta
                # the offset delta: the record's place in the batch
                delta_at = at
                raw = buf[at]
                if raw < 0x80:
                    at += 1
                elif buf[at + 1] < 0x80:
                    raw = (raw & 0x7F) | (buf[at + 1] << 7)
                    at += 2
                else:
                    raw, at = _varint(buf, at, record_end, 5, index, "the offset delta")
                if raw != index << 1:
                    raise _invalid(index, f"offset delta {_signed(raw)}, expected {index}")
                # the key
                key_at = at
                raw = buf[at]
                if raw < 0x80:
                    at += 1
                elif buf[at + 1] < 0x80:
                    raw = (raw & 0x7F) | (buf[at + 1] << 7)
                    at += 2
                else:
                    raw, at = _varint(buf, at, record_end, 5, index, "the key length")
                key_end = at
                if not raw & 1:
                    at += raw >> 1
                elif raw != 1:
                    raise _invalid(index, f"key length {_signed(raw)}")
                elif keys_required:  # -1: no key
                    raise _invalid(index, "has no key, which a compacted topic requires")
                # the value
                value_at = at
                raw = buf[at]
                if raw < 0x80:
                    at += 1
                elif buf[at + 1] < 0x80:
                    raw = (raw & 0x7F) | (buf[at + 1] << 7)
                    at += 2
                else:
                    raw, at = _varint(buf, at, record_end, 5, index, "the value length")
                value_end = at
                if not raw & 1:
                    at += raw >> 1
                elif raw != 1:  # -1 is a null value
                    raise _invalid(index, f"value length {_signed(raw)}")
                # the headers: mostly none, a header count of 0 in the record's last byte
                headers = at + 1 != record_end or buf[at]
                if headers:
                    _headers(buf, at, body, record_end, index)
                index += 1
                if index < probe_at or count - index < _MIN_RUN:
                    if index == 1 and final and not headers:  # a small batch's first record
                        self.first = (
                            (body - pos, delta_at - pos, key_at - pos, key_end - pos,
                             value_at - pos, value_end - pos, at - pos),
                            record_end - pos,
                        )  # fmt: skip
                    pos = record_end
                    continue
                # A run repeats this record's layout: the next record must have its
                # length, and no headers (those are read one at a time).
                run = 0
                size = record_end - pos
                if not headers and buf[record_end : record_end + body - pos] == buf[pos:body]:
                    offsets = (
                        body - pos, delta_at - pos, key_at - pos, key_end - pos,
                        value_at - pos, value_end - pos, at - pos,
                    )  # fmt: skip
                    layout = _layout(offsets)
                    run = _run_length(buf, record_end, end, index, count - index, size, layout)
                    if index == 1 and run == count - 1 and final:  # the whole batch, one layout
                        self.uniform = (layout, buf[:size])
                pos = record_end
                if run:
                    delta = _largest_delta(buf, pos, run, size, layout[0], layout[1])
                    if delta > max_delta:
                        max_delta = delta
                    index += run
                    pos += run * size
                    self.backoff = 1
                else:
                    probe_at = index + self.backoff
                    self.backoff = min(self.backoff * 2, _MAX_PROBE_BACKOFF)
        except _NeedMore as more:
            if final:
                raise _invalid(index, "is cut off by the end of the batch") from None
            self.needed = more.needed
        except IndexError:  # a field ran past the last record, and past the end of buf
            raise _invalid(index, "its fields run past its length") from None
        finally:
            self.index = index
            self.probe_at = probe_at
            self.max_delta = max_delta
        return pos


def _headers(buf: bytes, at: int, body: int, record_end: int, index: int) -> None:
    """Check a record's headers, from its header count at ``at`` to its end."""
    if at >= record_end:
        raise _invalid(index, "its fields run past its length")
    raw, at = _varint(buf, at, record_end, 5, index, "the header count")
    header_count = _signed(raw)
    if header_count < 0:
        raise _invalid(index, f"header count {header_count}")
    for _ in range(header_count):
        at = _header(buf, at, record_end, index)
    if at != record_end:
        raise _invalid(
            index, f"its fields take {at - body} bytes, its length says {record_end - body}"
        )


def _layout(offsets: tuple[int, ...]) -> Layout:
    """The layout of a record without headers, from where its fields start (as
    offsets into it): its body (after the length), offset delta, key length, key,
    value length, value and header count. Kept by those offsets: the records of a
    producer mostly have a few layouts."""
    layout = _layouts.get(offsets)
    if layout is None:
        body, delta_at, key_at, key_end, value_at, value_end, header_count_at = offsets
        timestamp_at = body + 1  # after the attributes
        shared = (
            *range(body),
            *range(key_at, key_end),
            *range(value_at, value_end),
            header_count_at,
        )
        layout = (timestamp_at, delta_at - timestamp_at, delta_at, key_at - delta_at, shared)
        if len(_layouts) >= _MAX_CACHED_LAYOUTS:
            _layouts.clear()
        _layouts[offsets] = layout
    return layout


def _header(buf: bytes, at: int, record_end: int, index: int) -> int:
    raw, at = _varint(buf, at, record_end, 5, index, "a header key length")
    key_length = _signed(raw)
    if key_length < 0 or at + key_length > record_end:
        raise _invalid(index, f"header key length {key_length}")
    try:
        buf[at : at + key_length].decode()
    except UnicodeDecodeError:
        raise _invalid(index, "a header key is not UTF-8") from None
    at += key_length
    raw, at = _varint(buf, at, record_end, 5, index, "a header value length")
    value_length = _signed(raw)
    if value_length < -1 or at + max(value_length, 0) > record_end:
        raise _invalid(index, f"header value length {value_length}")
    return at + max(value_length, 0)


def _leading_equal(found: bytes, expected: bytes) -> int:
    """How many leading bytes ``found`` shares with ``expected`` (of the same length):
    a comparison in C, then the first difference from the XOR of both as integers."""
    if found == expected:
        return len(found)
    difference = int.from_bytes(found, "big") ^ int.from_bytes(expected, "big")
    return len(found) - 1 - (difference.bit_length() - 1) // 8


def _run_length(
    buf: bytes, pos: int, end: int, index: int, left: int, size: int, layout: Layout
) -> int:
    """How many records from ``pos`` (the ``index``-th record on, ``left`` still
    to come) repeat the layout of the one of ``size`` bytes just before it.

    Every condition is checked on a strided slice (one byte of every record)
    and gives how many records in a row meet it; the run is the shortest of
    these, if it is at least ``_MIN_RUN`` long. A slice that meets its condition
    throughout, as nearly all do, costs one pass in C (``count``, or
    ``translate`` deleting the bytes allowed); only one that does not is
    compared byte for byte.
    """
    timestamp_at, timestamp_width, delta_at, delta_width, shared = layout
    if delta_width > len(_OFFSET_DELTA_LIMITS) or timestamp_width > _MAX_RUN_TIMESTAMP_WIDTH:
        return 0
    run = min(left, (end - pos) // size, _OFFSET_DELTA_LIMITS[delta_width - 1] - index)
    if run < _MIN_RUN:
        return 0
    stop = pos + run * size
    template = pos - size
    for at in shared:  # bytes every record repeats: lengths, header count
        column = buf[pos + at : stop : size]
        byte = buf[template + at]
        if column.count(byte) != run:
            run = _leading_equal(column, bytes((byte,)) * run)
            if run < _MIN_RUN:
                return 0
            stop = pos + run * size
    # the attributes byte below 0x80, and the timestamp delta's continuation bits
    # set on all its bytes but the last
    last = timestamp_at + timestamp_width - 1
    for at in range(timestamp_at - 1, last + 1):
        column = buf[pos + at : stop : size]
        allowed = _HIGH_BYTES if timestamp_at <= at < last else _LOW_BYTES
        if column.translate(None, allowed):
            flags = _IS_LOW if allowed is _HIGH_BYTES else _IS_HIGH
            run = _leading_equal(column.translate(flags), bytes(run))
            if run < _MIN_RUN:
                return 0
            stop = pos + run * size
    deltas = _delta_table(delta_width)
    for j in range(delta_width):
        column = buf[pos + delta_at + j : stop : size]
        expected = deltas[j][index : index + run]
        if column != expected:
            run = _leading_equal(column, expected)
            if run < _MIN_RUN:
                return 0
            stop = pos + run * size
    return run


def _largest_delta(
    buf: bytes, pos: int, count: int, size: int, timestamp_at: int, width: int
) -> int:
    """The largest timestamp delta of the ``count`` records of a run from ``pos``.

    Each delta's varint groups (7 bits each, least significant first) are laid
    into an 8-byte big-endian integer, most significant first, by strided
    slice assignments: such integers order as the zigzag values do, so one
    ``struct.unpack`` and ``max`` find the largest, in C. A zigzag value is
    even for a delta of 0 or more; the largest delta is the largest even one,
    or, when all are negative, the one of the smallest odd value.

    Timestamps mostly grow, so first the last record's delta is tried as the
    largest, with a few passes in C: for one-byte deltas (under 64 ms) no byte
    may be above its; for two-byte ones (under 8.192 s) no high group may be
    above its, nor any low group from the first record that shares its high
    group on. Otherwise, or for wider deltas, every delta is compared.
    """
    columns = [buf[pos + timestamp_at + j : pos + count * size : size] for j in range(width)]
    if width == 1:  # deltas under 64 ms, the most common
        largest = _largest_one_byte_delta(columns[0])
        assert largest is not None, "a run's timestamp bytes were checked below 0x80"
        return largest
    if width == 2:
        low, high = columns
        last_low, last_high = low[-1] & 0x7F, high[-1]
        if not last_low & 1 and not high.translate(None, _UP_TO[last_high]):
            first = high.find(last_high)
            if not low[first:].translate(None, _LOW_7_BITS_UP_TO[last_low]):
                return (last_low | last_high << 7) >> 1
    packed = bytearray(8 * count)
    for j, column in enumerate(columns):
        packed[7 - j :: 8] = column.translate(_LOW_7_BITS)
    layout = _big_endian_u64s.get(count)
    if layout is None:
        if len(_big_endian_u64s) >= _MAX_CACHED_LAYOUTS:
            _big_endian_u64s.clear()
        layout = _big_endian_u64s[count] = struct.Struct(f">{count}Q")
    values = layout.unpack(packed)
    if not columns[0].translate(None, _EVEN_BYTES):  # no negative delta: the common case
        chosen = max(values)
    else:
        evens = [value for value in values if not value & 1]
        chosen = max(evens) if evens else min(values)
    raw = 0
    for j in range(width):
        raw |= ((chosen >> (8 * j)) & 0x7F) << (7 * j)
    return (raw >> 1) ^ -(raw & 1)


def _largest_one_byte_delta(column: bytes) -> int | None:
    """The largest of one-byte timestamp deltas, ``column`` their bytes (the zigzag
    values themselves); None if a byte is 0x80 or above (not a one-byte varint)."""
    last = column[-1]
    if last < 0x80 and not last & 1 and not column.translate(None, _UP_TO[last]):
        return last >> 1  # none above the last (so all below 0x80)
    if column.translate(None, _LOW_BYTES):
        return None
    for value in range(126, -1, -2):  # the largest even value, found with memchr
        if column.find(value) >= 0:
            return value >> 1
    return -((min(column) + 1) >> 1)


class _UniformBatch(NamedTuple):
    """How to check a batch whose records all have one layout (see :func:`_uniform_batch`):
    its columns (one byte of every record, a strided slice)."""

    size: int  # of each record
    # (place in a record, the column expected): the bytes every record repeats
    # (lengths, header count) and the offset deltas
    columns: tuple[tuple[int, bytes], ...]
    low: tuple[int, ...]  # places below 0x80: attributes, a wider timestamp delta's last byte
    high: tuple[int, ...]  # places 0x80 and up: the timestamp delta's other bytes
    timestamp_at: int
    timestamp_width: int


# Batches whose records all have one layout, as a producer's batches mostly do, by
# their records' total size, count and whether keys were required. What they keep
# is bounded: at most 256 layouts of records up to 4 KiB (larger records cost
# little more to read field by field than their bytes cost anyway).
_uniform_batches: dict[tuple[int, int, bool], _UniformBatch | None] = {}
_MAX_UNIFORM_BATCHES = 256
_MAX_UNIFORM_RECORD_BYTES = 4096


def _uniform_check(template: bytes, layout: Layout, count: int) -> _UniformBatch:
    """The check of a batch of ``count`` records of the layout of ``template``, a record
    the walk read: the bytes every record repeats (its lengths and header count) as
    they are in ``template``, the offset deltas as they must be, the attributes byte
    and the timestamp delta's continuation bits; any byte elsewhere (key, value)."""
    timestamp_at, timestamp_width, delta_at, delta_width, shared = layout
    last_timestamp_byte = timestamp_at + timestamp_width - 1
    deltas = _delta_table(delta_width)
    return _UniformBatch(
        len(template),
        (
            *((at, template[at : at + 1] * count) for at in shared),
            *((delta_at + j, deltas[j][:count]) for j in range(delta_width)),
        ),
        # a one-byte timestamp delta is checked on the column its largest is found on
        (timestamp_at - 1,) if timestamp_width == 1 else (timestamp_at - 1, last_timestamp_byte),
        tuple(range(timestamp_at, last_timestamp_byte)),
        timestamp_at,
        timestamp_width,
    )


def _checkable(layout: Layout, template: bytes) -> bool:
    """Whether batches of records of ``layout`` can be checked as one (see
    :func:`_uniform_check`): records up to 4 KiB whose offset and timestamp deltas
    are as wide as a run's may be (a client may write a varint wider than it must)."""
    _, timestamp_width, _, delta_width, _ = layout
    return (
        len(template) <= _MAX_UNIFORM_RECORD_BYTES
        and delta_width <= len(_OFFSET_DELTA_LIMITS)
        and timestamp_width <= _MAX_RUN_TIMESTAMP_WIDTH
    )


def _remember_uniform(key: tuple[int, int, bool], check: _UniformBatch | None) -> None:
    """Keep ``check`` for the batches of ``key``; None: one such batch was seen."""
    if len(_uniform_batches) >= _MAX_UNIFORM_BATCHES:
        _uniform_batches.clear()
    _uniform_batches[key] = check


def _uniform_batch(records: bytes, count: int, span: int | None, check: _UniformBatch) -> bool:
    """Whether the ``count`` records of a batch all have the layout of a record of an
    earlier batch of the same size and count (``check``, from :func:`_uniform_check`),
    with their offset deltas in place, and the largest timestamp delta among them
    is ``span`` (None: not checked): each record then parses, as the walk would
    find, without its first one read field by field. False leaves the batch to
    the walk, which says what is wrong, if anything."""
    size = check.size
    for at, expected in check.columns:
        if records[at::size] != expected:
            return False
    for at in check.low:
        if records[at::size].translate(None, _LOW_BYTES):
            return False
    for at in check.high:
        if records[at::size].translate(None, _HIGH_BYTES):
            return False
    if check.timestamp_width == 1:  # deltas under 64 ms, the most common
        largest = _largest_one_byte_delta(records[check.timestamp_at :: size])
        return largest is not None and (span is None or largest == span)
    return span is None or (
        _largest_delta(records, 0, count, size, check.timestamp_at, check.timestamp_width) == span
    )


class BatchCheck:
    """The check of one batch's records; :meth:`run` it until it returns True.

    ``batch`` holds the whole batch (header included) and ``header`` is its
    parsed header; ``keys_required`` refuses records without a key (a
    compacted topic); ``max_inflated_bytes`` bounds a compressed payload.
    """

    def __init__(
        self,
        batch: Buffer,
        header: BatchHeader,
        *,
        keys_required: bool,
        max_inflated_bytes: int,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> None:
        self._walk = _RecordWalk(header.record_count, keys_required, timestamp_span(header))
        payload = memoryview(batch)[HEADER_BYTES : header.size_bytes]
        codec = header.attributes & COMPRESSION_MASK
        if codec == 0:
            self._chunks: Iterator[Buffer] = (
                payload[start : start + chunk_bytes]
                for start in range(0, len(payload), chunk_bytes)
            )
        else:
            self._chunks = iter_decompressed(
                compression_of(codec),
                payload,
                max_bytes=max_inflated_bytes,
                chunk_bytes=chunk_bytes,
            )
        self.done = False

    def run(self, deadline: float | None = None) -> bool:
        """Check chunk after chunk to the end (True) or until ``time.perf_counter()``
        passes ``deadline`` (False: call again to go on). Raises InvalidRecords."""
        if self.done:
            return True
        try:
            for chunk in self._chunks:
                self._walk.feed(chunk)
                if deadline is not None and time.perf_counter() >= deadline:
                    return False
            self._walk.finish()
        except DecompressedTooLarge as exc:
            raise InvalidRecords(ErrorCode.MESSAGE_TOO_LARGE, str(exc)) from exc
        except InvalidRecords:
            raise
        except ProtocolError as exc:  # the payload does not decompress
            raise InvalidRecords(ErrorCode.CORRUPT_MESSAGE, str(exc)) from exc
        self.done = True
        return True


def timestamp_span(header: BatchHeader) -> int | None:
    """How far past the base timestamp the records' latest timestamp must be, as
    the header's max timestamp says (None for a LogAppendTime batch, whose max
    timestamp is the broker's)."""
    if header.attributes & TIMESTAMP_TYPE_BIT:
        return None
    return header.max_timestamp - header.base_timestamp


def start_check(
    batch: Buffer,
    header: BatchHeader,
    *,
    keys_required: bool,
    max_inflated_bytes: int,
    deadline: float | None = None,
) -> BatchCheck | None:
    """Check a batch's records until ``deadline`` (``time.perf_counter()``; None:
    to the end): None once done, else the check to finish with
    :meth:`BatchCheck.run` (in a worker thread, say). Raises InvalidRecords.

    A small uncompressed batch (one chunk), most of what producers send, is
    checked at once, without a :class:`BatchCheck`.
    """
    attributes = header.attributes
    payload_bytes = header.batch_length - (HEADER_BYTES - LOG_OVERHEAD)
    if not attributes & COMPRESSION_MASK and payload_bytes <= CHUNK_BYTES:
        # every produced batch of most producers: no helpers, fields read once
        records = bytes(memoryview(batch)[HEADER_BYTES : HEADER_BYTES + payload_bytes])
        count = header.record_count
        span = (
            None
            if attributes & TIMESTAMP_TYPE_BIT
            else header.max_timestamp - header.base_timestamp
        )
        key = (payload_bytes, count, keys_required)
        known = _uniform_batches.get(key)
        if known is not None and _uniform_batch(records, count, span, known):
            return None
        walk = _RecordWalk(count, keys_required, span)
        walk.whole(records)
        uniform = walk.uniform
        first = walk.first
        if uniform is None and first is not None and first[1] * count == len(records):
            # A small batch whose records may all have the first one's layout: taken
            # for one when a batch of its size and count comes again.
            if key in _uniform_batches:
                uniform = _layout(first[0]), records[: first[1]]
            else:
                _remember_uniform(key, None)
        if uniform is not None and _checkable(*uniform):
            _remember_uniform(key, _uniform_check(uniform[1], uniform[0], count))
        return None
    check = BatchCheck(
        batch, header, keys_required=keys_required, max_inflated_bytes=max_inflated_bytes
    )
    return None if check.run(deadline) else check


def check_batch(
    batch: Buffer, header: BatchHeader, *, keys_required: bool, max_inflated_bytes: int
) -> None:
    """Check a batch's records all at once (see :func:`start_check`)."""
    start_check(batch, header, keys_required=keys_required, max_inflated_bytes=max_inflated_bytes)
