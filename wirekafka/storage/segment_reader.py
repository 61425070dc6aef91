"""A segment's files read as they lie on disk, and checked against each other.

For tools that look at a partition's files offline (``wirekafka dump-log``).
Nothing here opens a file: the functions read bytes through the caller's
``read_at(position, size)`` (a file opened read-only, bytes in memory), so
they work on any copy of a log dir, Apache Kafka's too, and never change one.

* :func:`scan_log` walks a ``.log`` entry by entry: record batches (magic 2)
  and the top-level messages of message sets (magic 0 and 1), each with its
  stored CRC and whether it matches. Zeros past the last entry (the space an
  active segment is grown by ahead of its appends) end the walk quietly; any
  other byte that does not make an entry is a :class:`Problem`, after which
  the walk stops when the entries' sizes can no longer be trusted.
* :func:`records_of` decodes one entry's records (compressed ones inflated).
* :func:`read_index` reads ``.index`` or ``.timeindex`` entries, and
  :func:`check_offset_index` and :func:`check_time_index` hold them against
  the batches of the ``.log`` beside them (a :class:`LogLayout`).
"""

from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records.compression import (
    COMPRESSION_MASK,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
)
from wirekafka.protocol.records.message_set import (
    iter_message_set,
    message_crc_matches,
    read_message_head,
)
from wirekafka.protocol.records.record import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    Record,
    TimestampType,
    timestamp_type_of,
)
from wirekafka.protocol.records.record_batch import (
    HEADER_BYTES,
    MAGIC_OFFSET,
    BatchHeader,
    compute_crc,
    iter_records,
    read_batch_header,
)
from wirekafka.storage.index import OffsetIndex, TimeIndex

_ENTRY_START = struct.Struct(">qi")  # every format: offset, size of the rest
_ENTRY_SIZE = struct.Struct(">i")
DEFAULT_MAX_ENTRY_BYTES = 100 * 1024 * 1024
_ZERO_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong in a file: at a byte ``position``, or in index entry ``entry``."""

    message: str
    position: int | None = None
    entry: int | None = None


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record batch (magic 2), or one top-level message of a message set
    (magic 0/1: a compressed wrapper stands for the messages inside it).

    ``record_count`` is None for a compressed message that cannot be opened;
    ``timestamp_type`` is None for magic 0, which has no timestamps;
    ``header`` is the batch header of magic 2 (producer, sequence, leader
    epoch, transactional and control flags), None for magic 0/1.
    """

    position: int
    size_bytes: int
    magic: int
    base_offset: int
    last_offset: int
    record_count: int | None
    crc: int
    crc_valid: bool
    codec: int  # the attributes' low three bits (CompressionType when known)
    timestamp_type: TimestampType | None
    first_timestamp: int
    max_timestamp: int
    header: BatchHeader | None = None
    data: Buffer = field(default=b"", repr=False, compare=False)  # the entry's bytes

    @property
    def compression(self) -> CompressionType | None:
        """The codec, or None for bits no codec has."""
        try:
            return CompressionType(self.codec)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class LogEnd:
    """Where a scan stopped: ``valid_bytes`` of whole entries, then
    ``zero_bytes`` of zeros up to the end of the file (for a whole log; after a
    problem that stopped the scan, the bytes from ``valid_bytes`` on are unread)."""

    valid_bytes: int
    zero_bytes: int


ReadAt = Callable[[int, int], Buffer]
"""``read_at(position, size)``: the file's ``size`` bytes at ``position``
(fewer only where the file ends)."""


def scan_log(
    read_at: ReadAt, size: int, *, max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
) -> Iterator[LogEntry | Problem | LogEnd]:
    """The entries of a ``.log`` of ``size`` bytes and the problems among them,
    in file order; a :class:`LogEnd` comes last. Entries are read one at a
    time, none larger than ``max_entry_bytes``.

    A CRC that does not match, offsets that go back, a compressed message
    that cannot be opened: the entry is yielded, a problem after it, and the
    scan goes on (its size is sound). A header that cannot be read, a size
    that does not fit, an entry cut off by the end of the file: a problem, and
    the scan stops there. Zeros from an entry boundary to the end of the file
    end the scan with no problem.
    """
    position = 0
    next_offset: int | None = None
    while position < size:
        head = read_at(position, min(size - position, HEADER_BYTES))
        if not any(bytes(head[:LOG_OVERHEAD])):
            nonzero = _first_nonzero(read_at, position, size)
            if nonzero is None:
                yield LogEnd(position, size - position)
                return
            yield Problem(
                f"{nonzero - position} zero bytes, then data again at position {nonzero}: "
                "not an entry; the dump stops here",
                position,
            )
            break
        if len(head) <= MAGIC_OFFSET:
            yield Problem(
                f"{len(head)} bytes at the end of the file are too few for an entry", position
            )
            break
        entry_offset, entry_size = _ENTRY_START.unpack_from(head)
        try:
            entry, unreadable = _entry_at(read_at, position, head, max_entry_bytes)
        except ProtocolError as exc:
            yield Problem(
                f"entry at offset {entry_offset} (size {LOG_OVERHEAD + entry_size} bytes) "
                f"cannot be read: {exc}; the dump stops here",
                position,
            )
            break
        yield entry
        yield from _entry_problems(entry, next_offset)
        if unreadable is not None:
            yield Problem(
                f"compressed message at offset {entry.last_offset}: {unreadable}", position
            )
        next_offset = entry.last_offset + 1
        position += entry.size_bytes
    yield LogEnd(position, 0)


