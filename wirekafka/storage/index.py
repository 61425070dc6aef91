"""A segment's sparse indexes: ``.index`` (offset → position) and ``.timeindex``.

Both are files of fixed-size big-endian entries sorted by their first field:

* ``.index``: relative offset (int32), position in the ``.log`` (int32);
* ``.timeindex``: timestamp (int64), relative offset (int32).

Offsets are stored relative to the segment's base offset. An entry is added
for every ``log.index.interval.bytes`` appended, so an index is a few bytes per
4 KiB of log. New entries are buffered and written in groups (and on flush,
roll and close); lookups bisect the entries with ``pread``, so no index is
held in memory and the page cache serves them. Once a segment rolls its
indexes are closed and each lookup opens the file for its own use, so old
segments hold no file descriptors.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path

_WRITE_EVERY_ENTRIES = 64


class CorruptIndexError(ValueError):
    pass


class IndexFile:
    """Fixed-size entries, searchable by their first field."""

    ENTRY = struct.Struct(">ii")

    __slots__ = ("_fd", "_file_entries", "_last", "_pending", "base_offset", "max_entries", "path")

    def __init__(self, path: Path, base_offset: int, max_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_bytes // self.ENTRY.size)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(self._fd).st_size
        self._file_entries = size // self.ENTRY.size
        if size % self.ENTRY.size:
            os.close(self._fd)
            raise CorruptIndexError(f"{path} has {size} bytes, not a multiple of {self.ENTRY.size}")
        self._pending = bytearray()
        self._last: tuple[int, int] | None = self.entry(self._file_entries - 1) if size else None

    # entries

    @property
    def entries(self) -> int:
        return self._file_entries + len(self._pending) // self.ENTRY.size

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return self._last

    @contextlib.contextmanager
    def _reading(self) -> Iterator[int]:
        if self._fd >= 0:
            yield self._fd
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            yield fd
        finally:
            os.close(fd)

    def _entry_at(self, fd: int, index: int) -> tuple[int, int]:
        size = self.ENTRY.size
        if index >= self._file_entries:
            offset = (index - self._file_entries) * size
            return self.ENTRY.unpack_from(self._pending, offset)
        data = os.pread(fd, size, index * size)
        if len(data) != size:
            raise CorruptIndexError(f"{self.path}: entry {index} is cut off")
        return self.ENTRY.unpack(data)

    def entry(self, index: int) -> tuple[int, int]:
        with self._reading() as fd:
            return self._entry_at(fd, index)

    def _floor(self, key: int, field: int) -> tuple[int, int] | None:
        """The last entry whose ``field`` is at most ``key``."""
        last = self._last
        if last is None or last[field] <= key:
            return last
        with self._reading() as fd:
            found = bisect.bisect_right(
                range(self.entries), key, key=lambda i: self._entry_at(fd, i)[field]
            )
            return self._entry_at(fd, found - 1) if found else None

    def _append(self, first: int, second: int) -> None:
        if self.is_full:
            raise CorruptIndexError(f"{self.path} is full ({self.max_entries} entries)")
        self._pending += self.ENTRY.pack(first, second)
        self._last = (first, second)
        if len(self._pending) >= _WRITE_EVERY_ENTRIES * self.ENTRY.size:
            self.write_pending()

    # files

    def write_pending(self) -> None:
        if self._pending:
            os.pwrite(self._fd, self._pending, self._file_entries * self.ENTRY.size)
            self._file_entries += len(self._pending) // self.ENTRY.size
            self._pending = bytearray()

    def sync(self) -> None:
        self.write_pending()
        os.fsync(self._fd)

    def close(self) -> None:
        """Write what is pending and let go of the file; lookups still work."""
        if self._fd >= 0:
            self.write_pending()
            os.close(self._fd)
            self._fd = -1

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._pending = bytearray()
        os.ftruncate(self._fd, 0)
        self._file_entries = 0
        self._last = None

    def truncate_entries(self, keep: int) -> None:
        """Keep only the first ``keep`` entries."""
        self.write_pending()
        if keep < self._file_entries:
            os.ftruncate(self._fd, keep * self.ENTRY.size)
            self._file_entries = keep
            self._last = self.entry(keep - 1) if keep else None

    def rename(self, path: Path) -> None:
        os.rename(self.path, path)
        self.path = path

    def check(self) -> None:
        """Kafka's sanity check: sorted ends, offsets not below the base."""
        if self.entries and self.entry(self.entries - 1)[0] < self.entry(0)[0]:
            raise CorruptIndexError(f"{self.path}: last entry sorts before the first")


class OffsetIndex(IndexFile):
    """Relative offset → position of a batch at or before that offset."""

    ENTRY = struct.Struct(">ii")
    __slots__ = ()

    def append(self, offset: int, position: int) -> None:
        self._append(offset - self.base_offset, position)

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
            self._append(timestamp, offset - self.base_offset)

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
