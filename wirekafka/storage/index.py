"""A segment's sparse indexes: ``.index`` (offset → position) and ``.timeindex``.

Both are files of fixed-size big-endian entries sorted by their first field:

* ``.index``: relative offset (int32), position in the ``.log`` (int32);
* ``.timeindex``: timestamp (int64), relative offset (int32).

Offsets are stored relative to the segment's base offset. An entry is added
for every ``log.index.interval.bytes`` appended, so an index is a few bytes per
4 KiB of log. New entries are kept as tuples in a short list, packed and
written per group of 64 (and on flush, roll and close) through a descriptor
opened for that write alone; the file always holds whole entries only.
Lookups bisect a read-only memory map of the file, so the page cache holds the
index, not the process. The map is the only descriptor an index keeps (an
mmap holds a duplicate of the one it was made from), and the broker's
:class:`~wirekafka.storage.file_cache.FileCache` decides how long it stays.

Lookups run under the partition's lock; entries are written to a rolled
segment's index by the background sync without it. The writer stores the
pending list before the count of entries in the file, and readers load the
count first, so a reader sees either state or one with some entries missing,
never one holding an entry twice or beyond the file: a missing entry only
makes a lookup start its scan earlier.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import mmap
import os
import struct
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

from wirekafka.storage.file_cache import NO_LIMIT, FileCache
from wirekafka.worker_threads import blocking

_WRITE_EVERY_ENTRIES = 64
_FIELDS = (itemgetter(0), itemgetter(1))


class CorruptIndexError(ValueError):
    pass


def _size_and_last(path: Path, entry_bytes: int) -> tuple[int, bytes]:
    """The file's size and its last entry's bytes; the file is created when missing."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        whole = size >= entry_bytes and not size % entry_bytes
        return size, os.pread(fd, entry_bytes, size - entry_bytes) if whole else b""
    finally:
        os.close(fd)


def _map_file(path: Path, length: int) -> mmap.mmap:
    fd = os.open(path, os.O_RDONLY)
    try:
        return mmap.mmap(fd, length, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)  # the map keeps its own duplicate