def _entry_at(
    read_at: ReadAt, position: int, head: Buffer, max_entry_bytes: int
) -> tuple[LogEntry, str | None]:
    """The entry whose first bytes are ``head``, and why the messages inside a
    compressed message cannot be read (None when they can)."""
    magic = head[MAGIC_OFFSET]
    if magic not in (0, 1, 2):
        raise ProtocolError(f"magic {magic} is not 0, 1 or 2")
    if magic == 2:  # its header checks its size before the entry is read
        read_batch_header(head, whole=False)
    (entry_size,) = _ENTRY_SIZE.unpack_from(head, 8)
    if LOG_OVERHEAD + entry_size > max_entry_bytes:
        raise ProtocolError(f"larger than the limit of {max_entry_bytes} bytes")
    data = read_at(position, LOG_OVERHEAD + max(entry_size, 0))
    if magic == 2:
        return _batch_entry(data, position), None
    return _message_entry(data, position)


def _first_nonzero(read_at: ReadAt, position: int, size: int) -> int | None:
    """Where the first byte that is not zero lies from ``position`` on, if any."""
    while position < size:
        chunk = bytes(read_at(position, min(size - position, _ZERO_CHUNK_BYTES)))
        if not chunk:
            return None  # the file got shorter meanwhile
        stripped = chunk.lstrip(b"\0")
        if stripped:
            return position + len(chunk) - len(stripped)
        position += len(chunk)
    return None


def _batch_entry(data: Buffer, position: int) -> LogEntry:
    """The batch whose bytes (from the file's ``position``) are ``data``."""
    header = read_batch_header(data, whole=False)
    if header.size_bytes > len(data):
        raise ProtocolError(
            f"batch of {header.size_bytes} bytes is cut off: the file ends {len(data)} bytes on"
        )
    return LogEntry(
        position=position,
        size_bytes=header.size_bytes,
        magic=2,
        base_offset=header.base_offset,
        last_offset=header.last_offset,
        record_count=header.record_count,
        crc=header.crc,
        crc_valid=compute_crc(data, 0, header.size_bytes) == header.crc,
        codec=header.attributes & COMPRESSION_MASK,
        timestamp_type=timestamp_type_of(header.attributes),
        first_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        header=header,
        data=data,
    )


def _message_entry(data: Buffer, position: int) -> tuple[LogEntry, str | None]:
    """The message whose bytes (from the file's ``position``) are ``data``, and
    why the messages inside it cannot be read when it is a compressed one."""
    head = read_message_head(data)
    codec = head.attributes & COMPRESSION_MASK
    base_offset = last_offset = head.offset
    record_count: int | None = 1
    first_timestamp = max_timestamp = head.timestamp
    unreadable = None
    if codec:  # a wrapper: what it stands for is inside
        try:
            messages = list(_legacy_messages(data))
        except ProtocolError as exc:
            messages, record_count, unreadable = [], None, str(exc)
        if messages:
            base_offset, last_offset = messages[0].offset, messages[-1].offset
            record_count = len(messages)
            first_timestamp = messages[0].timestamp
            max_timestamp = max(message.timestamp for message in messages)
    entry = LogEntry(
        position=position,
        size_bytes=head.size_bytes,
        magic=head.magic,
        base_offset=base_offset,
        last_offset=last_offset,
        record_count=record_count,
        crc=head.crc,
        crc_valid=message_crc_matches(data, 0, head),
        codec=codec,
        timestamp_type=timestamp_type_of(head.attributes) if head.magic == 1 else None,
        first_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        data=data,
    )
    return entry, unreadable


def _entry_problems(entry: LogEntry, next_offset: int | None) -> Iterator[Problem]:
    position = entry.position
    span = f"offsets {entry.base_offset}..{entry.last_offset}"
    if not entry.crc_valid:
        kind = "CRC32C" if entry.magic == 2 else "CRC32"
        yield Problem(f"{kind} mismatch in the entry at {span}: stored {entry.crc}", position)
    if entry.compression is None and entry.magic == 2:  # magic 0/1: it does not open
        yield Problem(f"unknown compression codec {entry.codec} at {span}", position)
    if entry.last_offset < entry.base_offset:
        yield Problem(f"last offset below the base offset at {span}", position)
    if next_offset is not None and entry.base_offset < next_offset:
        yield Problem(
            f"offsets go back: {span} after an entry ending at offset {next_offset - 1}", position
        )


