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
the bytes that must be equal (lengths, header count) and the offset deltas
compared with what they must be, the top bits of the attributes and the
timestamp deltas by ``isascii`` (after a ``translate`` where they must be
set), and the deltas' largest value (the last record's, mostly, which a few passes confirm,
or by laying them out as integers for one ``struct.unpack``). Each condition
gives how many records in a row meet it, from one pass in C (and, where it
fails, the first difference read off the XOR of both sides taken as
integers); the run is the shortest. So a run of records of one layout costs a
few tens of nanoseconds a record. After a try that finds no run the walk
reads more records on their own before it tries again, so records that do
not repeat cost little more than their own reading.

The layouts the walk finds runs of are kept, and the next batch whose records
all have such layouts (a producer's next batch, mostly, whatever its record
count) is checked as runs of them at once, the first record of each run too,
without reading any record on its own (:func:`_known_records`): where the
offset deltas or the timestamp deltas widen, a run of the next layout begins.
Where that is can mostly be told without looking: the offset deltas widen at
the 65th record, and the timestamp deltas, growing, where the batch's size
says, so such a batch is first checked as the runs so predicted
(:func:`_predicted_runs`), then as the runs found looking for where each ends.

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
# translate() tables, whose output is ASCII (isascii(), a pass in C) when every
# byte of the input is as the name says: 0x80 and up (_TOP_BIT_FLIPPED), even
# (_ODD), at most top (_ABOVE[top]), or so in its low 7 bits (_LOW_7_BITS_ABOVE)
_TOP_BIT_FLIPPED = bytes(byte ^ 0x80 for byte in range(0x100))
_ODD = bytes((byte & 1) << 7 for byte in range(0x100))
_ABOVE = [bytes(0x80 * (byte > top) for byte in range(0x100)) for top in range(0x80)]
_LOW_7_BITS_ABOVE = [
    bytes(0x80 * (byte & 0x7F > top) for byte in range(0x100)) for top in range(0x80)
]
_LOW_7_BITS = bytes(byte & 0x7F for byte in range(0x100))  # a translate() table
# translate() tables: 1 for the bytes a column must not hold, 0 for the rest
_IS_HIGH = bytes(int(byte >= 0x80) for byte in range(0x100))
_IS_LOW = bytes(int(byte < 0x80) for byte in range(0x100))
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
        "backoff", "carry", "count", "index", "keys_required", "max_delta", "needed", "probe_at",
        "timestamp_span",
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
                    if index == 1 and not headers:  # a small batch's first record
                        offsets = (
                            body - pos, delta_at - pos, key_at - pos, key_end - pos,
                            value_at - pos, value_end - pos, at - pos,
                        )  # fmt: skip
                        check = _run_check(_layout(offsets), buf[pos:record_end])
                        if check is not None:
                            _learn(check, keys_required)
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
                    check = _run_check(_layout(offsets), buf[pos:record_end])
                    if check is not None:
                        run, delta, _ = _run_length(
                            buf, record_end, end, index, count - index, check, _MIN_RUN
                        )
                        if run:
                            _learn(check, keys_required)
                pos = record_end
                if run:
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


class _RunCheck(NamedTuple):
    """How to check a run of records of one layout against a record of it, ``size``
    bytes long (see :func:`_run_length`); places are offsets into a record."""

    size: int
    attributes_at: int
    # the timestamp delta's places, and whether each has its continuation bit set
    timestamp: tuple[tuple[int, bool], ...]
    deltas: tuple[tuple[int, bytes], ...]  # (place, byte j of the offset deltas 0, 1, ...)
    delta_limit: int  # the first offset delta too wide for the layout's width
    shared: tuple[tuple[int, bytes], ...]  # (place, the byte every record has there)


def _run_check(layout: Layout, template: bytes) -> _RunCheck | None:
    """The check of runs of ``template``'s layout, ``layout``; None where the
    offset or timestamp delta is wider than a run's may be."""
    timestamp_at, timestamp_width, delta_at, delta_width, shared = layout
    if delta_width > len(_OFFSET_DELTA_LIMITS) or timestamp_width > _MAX_RUN_TIMESTAMP_WIDTH:
        return None
    last = timestamp_at + timestamp_width - 1
    table = _delta_table(delta_width)
    return _RunCheck(
        len(template),
        timestamp_at - 1,
        tuple((at, at < last) for at in range(timestamp_at, last + 1)),
        tuple((delta_at + j, table[j]) for j in range(delta_width)),
        _OFFSET_DELTA_LIMITS[delta_width - 1],
        tuple((at, template[at : at + 1]) for at in shared),
    )