class IndexFile:
    """Fixed-size entries, searchable by their first field."""

    ENTRY = struct.Struct(">ii")

    __slots__ = (
        "_file_entries", "_files", "_last", "_map", "_mapped_entries", "_pending",
        "base_offset", "entries", "file_used", "full", "max_entries", "path",
    )  # fmt: skip

    def __init__(
        self, path: Path, base_offset: int, max_bytes: int, files: FileCache = NO_LIMIT
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        size = self.ENTRY.size
        self.max_entries = max(1, max_bytes // size)
        self._files = files
        self.file_used = False
        file_size, last = files.retrying(lambda: _size_and_last(path, size))
        if file_size % size:
            raise CorruptIndexError(f"{path} has {file_size} bytes, not a multiple of {size}")
        self._file_entries = self.entries = file_size // size
        self.full = self.entries >= self.max_entries
        self._pending: list[tuple[int, int]] = []  # not yet in the file
        self._map: mmap.mmap | None = None  # read-only, of the first _mapped_entries
        self._mapped_entries = 0
        self._last: tuple[int, int] | None = self.ENTRY.unpack(last) if last else None

    # the descriptor, as the file cache sees it

    def drop_file(self) -> object:
        held, self._map = self._map, None
        return held

    def release(self) -> None:
        """Let go of the map for good (the segment is closed or deleted)."""
        self._files.closed(self)

    # entries

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return self._last

    @contextlib.contextmanager
    def _entries_view(self) -> Iterator[tuple[mmap.mmap | bytes, int, list[tuple[int, int]]]]:
        """(map of the file's entries, how many, pending entries) for one lookup."""
        in_file = self._file_entries  # before the pending list: see the module's doc
        pending = self._pending
        if not in_file:
            yield b"", 0, pending
            return
        mapped = self._map
        if mapped is None or self._mapped_entries < in_file:
            path, length = self.path, in_file * self.ENTRY.size
            mapped = self._files.retrying(lambda: _map_file(path, length))
            self._map, self._mapped_entries = mapped, in_file
            self._files.opened(self)
        else:
            self.file_used = True
        yield mapped, in_file, pending  # the local reference keeps the map open meanwhile

    def entry(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self.entries:
            raise IndexError(index)
        with self._entries_view() as (mapped, in_file, pending):
            size = self.ENTRY.size
            if index >= in_file:
                return pending[index - in_file]
            return self.ENTRY.unpack_from(mapped, index * size)

    def _floor(self, key: int, field: int) -> tuple[int, int] | None:
        """The last entry whose ``field`` is at most ``key``."""
        last = self._last
        if last is None or last[field] <= key:
            return last
        unpack = self.ENTRY.unpack_from
        size = self.ENTRY.size
        with self._entries_view() as (mapped, in_file, pending):
            if pending and pending[0][field] <= key:
                return pending[bisect.bisect_right(pending, key, key=_FIELDS[field]) - 1]
            found = bisect.bisect_right(
                range(in_file), key, key=lambda i: unpack(mapped, i * size)[field]
            )
            return unpack(mapped, (found - 1) * size) if found else None

    def add(self, entry: tuple[int, int]) -> None:
        """Add an entry as stored (offsets relative); it must sort after the last."""
        if self.full:
            raise CorruptIndexError(f"{self.path} is full")
        pending = self._pending
        pending.append(entry)  # packed when written: this runs for most appends
        entries = self.entries = self.entries + 1
        self.full = entries >= self.max_entries
        self._last = entry
        if len(pending) >= _WRITE_EVERY_ENTRIES:
            # An append whose batch is written must not fail for its index: the
            # entries wait (lookups see them) and are tried again with the next
            # one, and on flush, roll and close, which report a lasting error.
            with contextlib.suppress(OSError):
                self.write_pending()

    # files

    def write_pending(self) -> None:
        """Write buffered entries to the file (no fsync)."""
        pending = self._pending
        if not pending:
            return
        data = b"".join(itertools.starmap(self.ENTRY.pack, pending))
        path = self.path
        fd = self._files.retrying(lambda: os.open(path, os.O_WRONLY))
        try:
            written = os.pwrite(fd, data, self._file_entries * self.ENTRY.size)
        finally:
            os.close(fd)
        if written != len(data):  # the file keeps whole entries only: nothing counts as written
            raise OSError(f"{path}: short write of {written} of {len(data)} bytes")
        self._pending = []  # first: see the module's doc
        self._file_entries += len(pending)

    @blocking
    def sync(self) -> None:
        """Write buffered entries and fsync the file, through a descriptor of its
        own: Linux reports a write-back error to the descriptors open when it
        happened and, until one of them has seen it, to those opened later."""
        self.write_pending()
        path = self.path
        fd = self._files.retrying(lambda: os.open(path, os.O_RDONLY))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.release()
        self._mapped_entries = 0
        os.truncate(self.path, 0)
        self._pending = []
        self._file_entries = self.entries = 0
        self.full = False
        self._last = None

    def count_below(self, key: int, field: int) -> int:
        """How many entries have ``field`` (0 or 1, both increase) below ``key``."""
        unpack = self.ENTRY.unpack_from
        size = self.ENTRY.size
        with self._entries_view() as (mapped, in_file, pending):
            found = bisect.bisect_left(
                range(in_file), key, key=lambda i: unpack(mapped, i * size)[field]
            )
            if found < in_file:
                return found
            return in_file + bisect.bisect_left(pending, key, key=_FIELDS[field])

    def keep_first(self, count: int) -> None:
        """Forget every entry after the first ``count`` (the log was truncated), in
        memory and under the partition's lock: lookups stop seeing them at once.
        The file keeps their bytes until :meth:`trim_file`; its map is dropped and
        made again, of the entries kept, at the next lookup."""
        if count >= self.entries:
            return
        in_file = self._file_entries
        if count >= in_file:
            self._pending = self._pending[: count - in_file]
        else:
            self._pending = []
            self._file_entries = count
            self.release()
            self._mapped_entries = 0
        self.entries = count
        self.full = count >= self.max_entries
        self._last = self.entry(count - 1) if count else None

    @blocking
    def trim_file(self) -> None:
        """Cut the file to the entries written and kept (after :meth:`keep_first`)."""
        path = self.path
        size = self._file_entries * self.ENTRY.size
        if os.stat(path).st_size > size:
            os.truncate(path, size)

    def rename(self, path: Path) -> None:
        os.rename(self.path, path)
        self.path = path

    def check(self) -> None:
        """Kafka's sanity checks, plus: the last two entries are in order."""
        if self.entries >= 2:
            first, before_last, last = (
                self.entry(0), self.entry(self.entries - 2), self.entry(self.entries - 1)
            )  # fmt: skip
            if last[0] < first[0] or last[0] <= before_last[0]:
                raise CorruptIndexError(f"{self.path}: entries are out of order")


class OffsetIndex(IndexFile):
    """Relative offset → position of a batch at or before that offset."""

    ENTRY = struct.Struct(">ii")
    __slots__ = ()

    def append(self, offset: int, position: int) -> None:
        self.add((offset - self.base_offset, position))

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``offset``, else the start."""
        found = self._floor(offset - self.base_offset, 0)
        if found is None:
            return self.base_offset, 0
        return self.base_offset + found[0], found[1]

    def lookup_position(self, position: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below ``position``."""
        found = self._floor(position, 1)
        if found is None:
            return self.base_offset, 0
        return self.base_offset + found[0], found[1]

    def check(self) -> None:
        super().check()
        if self.entries and self.entry(self.entries - 1)[0] < 0:
            raise CorruptIndexError(f"{self.path}: last offset is below the base offset")


class TimeIndex(IndexFile):
    """Timestamp → relative offset of the batch where that timestamp was reached."""

    ENTRY = struct.Struct(">qi")
    __slots__ = ()

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry when ``timestamp`` passes the last one (timestamps only grow)."""
        if self._last is None or timestamp > self._last[0]:
            self.add((timestamp, offset - self.base_offset))

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry at or below ``timestamp``, else (-1, base)."""
        found = self._floor(timestamp, 0)
        if found is None:
            return -1, self.base_offset
        return found[0], self.base_offset + found[1]

    @property
    def max_timestamp(self) -> int:
        return self._last[0] if self._last else -1

    def check(self) -> None:
        super().check()
        if self.entries and self.entry(self.entries - 1)[1] < 0:
            raise CorruptIndexError(f"{self.path}: last offset is below the base offset")
