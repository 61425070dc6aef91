"""One log segment: a ``.log`` of record batches as they went on the wire, and its indexes.

A segment knows nothing of topics. It appends bytes it is given, finds the
batch holding an offset (index lookup, then a header-by-header scan with
``pread``), finds batch boundaries for a byte budget, and can check itself
batch by batch after a crash (:meth:`LogSegment.recover`).
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import crc32c

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records.record_batch import (
    ATTRIBUTES_OFFSET,
    HEADER_BYTES,
    BatchHeader,
    read_batch_header,
)
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import NO_LIMIT, FileCache
from wirekafka.storage.files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_path,
)
from wirekafka.storage.index import OffsetIndex, TimeIndex
from wirekafka.storage.spans import OpenFile
from wirekafka.worker_threads import blocking

if TYPE_CHECKING:
    from wirekafka.storage.leader_epochs import LeaderEpochCache

RECENT_APPENDS = 64  # appends the active segment remembers the place of, at least


log = logging.getLogger("wirekafka.storage")

MAX_RELATIVE_OFFSET = 2**31 - 1
_SCAN_CHUNK_BYTES = 8 * 1024 * 1024
# The active segment's file is grown ahead of its appends in steps of this
# size (posix_fallocate) and trimmed on roll and close. Writing into blocks
# already allocated spares the filesystem its allocation work on every write:
# 16 KiB appends go ~15% faster on ext4 (tools/bench_storage.py). A crash
# leaves a zero-filled tail, which recovery cuts like any torn tail.
PREALLOCATE_STEP_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RecoveryScan:
    """What checking a segment found: where the good batches end, and why."""

    next_offset: int
    good_end: int
    bad_bytes: int
    problem: str


@dataclass(frozen=True, slots=True)
class BatchPosition:
    position: int
    header: BatchHeader


def header_at(path: Path, fd: int, position: int) -> BatchHeader:
    """The header of the batch at ``position`` in ``path``'s open ``fd``; an OSError
    caused by a ProtocolError where the bytes there are not one."""
    data = os.pread(fd, HEADER_BYTES, position)
    try:
        return read_batch_header(data, whole=False)
    except ProtocolError as exc:
        raise OSError(f"{path}: bad batch header at {position}: {exc}") from exc


class LogSegment:
    """A ``<base offset>.log`` with its ``.index`` and ``.timeindex``.

    The ``.log`` is opened when first used (read/write while the segment is
    active, read-only after) and kept open until the file cache makes it let
    go; the next use opens it again. Spans handed out hold the file they were
    read from, so a ``sendfile`` finishes on the right file whatever the cache
    does meanwhile.
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        created_ms: int = -1,
        files: FileCache = NO_LIMIT,
        *,
        file_suffix: str = "",
    ) -> None:
        """``file_suffix``: the segment's files carry it after their own suffix
        (``.cleaned``: a compacted copy being prepared, see
        :meth:`replace_file_suffix`)."""
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX + file_suffix)
        self._files = files
        self.file_used = False
        self._file: OpenFile | None = None
        self._writable = True  # until close_for_writing
        self._deleted = False
        created: OpenFile | None = None
        try:
            self.size = os.stat(self.log_path).st_size
        except FileNotFoundError:  # a new segment: its file is created, and kept for appends
            path = self.log_path
            created = files.retrying(lambda: OpenFile(path, os.O_RDWR | os.O_CREAT))
            self.size = 0
        self._allocated_end = self.size  # the file's size: past self.size it is zeros
        self.offset_index = OffsetIndex(
            segment_path(directory, base_offset, INDEX_SUFFIX + file_suffix),
            base_offset,
            config.index_max_bytes,
            files,
        )
        self.time_index = TimeIndex(
            segment_path(directory, base_offset, TIME_INDEX_SUFFIX + file_suffix),
            base_offset,
            config.index_max_bytes,
            files,
        )
        self.bytes_since_index_entry = 0
        # The last offset and the position of each of the latest appends (at least
        # RECENT_APPENDS) of the active segment since it opened or was last cut:
        # where a consumer reading along fetches, found without reading headers
        # from the index entry on.
        self._recent_last_offsets = array("q")
        self._recent_positions = array("q")
        # its limits are copied for should_roll; a topic's new config changes them
        # (set_limits) while the segment is active, its index sizes never
        self._segment_bytes = config.segment_bytes
        self._roll_ms = config.max_segment_ms
        self._max_last_offset = base_offset + MAX_RELATIVE_OFFSET
        self._index_interval_bytes = config.index_interval_bytes
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.lookup(2**63 - 1)
        self.rolling_timestamp: int | None = None  # max timestamp of the first batch
        self.created_ms = created_ms  # when this process created or opened the segment
        if created is not None:  # counted once the indexes exist: a failure above drops it
            self._file = created
            files.opened(self)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, {self.size} bytes)"

    # files

    def open_file(self) -> OpenFile:
        """The segment's file, open for reading (and for writing while active)."""
        handle = self._file
        if handle is None:
            return self._reopen()
        self.file_used = True
        return handle

    def _reopen(self) -> OpenFile:
        path, flags = self.log_path, os.O_RDWR if self._writable else os.O_RDONLY
        handle = self._files.retrying(lambda: OpenFile(path, flags))
        self._file = handle  # stored before it is counted: see FileCache
        self._files.opened(self)
        return handle

    def drop_file(self) -> object:
        held, self._file = self._file, None
        return held

    def release_files(self) -> None:
        """Let go of every descriptor the segment keeps (it is closed or deleted);
        spans still holding the file keep it open until they go."""
        self._files.closed(self)
        self.offset_index.release()
        self.time_index.release()

    @blocking
    def sync_log(self, handle: OpenFile | None = None) -> None:
        """fsync the ``.log``, through whichever descriptor is open now: Linux reports
        a write-back error to the descriptors open when it happened and, until one
        of them has seen it, to those opened later, so a file the cache closed and
        opened again since the writes still has its errors reported."""
        handle = handle or self.open_file()
        os.fsync(handle.fd)

    @blocking
    def sync_indexes(self) -> None:
        self.offset_index.sync()
        self.time_index.sync()

    def close_for_writing(self) -> None:
        """Make the segment read-only (on roll and close): its last time-index
        entry goes in and the zeros preallocated past its last batch are cut
        (by name, so no descriptor is needed), at once, because recovery
        after a crash takes zeros for the end of the log. Nothing here fails:
        a cut that does not happen, and the buffered index entries, are left
        to :meth:`write_closed`, which a roll leaves to the background so
        appends are not held up."""
        if not self._writable:
            return
        # A full time index has already rolled the segment, so this entry fits.
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        with contextlib.suppress(OSError):
            self.trim_preallocated()
        self._writable = False
        self._forget_recent_appends()  # a consumer past it reads the next segment

    def trim_preallocated(self) -> None:
        """Cut the zeros preallocated past the last batch (by name: no descriptor needed)."""
        if self._allocated_end > self.size:
            os.truncate(self.log_path, self.size)
            self._allocated_end = self.size

    @blocking
    def write_closed(self) -> None:
        """Finish a segment closed for writing: cut the zeros preallocated past
        its last batch and write the buffered index entries. A failure (a full
        disk, no descriptor) loses nothing: the call can be made again. A
        segment deleted meanwhile (retention, compaction) is passed over."""
        try:
            self.trim_preallocated()
            self.offset_index.write_pending()
            self.time_index.write_pending()
        except FileNotFoundError:
            if not self._deleted:
                raise

    @blocking
    def sync_closed(self) -> None:
        """fsync the three files of a segment written out by :meth:`write_closed`
        (passed over once deleted)."""
        try:
            self.sync_log()
            self.sync_indexes()
        except FileNotFoundError:
            if not self._deleted:
                raise

    def rename_files(self, suffix: str) -> list[Path]:
        """Rename the three files (e.g. to ``.deleted``); return their new paths."""
        return self.replace_file_suffix("", suffix)

    def replace_file_suffix(self, old: str, new: str) -> list[Path]:
        """Rename the three files from ending in ``old`` to ending in ``new``
        (``.cleaned`` to ``.swap`` to none, as a compacted copy takes its
        place); return their new paths. Only names change: descriptors and
        maps already open stay good."""
        self.release_files()
        renamed = []
        for index in (self.offset_index, self.time_index):
            path = index.path.with_name(index.path.name.removesuffix(old) + new)
            index.rename(path)
            renamed.append(path)
        new_log = self.log_path.with_name(self.log_path.name.removesuffix(old) + new)
        os.rename(self.log_path, new_log)
        self.log_path = new_log
        return [new_log, *renamed]

    def mark_deleted(self) -> list[Path]:
        self._deleted = True
        self._writable = False
        return self.rename_files(DELETED_SUFFIX)

    # appends

    def append(
        self,
        data: Buffer,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
    ) -> None:
        """Write batches whose offsets are already assigned, and index them.

        On a write error the file is cut back to where it was, so what was
        already written stays as it was; the error propagates.
        """
        position = self.size
        size = len(data)
        fd = self._write_fd(position + size)
        try:
            written = os.pwrite(fd, data, position)
            if written < size:  # short write: go on from where it stopped
                self._write_rest(fd, [data], written, position)
        except OSError:
            self._undo_write(fd, position)
            raise
        self._appended(position, size, last_offset, max_timestamp, offset_of_max_timestamp)
        self.size = position + size

    def append_many(self, datas: Sequence[Buffer], appends: Sequence[tuple[int, int, int]]) -> None:
        """Write the batches of several appends with one ``pwritev``, each indexed as
        :meth:`append` would index it: ``appends`` holds each one's last offset, max
        timestamp and the offset of that timestamp. All of them are written or, on
        a write error (which propagates), none."""
        position = start = self.size
        size = sum(len(data) for data in datas)
        fd = self._write_fd(position + size)
        try:
            written = os.pwritev(fd, datas, position)
            if written < size:
                self._write_rest(fd, datas, written, position)
        except OSError:
            self._undo_write(fd, start)
            raise
        appended = self._appended
        for data, (last_offset, max_timestamp, offset_of_max) in zip(datas, appends, strict=True):
            data_size = len(data)
            appended(position, data_size, last_offset, max_timestamp, offset_of_max)
            position += data_size
        self.size = position

    def _write_fd(self, end: int) -> int:
        """The descriptor to append with, its file grown to hold ``end`` bytes."""
        assert self._writable, "append to a closed segment"
        writer = self._file
        if writer is None:
            writer = self._reopen()  # after the file cache took it: nothing is written yet
        else:
            self.file_used = True
        fd = writer.fd
        if end > self._allocated_end:
            self._preallocate(fd, end)
        return fd

    @staticmethod
    def _write_rest(fd: int, datas: Sequence[Buffer], written: int, position: int) -> None:
        """Finish a write of ``datas`` from ``position`` that stopped after ``written`` bytes."""
        views = [memoryview(data) for data in datas]
        while True:
            while views and written >= views[0].nbytes:
                written -= views[0].nbytes
                position += views.pop(0).nbytes
            if not views:
                return
            if written:
                views[0] = views[0][written:]
                position += written
            written = os.pwritev(fd, views, position)

    def _undo_write(self, fd: int, position: int) -> None:
        with contextlib.suppress(OSError):  # is_intact() tells whether this worked
            os.ftruncate(fd, position)
            self._allocated_end = position

    def _appended(
        self, position: int, size: int, last_offset: int, max_timestamp: int, offset_of_max: int
    ) -> None:
        """Index the batches of ``size`` bytes just written at ``position``."""
        if self.rolling_timestamp is None:
            self.rolling_timestamp = max_timestamp
        self._track(position, size, last_offset, max_timestamp, offset_of_max)
        last_offsets, positions = self._recent_last_offsets, self._recent_positions
        last_offsets.append(last_offset)
        positions.append(position)
        if len(last_offsets) > 2 * RECENT_APPENDS:
            del last_offsets[:RECENT_APPENDS], positions[:RECENT_APPENDS]

    def _preallocate(self, fd: int, end: int) -> None:
        """Grow the file to hold ``end`` bytes and the next step, never past
        ``segment.bytes`` unless one batch is larger. A failure (disk full, a
        filesystem without fallocate) is left for the write to meet."""
        target = max(end, min(self.size + PREALLOCATE_STEP_BYTES, self.config.segment_bytes))
        try:
            os.posix_fallocate(fd, self._allocated_end, target - self._allocated_end)
            self._allocated_end = target
        except OSError:
            with contextlib.suppress(OSError):
                self._allocated_end = max(os.fstat(fd).st_size, self.size)

    def is_intact(self) -> bool:
        """Whether the file holds exactly the bytes appended so far (after a failed write)."""
        try:
            return os.stat(self.log_path).st_size == self.size
        except OSError:
            return False

    def _track(
        self, position: int, size: int, last_offset: int, max_timestamp: int, offset_of_max: int
    ) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = offset_of_max
        if self.bytes_since_index_entry > self._index_interval_bytes:
            self.offset_index.add((last_offset - self.base_offset, position))
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index_entry = size
        else:
            self.bytes_since_index_entry += size

    def should_roll(
        self, size: int, last_offset: int, max_timestamp: int, clock: Callable[[], int]
    ) -> bool:
        """Whether an append of ``size`` bytes ending at ``last_offset`` needs a new segment.

        It does when this one would pass ``log.segment.bytes``, when its
        indexes are full or its relative offsets would overflow, or when it
        has been open for ``log.roll.ms`` (on a compacted topic, at most
        ``max.compaction.lag.ms``). Kafka measures that age in record
        time, from the first batch's max timestamp to the incoming one's, so
        old data replayed into a topic does not roll a segment per batch;
        without record timestamps it falls back to the wall clock since the
        segment was created. This runs on every append, hence no helpers.
        """
        position = self.size
        if not position:
            return False
        rolling = self.rolling_timestamp
        if rolling is not None and rolling >= 0:
            waited = max_timestamp - rolling
        else:
            waited = clock() - self.created_ms
        return (
            position + size > self._segment_bytes
            or waited >= self._roll_ms
            or last_offset > self._max_last_offset
            or self.offset_index.full
            or self.time_index.full
        )

    def set_limits(self, config: LogConfig) -> None:
        """Roll and index by a topic's changed config from now on (the index files
        keep the size they were made with)."""
        self.config = config
        self._segment_bytes = config.segment_bytes
        self._roll_ms = config.max_segment_ms
        self._index_interval_bytes = config.index_interval_bytes

    def load_running_state(self) -> int:
        """Bring the running state appends keep (first and max timestamps, bytes
        since the last index entry) up to the segment's end, from its indexes
        and the batches after their last entry (headers only); return the
        offset after its last batch (its base offset when it is empty)."""
        if not self.size:
            return self.base_offset
        handle = self.open_file()
        self.rolling_timestamp = self._header_at(handle.fd, 0).max_timestamp
        _, position = self.offset_index.lookup(2**63 - 1)
        next_offset = self.base_offset
        self.bytes_since_index_entry = 0
        for batch in self.batches_from(position):
            header = batch.header
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            self.bytes_since_index_entry += header.size_bytes
            next_offset = header.next_offset
        return next_offset

    def _forget_recent_appends(self) -> None:
        del self._recent_last_offsets[:], self._recent_positions[:]

    def cut(self, position: int, end_offset: int) -> None:
        """Forget the batches from ``position`` on (a batch boundary; ``end_offset``
        is at or below the first offset they hold), and take appends again: the
        segment becomes the active one. Runs under the partition's lock and
        touches memory only, except for header reads: the index entries past
        the cut go from lookups, the running state is rebuilt from what stays.
        The files keep the bytes until :meth:`trim_files` cuts them."""
        self.size = position
        self._forget_recent_appends()
        self.offset_index.keep_first(self.offset_index.count_below(position, 1))
        self.time_index.keep_first(self.time_index.count_below(end_offset - self.base_offset, 1))
        if not self._writable:  # its descriptor is read-only: the next use opens it read-write
            self._files.closed(self)
            self._writable = True
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.lookup(2**63 - 1)
        self.rolling_timestamp = None
        self.bytes_since_index_entry = 0
        self.load_running_state()

    @blocking
    def trim_files(self) -> None:
        """Cut the ``.log`` and both indexes to what :meth:`cut` kept."""
        os.truncate(self.log_path, self.size)
        self._allocated_end = self.size
        self.offset_index.trim_file()
        self.time_index.trim_file()

    # times, as the cleaner asks for them

    def first_batch_timestamp(self) -> int:
        """The max timestamp of the first batch (-1 when empty or without one)."""
        if self.rolling_timestamp is None:
            if not self.size:
                return -1
            handle = self.open_file()
            self.rolling_timestamp = self._header_at(handle.fd, 0).max_timestamp
        return self.rolling_timestamp

    def largest_timestamp_ms(self) -> int:
        """The largest record timestamp, or without any the file's last change (as Kafka)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    # reads

    def _header_at(self, fd: int, position: int) -> BatchHeader:
        return header_at(self.log_path, fd, position)

    def batches_from(self, position: int, end: int | None = None) -> Iterator[BatchPosition]:
        """Batch headers from ``position`` (a batch start) up to ``end``."""
        end = self.size if end is None else end
        handle = self.open_file()  # held while iterating: it owns the descriptor
        while position < end:
            header = self._header_at(handle.fd, position)
            yield BatchPosition(position, header)
            position += header.size_bytes

    def find_batch(self, offset: int, start_position: int = 0) -> BatchPosition | None:
        """The first batch whose last offset is at least ``offset``, or None.

        An offset past the first of the recent appends is found among them (the
        append that holds it starts at a batch boundary at or before its batch,
        and each append ends where the next begins); others from the offset index
        on, reading batch headers."""
        last_offsets = self._recent_last_offsets
        if last_offsets and last_offsets[0] < offset:
            found = bisect.bisect_left(last_offsets, offset)
            if found == len(last_offsets):
                return None  # past the last append: past the segment's data
            position = self._recent_positions[found]
        else:
            _, position = self.offset_index.lookup(offset)
        for batch in self.batches_from(max(position, start_position)):
            if batch.header.last_offset >= offset:
                return batch
        return None

    def boundary_at_or_below(self, limit: int, start_position: int) -> int:
        """The last batch boundary at or below ``limit``, not before ``start_position``.

        The headers are read from the last boundary known below ``limit``: the
        start of the last recent append there (see :meth:`find_batch`), else the
        offset index's entry."""
        positions = self._recent_positions
        if positions and positions[0] <= limit:
            known = positions[bisect.bisect_right(positions, limit) - 1]
        else:
            known = self.offset_index.lookup_position(limit)[1]
        position = max(known, start_position)
        for batch in self.batches_from(position, limit):
            next_position = batch.position + batch.header.size_bytes
            if next_position > limit:
                break
            position = next_position
        return position

    def read_batch(self, batch: BatchPosition) -> bytes:
        handle = self.open_file()
        return os.pread(handle.fd, batch.header.size_bytes, batch.position)

    # recovery

    @blocking
    def recover(self, expected_offset: int) -> tuple[int, int]:
        """Check every batch, rebuild the indexes and cut the file at the first bad byte.

        Returns the next offset after the last good batch and the bytes cut off.
        """
        scan = self.check_batches(expected_offset)
        self.truncate(scan)
        return scan.next_offset, scan.bad_bytes

    @blocking
    def check_batches(
        self, expected_offset: int, leader_epochs: LeaderEpochCache | None = None
    ) -> RecoveryScan:
        """Check every batch and rebuild the indexes from the good ones; cut nothing.

        A batch is good when its header is sound (size, magic 2), its CRC32C
        matches and its offsets follow the previous batch's. The leader epochs
        of good batches are assigned into ``leader_epochs`` when given.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.bytes_since_index_entry = 0
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.rolling_timestamp = None
        next_offset = max(expected_offset, self.base_offset)
        good_end = 0
        problem = "torn tail"
        for position, header, issue in self._verified_batches(next_offset):
            if issue is not None:
                problem = issue
                break
            if self.rolling_timestamp is None:
                self.rolling_timestamp = header.max_timestamp
            size = header.size_bytes
            self._track(
                position, size, header.last_offset, header.max_timestamp, header.last_offset
            )
            next_offset = header.next_offset
            good_end = position + size
            if leader_epochs is not None:
                leader_epochs.assign(header.partition_leader_epoch, header.base_offset)
        return RecoveryScan(next_offset, good_end, self.size - good_end, problem)

    @blocking
    def truncate(self, scan: RecoveryScan) -> None:
        """Cut the file after the last good batch a scan found, and say so in the log."""
        if not scan.bad_bytes:
            return
        log.warning(
            "%s: truncated %d bytes at position %d (%s); the log now ends at offset %d",
            self.log_path, scan.bad_bytes, scan.good_end, scan.problem, scan.next_offset,
        )  # fmt: skip
        os.truncate(self.log_path, scan.good_end)
        self.size = self._allocated_end = scan.good_end
        self._forget_recent_appends()

    def _verified_batches(self, next_offset: int) -> Iterator[tuple[int, BatchHeader, str | None]]:
        """(position, header, problem) for each batch; the first problem ends it."""
        chunks = _ChunkReader(self.open_file(), self.size)
        position = 0
        while position < self.size:
            head = chunks.get(position, HEADER_BYTES)
            if head is None:
                yield position, _EMPTY_HEADER, "a batch header is cut off"
                return
            try:
                header = read_batch_header(head, whole=False)
            except ProtocolError as exc:
                unwritten = not any(head)  # space preallocated (or zeroed by the disk)
                yield position, _EMPTY_HEADER, "zeros, never written" if unwritten else str(exc)
                return
            batch = chunks.get(position, header.size_bytes)
            if batch is None:
                yield position, header, "a batch is cut off"
                return
            if crc32c.crc32c(batch[ATTRIBUTES_OFFSET:]) != header.crc:
                yield position, header, "CRC mismatch"
                return
            if header.base_offset < next_offset or header.last_offset < header.base_offset:
                yield position, header, f"offset {header.base_offset} out of order"
                return
            if header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                yield position, header, "offset beyond the segment's range"
                return
            yield position, header, None
            next_offset = header.next_offset
            position += header.size_bytes

    @blocking
    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from the ``.log`` (which is trusted as it is)."""
        self.recover(self.base_offset)

    def check_indexes(self) -> bool:
        """Kafka's sanity checks, plus: index entries point inside the log."""
        try:
            self.offset_index.check()
            self.time_index.check()
        except ValueError:
            return False
        last = self.offset_index.last_entry
        return last is None or last[1] < self.size


_EMPTY_HEADER = BatchHeader(-1, 0, -1, 2, 0, 0, 0, -1, -1, -1, -1, -1, 0)


class _ChunkReader:
    """Reads a file front to back in large chunks, handing out views of exact size."""

    def __init__(self, handle: OpenFile, size: int) -> None:
        self._handle = handle
        self._size = size
        self._buf = memoryview(b"")
        self._start = 0

    def get(self, position: int, size: int) -> memoryview | None:
        """``size`` bytes at ``position``, or None when the file ends first."""
        if position + size > self._size:
            return None
        local = position - self._start
        if local < 0 or local + size > len(self._buf):
            self._buf = memoryview(
                os.pread(self._handle.fd, max(size, _SCAN_CHUNK_BYTES), position)
            )
            self._start = position
            local = 0
            if len(self._buf) < size:
                return None
        return self._buf[local : local + size]