Columns = list[tuple[int, bytes]]
# The columns of runs of up to 256 records of known layouts checked before, by
# their check's id (the check kept beside them, so that the id is not reused),
# first record and length: a producer's batches mostly hold runs of a few lengths
# at a few places.
_run_columns: dict[tuple[int, int, int], tuple[_RunCheck, Columns]] = {}
_MAX_RUN_COLUMNS = 2048
_MAX_COLUMNS_RUN = 256


def _columns(check: _RunCheck, index: int, run: int, keep: bool = False) -> Columns:
    """The bytes a run of ``run`` records of ``check``'s layout from the ``index``-th
    must hold, by place: its offset deltas and the bytes every record shares;
    kept for the next such run if ``keep`` (``check`` is a known layout's)."""
    key = (id(check), index, run)
    kept = _run_columns.get(key)
    if kept is not None and kept[0] is check:
        return kept[1]
    columns = []
    for at, table in check.deltas:
        columns.append((at, table[index : index + run]))
    for at, byte in check.shared:
        columns.append((at, byte * run))
    if keep and run <= _MAX_COLUMNS_RUN:
        if len(_run_columns) >= _MAX_RUN_COLUMNS:
            _run_columns.clear()  # at once: walks in worker threads keep columns too
        _run_columns[key] = (check, columns)
    return columns


def _run_length(
    buf: bytes,
    pos: int,
    end: int,
    index: int,
    left: int,
    check: _RunCheck,
    min_run: int,
    keep: bool = False,
) -> tuple[int, int, Columns]:
    """How many records from ``pos`` (the ``index``-th record on, ``left`` still
    to come) have the layout ``check`` checks, the largest timestamp delta
    among them, and their columns (:func:`_columns`, kept if ``keep``); 0 if fewer
    than ``min_run``.

    The run ends where the timestamp deltas widen, as found on their columns
    (a strided slice: one byte of every record), which are kept for
    :func:`_largest_delta`; the rest of the records' layout up to there is
    checked by :func:`_shares`, and if one of them is not of the layout,
    :func:`_leading_run` finds where the run ends.
    """
    size = check.size
    run = (end - pos) // size
    if left < run:
        run = left
    if check.delta_limit - index < run:
        run = check.delta_limit - index
    if run < min_run:
        return 0, _NO_DELTA, []
    stop = pos + run * size
    timestamps = []
    for at, high in check.timestamp:
        column = buf[pos + at : stop : size]
        if not (column.translate(_TOP_BIT_FLIPPED) if high else column).isascii():
            run = _leading_equal(column.translate(_IS_LOW if high else _IS_HIGH), bytes(run))
            if run < min_run:
                return 0, _NO_DELTA, []
            stop = pos + run * size
        timestamps.append(column)
    if len(timestamps[0]) != run:  # the run was cut: the columns read before the cut too
        timestamps = [column[:run] for column in timestamps]
    columns = _columns(check, index, run, keep)
    if not _shares(buf, pos, stop, check, columns):
        run = _leading_run(buf, pos, index, run, check)
        if run < min_run:
            return 0, _NO_DELTA, []
        timestamps = [column[:run] for column in timestamps]
        columns = _columns(check, index, run)
    return run, _largest_delta(timestamps), columns


def _holds(
    buf: bytes, pos: int, stop: int, check: _RunCheck, columns: Columns
) -> list[bytes] | None:
    """The columns of the timestamp deltas of the records from ``pos`` to ``stop``,
    if they all have the layout ``check`` checks and the offset deltas and shared
    bytes ``columns`` gives; None if one has not.

    Every condition is checked on a strided slice (one byte of every record),
    in one pass in C: ``isascii`` for the top bits of the timestamp deltas and
    the attributes (:func:`_shares`), a comparison for the offset deltas and
    for the bytes the records share.
    """
    size = check.size
    timestamps = []
    for at, high in check.timestamp:
        column = buf[pos + at : stop : size]
        if not (column.translate(_TOP_BIT_FLIPPED) if high else column).isascii():
            return None
        timestamps.append(column)
    return timestamps if _shares(buf, pos, stop, check, columns) else None


def _shares(buf: bytes, pos: int, stop: int, check: _RunCheck, columns: Columns) -> bool:
    """Whether the records from ``pos`` to ``stop`` have the attributes of ``check``'s
    layout, and the offset deltas and shared bytes ``columns`` gives (their
    timestamp deltas are the caller's to check)."""
    size = check.size
    if not buf[pos + check.attributes_at : stop : size].isascii():
        return False
    for at, expected in columns:  # noqa: SIM110 (a loop, not all(): no generator per run)
        if buf[pos + at : stop : size] != expected:
            return False
    return True