def _legacy_messages(data: Buffer) -> Iterator[Record]:
    for message in iter_message_set(data, verify_crc=False):
        yield message.to_record()


def records_of(
    entry: LogEntry, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> Iterator[Record]:
    """The records of ``entry`` (compressed ones inflated, offsets absolute),
    one at a time; raises ProtocolError at the first that does not decode.

    A LogAppendTime batch's records carry the batch's time, as Kafka reads them.
    """
    if entry.header is None:
        yield from _legacy_messages(entry.data)
        return
    append_time = entry.timestamp_type == TimestampType.LOG_APPEND_TIME
    for record in iter_records(
        entry.data,
        header=entry.header,
        max_decompressed_bytes=max_decompressed_bytes,
    ):
        if append_time:
            record.timestamp = entry.max_timestamp
        yield record


CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_MARKER = struct.Struct(">hi")  # version, coordinator epoch


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """What a control batch's record says: its type, and for a transaction
    marker (COMMIT, ABORT) the coordinator's epoch (None when unreadable)."""

    type: str
    coordinator_epoch: int | None = None


def control_record(record: Record) -> ControlRecord:
    """The control record a control batch's record holds; raises ProtocolError
    when its key is not one."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise ProtocolError("control record key is shorter than 4 bytes")
    _, type_code = _CONTROL_KEY.unpack_from(key)
    name = CONTROL_TYPES.get(type_code, f"UNKNOWN({type_code})")
    if type_code not in (0, 1):
        return ControlRecord(name)
    value = record.value
    if value is None or len(value) < _END_TXN_MARKER.size:
        return ControlRecord(name)
    return ControlRecord(name, _END_TXN_MARKER.unpack_from(value)[1])


# indexes


@dataclass(slots=True)
class LogLayout:
    """Where a ``.log``'s entries lie: for checking the indexes beside it."""

    positions: array[int] = field(default_factory=lambda: array("q"))
    base_offsets: array[int] = field(default_factory=lambda: array("q"))
    last_offsets: array[int] = field(default_factory=lambda: array("q"))
    max_timestamps: array[int] = field(default_factory=lambda: array("q"))
    valid_bytes: int = 0  # where the last whole entry ends

    def add(self, entry: LogEntry) -> None:
        self.positions.append(entry.position)
        self.base_offsets.append(entry.base_offset)
        self.last_offsets.append(entry.last_offset)
        self.max_timestamps.append(entry.max_timestamp)
        self.valid_bytes = entry.position + entry.size_bytes

    @classmethod
    def of(cls, read_at: ReadAt, size: int) -> LogLayout:
        """The layout of a whole ``.log`` of ``size`` bytes."""
        layout = cls()
        for item in scan_log(read_at, size):
            if isinstance(item, LogEntry):
                layout.add(item)
        return layout

    @property
    def last_offset(self) -> int | None:
        return max(self.last_offsets) if self.last_offsets else None


@dataclass(frozen=True, slots=True)
class IndexEntries:
    """An index file's entries as stored (offsets relative to the base offset),
    the zeros that follow them, and what is wrong with the file's shape."""

    entries: list[tuple[int, int]]
    zero_bytes: int
    problems: list[Problem]


OFFSET_INDEX_ENTRY = OffsetIndex.ENTRY  # relative offset, position
TIME_INDEX_ENTRY = TimeIndex.ENTRY  # timestamp, relative offset


def read_index(data: Buffer, entry: struct.Struct) -> IndexEntries:
    """The entries of an index file of ``entry``-sized entries.

    Kafka grows an active segment's index files to their full size ahead of
    use: all-zero entries after the last other one (and after the first) are
    that space, not entries.
    """
    size = len(data)
    whole = size - size % entry.size
    problems = []
    if whole != size:
        problems.append(
            Problem(
                f"{size % entry.size} bytes after the last whole entry "
                f"(the file's size is not a multiple of {entry.size})",
                whole,
            )
        )
    entries = [entry.unpack_from(data, at) for at in range(0, whole, entry.size)]
    used = len(entries)
    while used > 1 and entries[used - 1] == (0, 0):
        used -= 1
    return IndexEntries(entries[:used], whole - used * entry.size, problems)


def sanity_problems(index: IndexEntries, *, time_index: bool) -> list[Problem]:
    """Kafka's sanity check of an index file, the one a broker makes when it
    opens a segment to decide whether to rebuild the index: the file holds
    whole entries; the last entry's offset is not below the base offset
    (relative offset >= 0); in a time index, the last timestamp is not below
    the first. Nothing is held against the log."""
    problems = list(index.problems)  # the file's size
    if not index.entries:
        return problems
    last = len(index.entries) - 1
    first_key, _ = index.entries[0]
    last_key, last_value = index.entries[last]
    relative = last_value if time_index else last_key
    if relative < 0:
        problems.append(
            Problem(
                f"the last entry's offset is below the base offset (relative offset {relative})",
                entry=last,
            )
        )
    if time_index and last_key < first_key:
        problems.append(
            Problem(
                f"the last timestamp {last_key} is below the first timestamp {first_key}",
                entry=last,
            )
        )
    return problems


def check_offset_index(
    entries: list[tuple[int, int]], base_offset: int, layout: LogLayout
) -> Iterator[Problem]:
    """What is wrong with ``.index`` entries, held against the ``.log``.

    An entry (offset, position) must point at an entry boundary of the log,
    whose entry starts at or below that offset; the entry holding the offset
    must lie between that position and the next index entry's. Offsets and
    positions must increase. (An append of several batches is indexed by its
    last offset at its first batch's position, so the batch at the position
    need not hold the offset itself, as Kafka's own check wants.)
    """
    positions, base_offsets, last_offsets = (
        layout.positions,
        layout.base_offsets,
        layout.last_offsets,
    )
    last_offset = layout.last_offset
    for number, (relative, position) in enumerate(entries):
        offset = base_offset + relative
        where = f"offset {offset} at position {position}"
        if number:
            before_relative, before_position = entries[number - 1]
            if relative <= before_relative:
                yield Problem(
                    f"{where}: offset not above the entry before it ({base_offset + before_relative})",
                    entry=number,
                )
            if position <= before_position:
                yield Problem(
                    f"{where}: position not above the entry before it ({before_position})",
                    entry=number,
                )
        at = bisect.bisect_left(positions, position)
        if at == len(positions) or positions[at] != position:
            if position >= layout.valid_bytes:
                yield Problem(
                    f"{where}: past the log's last entry, which ends at position {layout.valid_bytes}",
                    entry=number,
                )
            else:
                spanning = f" (the entry at position {positions[at - 1]} spans it)" if at else ""
                yield Problem(f"{where}: not an entry boundary{spanning}", entry=number)
            continue
        if base_offsets[at] > offset:
            yield Problem(
                f"{where}: the entry there starts at offset {base_offsets[at]}, above it",
                entry=number,
            )
            continue
        if last_offset is None or offset > last_offset:
            yield Problem(f"{where}: past the log's last offset {last_offset}", entry=number)
            continue
        holder = bisect.bisect_left(last_offsets, offset)
        if number + 1 < len(entries):
            next_position = entries[number + 1][1]
            if holder < len(positions) and positions[holder] >= next_position > position:
                yield Problem(
                    f"{where}: offset {offset} is at position {positions[holder]}, "
                    f"past the next entry's position {next_position}",
                    entry=number,
                )


def check_time_index(
    entries: list[tuple[int, int]], base_offset: int, layout: LogLayout
) -> Iterator[Problem]:
    """What is wrong with ``.timeindex`` entries, held against the ``.log``,
    as Kafka checks them: timestamps increase; each entry's offset is the last
    offset of an entry of the log, whose max timestamp is the entry's timestamp."""
    positions, last_offsets, max_timestamps = (
        layout.positions, layout.last_offsets, layout.max_timestamps
    )  # fmt: skip
    last_offset = layout.last_offset
    for number, (timestamp, relative) in enumerate(entries):
        offset = base_offset + relative
        where = f"timestamp {timestamp} at offset {offset}"
        if number:
            before_timestamp, before_relative = entries[number - 1]
            if timestamp <= before_timestamp:
                yield Problem(
                    f"{where}: timestamp not above the entry before it ({before_timestamp})",
                    entry=number,
                )
            if relative < before_relative:
                yield Problem(
                    f"{where}: offset below the entry before it ({base_offset + before_relative})",
                    entry=number,
                )
        if timestamp == NO_TIMESTAMP:
            yield Problem(f"{where}: no timestamp", entry=number)
            continue
        holder = bisect.bisect_left(last_offsets, offset)
        if last_offset is None or holder == len(last_offsets):
            yield Problem(f"{where}: past the log's last offset {last_offset}", entry=number)
        elif last_offsets[holder] != offset:
            yield Problem(
                f"{where}: not the last offset of an entry (the entry at position "
                f"{positions[holder]} ends at offset {last_offsets[holder]})",
                entry=number,
            )
        elif max_timestamps[holder] != timestamp:
            yield Problem(
                f"{where}: the entry ending at that offset (position {positions[holder]}) "
                f"has max timestamp {max_timestamps[holder]}",
                entry=number,
            )
