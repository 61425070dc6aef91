"""A segment's sparse indexes: ``.index`` (offset → position) and ``.timeindex``.

Both are files of fixed-size big-endian entries sorted by their first field:

* ``.index``: relative offset (int32), position in the ``.log`` (int32);
* ``.timeindex``: timestamp (int64), relative offset (int32).

Offsets are stored relative to the segment's base offset. An entry is added
for every ``log.index.interval.bytes`` appended, so an index is a few bytes per
4 KiB of log. New entries are kept as tuples in a short list, packed and
written with one ``pwrite`` per group (and on flush, roll and close); the file
always holds whole entries only. Lookups bisect a read-only memory map of the
file, so the page cache holds the index, not the process. Once a segment
rolls its index files are closed, and a lookup maps the file for its own use:
old segments hold no file descriptors.
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

_WRITE_EVERY_ENTRIES = 64
_FIELDS = (itemgetter(0), itemgetter(1))


class CorruptIndexError(ValueError):
    pass


class IndexFile:
    """Fixed-size entries, searchable by their first field."""

    ENTRY = struct.Struct(">ii")

    __slots__ = (
        "_fd", "_file_entries", "_last", "_map", "_mapped_entries", "_pending",
        "base_offset", "entries", "full", "max_entries", "path",
    )  # fmt: skip

    def __init__(self, path: Path, base_offset: int, max_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        size = self.ENTRY.size
        self.max_entries = max(1, max_bytes // size)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        file_size = os.fstat(self._fd).st_size
        if file_size % size:
            os.close(self._fd)
            raise CorruptIndexError(f"{path} has {file_size} bytes, not a multiple of {size}")
        self._file_entries = self.entries = file_size // size
        self.full = self.entries >= self.max_entries
        self._pending: list[tuple[int, int]] = []  # not yet in the file
        self._map: mmap.mmap | None = None  # read-only, of the first _mapped_entries
        self._mapped_entries = 0
        self._last: tuple[int, int] | None = self.entry(self.entries - 1) if self.entries else None

    # entries

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return self._last

    def _refresh_map(self) -> mmap.mmap:
        """The live read-only map, remapped when the file has grown past it."""
        if self._map is None or self._mapped_entries < self._file_entries:
            if self._map is not None:
                self._map.close()
            self._map = mmap.mmap(
                self._fd, self._file_entries * self.ENTRY.size, access=mmap.ACCESS_READ
            )
            self._mapped_entries = self._file_entries
        return self._map

    @contextlib.contextmanager
    def _entries_view(self) -> Iterator[tuple[mmap.mmap | bytes, int, list[tuple[int, int]]]]:
        """(map of the file's entries, how many, pending entries) for one lookup."""
        if self._fd >= 0:
            mapped = self._refresh_map() if self._file_entries else b""
            yield mapped, self._file_entries, self._pending
            return
        if not self._file_entries:
            yield b"", 0, self._pending
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            own = mmap.mmap(fd, self._file_entries * self.ENTRY.size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)  # the map keeps its own reference to the file
        try:
            yield own, self._file_entries, self._pending
        finally:
            own.close()

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
        if self.full or self._fd < 0:
            raise CorruptIndexError(f"{self.path} is full or closed")
        pending = self._pending
        pending.append(entry)  # packed when written: this runs for most appends
        entries = self.entries = self.entries + 1
        self.full = entries >= self.max_entries
        self._last = entry
        if len(pending) >= _WRITE_EVERY_ENTRIES:
            self.write_pending()

    # files

    def write_pending(self) -> None:
        """Write buffered entries to the file (no fsync)."""
        if self._pending:
            data = b"".join(itertools.starmap(self.ENTRY.pack, self._pending))
            os.pwrite(self._fd, data, self._file_entries * self.ENTRY.size)
            self._file_entries = self.entries
            self._pending = []

    def sync(self) -> None:
        if self._fd >= 0:
            self.write_pending()
            os.fsync(self._fd)

    def close(self, *, sync: bool = False) -> None:
        """Write what is buffered (fsync it if asked) and let go of the file.

        Lookups still work afterwards, from a map made for each.
        """
        if self._fd < 0:
            return
        try:
            self.write_pending()
            if sync:
                os.fsync(self._fd)
        finally:
            if self._map is not None:
                self._map.close()
                self._map = None
            os.close(self._fd)
            self._fd = -1

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        if self._map is not None:
            self._map.close()
            self._map = None
            self._mapped_entries = 0
        os.ftruncate(self._fd, 0)
        self._pending = []
        self._file_entries = self.entries = 0
        self.full = False
        self._last = None

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