def _leading_run(buf: bytes, pos: int, index: int, run: int, check: _RunCheck) -> int:
    """How many of the ``run`` records from ``pos`` (the ``index``-th on) have their
    attributes, offset deltas and shared bytes as ``check`` says, from the first."""
    size = check.size
    stop = pos + run * size
    run = _leading_equal(
        buf[pos + check.attributes_at : stop : size].translate(_IS_HIGH), bytes(run)
    )
    for at, expected in _columns(check, index, run):
        if run:
            run = _leading_equal(buf[pos + at : pos + run * size : size], expected[:run])
    return run


def _largest_delta(columns: list[bytes]) -> int:
    """The largest of timestamp deltas of a run, ``columns`` byte j of each of them
    (their continuation bits checked).

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
    width = len(columns)
    if width == 1:  # deltas under 64 ms, the most common
        return _largest_one_byte_delta(columns[0])
    if width == 2:
        low, high = columns
        last_low, last_high = low[-1] & 0x7F, high[-1]
        if not last_low & 1 and high.translate(_ABOVE[last_high]).isascii():
            first = high.find(last_high)
            if low[first:].translate(_LOW_7_BITS_ABOVE[last_low]).isascii():
                return (last_low | last_high << 7) >> 1
    count = len(columns[0])
    packed = bytearray(8 * count)
    for j, column in enumerate(columns):
        packed[7 - j :: 8] = column.translate(_LOW_7_BITS)
    layout = _big_endian_u64s.get(count)
    if layout is None:
        if len(_big_endian_u64s) >= _MAX_CACHED_LAYOUTS:
            _big_endian_u64s.clear()
        layout = _big_endian_u64s[count] = struct.Struct(f">{count}Q")
    values = layout.unpack(packed)
    if columns[0].translate(_ODD).isascii():  # no negative delta: the common case
        chosen = max(values)
    else:
        evens = [value for value in values if not value & 1]
        chosen = max(evens) if evens else min(values)
    raw = 0
    for j in range(width):
        raw |= ((chosen >> (8 * j)) & 0x7F) << (7 * j)
    return (raw >> 1) ^ -(raw & 1)


def _largest_one_byte_delta(column: bytes) -> int:
    """The largest of one-byte timestamp deltas, ``column`` their bytes (the zigzag
    values themselves, all below 0x80)."""
    last = column[-1]
    if not last & 1 and column.translate(_ABOVE[last]).isascii():
        return last >> 1  # none above the last
    for value in range(126, -1, -2):  # the largest even value, found with memchr
        if column.find(value) >= 0:
            return value >> 1
    return -((min(column) + 1) >> 1)


# The layouts the walk found records of (as the checks of their runs), by the
# records' size, their timestamp and offset deltas' widths, and whether keys were
# required: the layouts a batch's records may be checked as (see
# :func:`_known_records`). A producer's records mostly have a few. What is kept is
# bounded: at most 1,024 layouts of records up to 4 KiB (larger records cost
# little more to read field by field than their bytes cost anyway).
_known_layouts: dict[tuple[int, int, int, bool], _RunCheck] = {}
_MAX_KNOWN_RECORD_BYTES = 4096


def _learn(check: _RunCheck, keys_required: bool) -> None:
    """Keep ``check``, of the layout of a record without headers that the walk read
    whole (keys required, if ``keys_required``), unless an equal one is kept: the
    columns kept for that one's runs (:func:`_columns`) stay of use."""
    if check.size > _MAX_KNOWN_RECORD_BYTES:
        return
    key = (check.size, len(check.timestamp), len(check.deltas), keys_required)
    if _known_layouts.get(key) == check:
        return
    if len(_known_layouts) >= _MAX_CACHED_LAYOUTS:
        _known_layouts.clear()
    _known_layouts[key] = check


# The runs the records of a batch of a size and record count were found in (see
# _known_records): where each starts and ends, its layout's check, and its
# offset deltas and shared bytes; a batch of that size and count is first
# checked as those runs. What is kept is bounded: the runs of up to 512 batches
# of up to 256 records each (a larger batch costs little more to check anew).
Plan = list[tuple[int, int, _RunCheck, Columns]]
_plans: dict[tuple[int, int, bool], Plan] = {}
_MAX_PLANS = 512
_MAX_PLANNED_RECORDS = 256


def _known_records(records: bytes, count: int, keys_required: bool) -> int | None:
    """The largest timestamp delta of the ``count`` records of a batch (``records``,
    their bytes), if they all have layouts the walk has found before: None
    leaves the batch to the walk, which says what is wrong, if anything.

    A run starts with a record of a known layout, found by the size its length
    gives, the width of its timestamp delta, and the width its offset delta
    takes at its place. The run goes on while the records have that layout
    (:func:`_run_length`), up to where the offset deltas or the timestamp
    deltas widen (librdkafka's batches of more than 64 records, or spanning
    more than 63 ms, hold a few such runs); a run of another known layout may
    follow. So every record is checked, the first of each run too. A batch of
    the size and count of one found so before is first checked as its runs.
    """
    key = (len(records), count, keys_required)
    plan = _plans.get(key)
    if plan is not None:
        largest = _largest_if_held(records, plan)
        if largest is not None:
            return largest
    predicted = _predicted_runs(records, count, keys_required)
    if predicted is not None:
        largest = _largest_if_held(records, predicted)
        if largest is not None:
            _keep_plan(key, count, predicted)
            return largest
    runs: Plan = []
    pos, end = 0, len(records)
    index = 0
    largest = _NO_DELTA
    while index < count:
        if pos >= end or index >= _OFFSET_DELTA_LIMITS[-1]:
            return None
        shape = _record_shape(records, pos, end)
        if shape is None:
            return None
        size, timestamp_width = shape
        # the width a minimal offset delta takes at this place
        delta_width = (
            1 if index < _OFFSET_DELTA_LIMITS[0] else 2 if index < _OFFSET_DELTA_LIMITS[1] else 3
        )
        known = _known_layouts.get((size, timestamp_width, delta_width, keys_required))
        if known is None:
            return None
        run, delta, columns = _run_length(
            records, pos, end, index, count - index, known, 1, keep=True
        )
        if not run:
            return None
        if delta > largest:
            largest = delta
        runs.append((pos, pos + run * size, known, columns))
        index += run
        pos += run * size
    if pos != end:
        return None
    _keep_plan(key, count, runs)
    return largest


def _record_shape(records: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """The size of the record at ``pos`` as its length varint gives it, and how many
    bytes its timestamp delta's varint takes (up to one past a run's widest); None
    if its length varint takes more than two bytes."""
    raw = records[pos]
    body = pos + 1
    if raw >= 0x80:
        if body >= end or records[body] >= 0x80:
            return None
        raw = (raw & 0x7F) | (records[body] << 7)
        body += 1
    last = body + 1  # the timestamp delta's last byte
    while last < end and records[last] >= 0x80 and last <= body + _MAX_RUN_TIMESTAMP_WIDTH:
        last += 1
    return body - pos + ((raw >> 1) ^ -(raw & 1)), last - body


def _keep_plan(key: tuple[int, int, bool], count: int, runs: Plan) -> None:
    if count <= _MAX_PLANNED_RECORDS:
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        _plans[key] = runs


def _largest_if_held(records: bytes, runs: Plan) -> int | None:
    """The largest timestamp delta of the records, if they are the runs ``runs`` says
    (:func:`_holds`); else None."""
    largest = _NO_DELTA
    for pos, stop, check, columns in runs:
        timestamps = _holds(records, pos, stop, check, columns)
        if timestamps is None:
            return None
        delta = _largest_delta(timestamps)
        if delta > largest:
            largest = delta
    return largest


def _predicted_runs(records: bytes, count: int, keys_required: bool) -> Plan | None:
    """The runs a batch's records would be in if they all had the first record's
    layout but for the widths of their deltas, as a producer's records mostly
    have: the offset deltas take a second byte from the 65th record on, and
    the timestamp deltas, growing, take one byte more than the first record's
    from some record on, which the batch's size tells. None if the batch's size
    cannot be so, or a layout is not known. A guess, to be checked
    (:func:`_largest_if_held`): a plan found without looking for where each run
    ends (:func:`_run_length`), for the many batches of sizes and counts not
    seen before that a producer sends to many partitions."""
    end = len(records)
    if not end or count > _OFFSET_DELTA_LIMITS[1]:
        return None
    shape = _record_shape(records, 0, end)
    if shape is None:
        return None
    first_size, first_width = shape
    one_byte = _OFFSET_DELTA_LIMITS[0]  # records from this one on have two-byte offset deltas
    wider = end - count * first_size - (count - one_byte if count > one_byte else 0)
    if not 0 <= wider < count:
        return None
    widened = count - wider  # the first record whose timestamp delta takes a byte more
    runs: Plan = []
    index = pos = 0
    while index < count:
        wide_timestamp = index >= widened
        wide_delta = index >= one_byte
        next_cut = count
        if not wide_delta and one_byte < next_cut:
            next_cut = one_byte
        if not wide_timestamp and widened < next_cut:
            next_cut = widened
        size = first_size + wide_timestamp + wide_delta
        check = _known_layouts.get(
            (size, first_width + wide_timestamp, 1 + wide_delta, keys_required)
        )
        if check is None:
            return None
        run = next_cut - index
        stop = pos + run * size
        runs.append((pos, stop, check, _columns(check, index, run, keep=True)))
        index, pos = next_cut, stop
    return runs


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
        largest = _known_records(records, count, keys_required)
        if largest is None or (span is not None and largest != span):
            _RecordWalk(count, keys_required, span).whole(records)
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
