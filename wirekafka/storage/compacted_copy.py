"""The reading and writing of a compaction pass, from the partition's files alone.

The cleaner (:mod:`wirekafka.storage.cleaner`) decides what a pass covers and
swaps the result in; in between, this module reads the segments, finds each
key's latest offset and writes the compacted copies, each made whole (indexes
rebuilt, the three files fsynced and named ``.swap``) before anything of the
log changes. It needs no broker state, only a :class:`CompactionJob` naming the
partition directory and its segments, so it can run in a process of its own
(:mod:`wirekafka.storage.cleaner_process`): parsing every record of a log is
Python holding the GIL for the whole pass, which in the broker's process would
keep the event loop waiting behind it.

Segments are read by name, read-only, up to the ends the job gives (the active
one is appended to meanwhile). One that has left the log since the job was made
(retention) ends the pass without a copy: the swap would be refused anyway.
What a pass meets is reported in its :class:`CompactionOutcome`, for the cleaner
to log through the partition's log: batches whose records cannot be parsed
(kept as they are, superseding nothing), and a batch header that cannot be read
or a batch failing its CRC, which ends the pass there (copies already made stay
good). A failed write (a full disk) removes the copy being made and ends the
pass with the error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    NO_PRODUCER_ID,
    BatchHeader,
    crc_matches,
    decode_batch,
    encode_batch,
    encode_empty_batch,
)
from wirekafka.storage.config import LogConfig
from wirekafka.storage.files import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    fsync_dir,
    segment_path,
    write_synced,
)
from wirekafka.storage.loader import is_unreadable_header
from wirekafka.storage.segment import MAX_RELATIVE_OFFSET, LogSegment, header_at
from wirekafka.worker_threads import blocking

COPY_SYNC_BYTES = 4 * 1024 * 1024  # a copy is synced as it is written, this much at a time


@dataclass(frozen=True, slots=True)
class Horizons:
    """Times before which a tombstone, and a producer's last (emptied) batch, may go."""

    tombstones_ms: int  # now - delete.retention.ms
    producers_ms: int  # now - producer.id.expiration.ms: the producer is forgotten


@dataclass(frozen=True, slots=True)
class CompactionJob:
    """One pass over a log: everything the reading and writing need, picklable."""

    directory: Path
    segments: tuple[tuple[int, int], ...]  # (base offset, bytes to read); the active one last
    first_dirty: int  # index of the first dirty segment: keys are read from it on
    end: int  # index of the first segment the pass leaves alone: those before are cleaned
    horizons: Horizons
    config: LogConfig  # the copies' segment.bytes and index sizes


@dataclass(frozen=True, slots=True)
class PreparedCopy:
    """A compacted copy of consecutive segments, whole under ``.swap`` names."""

    bases: tuple[int, ...]  # base offsets of the segments it replaces; its own is the first
    records_removed: int
    bytes_before: int
    bytes_after: int


@dataclass(slots=True)
class CompactionOutcome:
    """What a pass made and met."""

    copies: list[PreparedCopy] = field(default_factory=list)
    unparsable: list[tuple[BatchHeader, str]] = field(default_factory=list)  # batches kept as is
    unreadable: tuple[int, str] | None = None  # (segment base offset, problem): stopped there
    gone: bool = False  # a segment left the log meanwhile: stopped
    failure: OSError | None = None  # writing a copy failed: stopped


class _Stop(Exception):
    """The pass ends here (its reason is in the outcome)."""


@dataclass(slots=True)
class _Latest:
    """What the dirty part and the active segment say is latest."""

    offsets: dict[bytes, int] = field(default_factory=dict)  # key -> its last offset
    producers: dict[int, int] = field(default_factory=dict)  # producer id -> its last offset

    def supersedes(self, key: bytes, offset: int) -> bool:
        """Whether a later record has ``key``; a key the dirty part lacks was
        last written in the clean part, so its record there stays."""
        return self.offsets.get(key, offset) != offset

    def is_producers_last(self, header: BatchHeader) -> bool:
        """Whether this is its producer's last batch (idempotent producers only)."""
        if header.producer_id == NO_PRODUCER_ID:
            return False
        return self.producers.get(header.producer_id, header.last_offset) == header.last_offset


class _Pass:
    """A job being done; ``still_wanted`` is asked before each copy takes its
    ``.swap`` name (a child process whose broker died stops there)."""

    def __init__(self, job: CompactionJob, still_wanted: Callable[[], bool]) -> None:
        self.job = job
        self.still_wanted = still_wanted
        self.outcome = CompactionOutcome()

    # reading

    def batches(self, index: int) -> Iterator[tuple[BatchHeader, bytes]]:
        """The headers and bytes of segment ``index``'s batches, up to its end in the job."""
        base, end = self.job.segments[index]
        path = segment_path(self.job.directory, base, LOG_SUFFIX)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            self.outcome.gone = True
            raise _Stop from None
        try:
            position = 0
            while position < end:
                try:
                    header = header_at(path, fd, position)
                except OSError as exc:
                    if not is_unreadable_header(exc):
                        raise
                    self._unreadable(base, str(exc))
                raw = os.pread(fd, header.size_bytes, position)
                if not header.is_control and not crc_matches(raw, 0, header):
                    self._unreadable(
                        base, f"the batch at offset {header.base_offset} fails its CRC"
                    )
                yield header, raw
                position += header.size_bytes
        finally:
            os.close(fd)

    def _unreadable(self, base: int, problem: str) -> None:
        self.outcome.unreadable = (base, problem)
        raise _Stop

    def records(self, header: BatchHeader, raw: bytes) -> list[Record] | None:
        """The batch's records, or None when they cannot be parsed (then reported)."""
        try:
            return decode_batch(raw, verify_crc=False).records
        except ProtocolError as exc:
            self.outcome.unparsable.append((header, str(exc)))
            return None

    def latest(self) -> _Latest:
        """Each key's and producer's last offset from the first dirty segment on."""
        latest = _Latest()
        for index in range(self.job.first_dirty, len(self.job.segments)):
            for header, raw in self.batches(index):
                if header.producer_id != NO_PRODUCER_ID:
                    latest.producers[header.producer_id] = header.last_offset
                if header.is_control:
                    continue
                for record in self.records(header, raw) or ():
                    if record.key is not None:
                        latest.offsets[record.key] = record.offset
        return latest

    # cleaning

    def cleaned(self, index: int, latest: _Latest) -> _Cleaned:
        """Segment ``index``'s batches after cleaning.

        A producer's last batch stays, empty if need be, so that its sequence
        numbers outlive the records (as Kafka's cleaner keeps them), until the
        producer would be forgotten anyway: its last batch older than
        ``producer.id.expiration.ms``."""
        horizons = self.job.horizons
        kept: list[bytes] = []
        removed = dropped_empty = 0
        for header, raw in self.batches(index):
            if header.is_control:
                kept.append(raw)
                continue
            records = self.records(header, raw)
            if records is None:  # unparsable: kept as it is
                kept.append(raw)
                continue
            retained = [
                record
                for record in records
                if record.key is not None
                and not latest.supersedes(record.key, record.offset)
                and not (record.value is None and header.max_timestamp < horizons.tombstones_ms)
            ]
            removed += len(records) - len(retained)
            if retained and len(retained) == len(records):
                kept.append(raw)
            elif retained:
                kept.append(_rewrite(header, retained))
            elif (  # empty, or emptied now
                latest.is_producers_last(header) and header.max_timestamp >= horizons.producers_ms
            ):
                kept.append(raw if not records else encode_empty_batch(header))
            elif not records:
                dropped_empty += 1
        return _Cleaned(kept, sum(map(len, kept)), removed, dropped_empty)

    def groups(self, latest: _Latest) -> Iterator[_Group]:
        """The segments before ``end``, cleaned, in groups that each become one
        segment (Kafka merges small cleaned segments the same way)."""
        segments, segment_bytes = self.job.segments, self.job.config.segment_bytes
        group = _Group()
        for index in range(self.job.end):
            cleaned = self.cleaned(index, latest)
            (base, size_before), next_base = segments[index], segments[index + 1][0]
            if not group.fits(cleaned.size, next_base, segment_bytes):
                yield group
                group = _Group()
            group.add(base, size_before, cleaned)
        yield group

    # writing

    @blocking
    def write_copy(self, group: _Group) -> None:
        """Make the group's copy whole under ``.swap`` names, unless it would change
        nothing (one segment, no record or batch removed)."""
        if not group.bases or (len(group.bases) == 1 and not group.removed and not group.dropped):
            return
        directory, base = self.job.directory, group.bases[0]
        copy: LogSegment | None = None
        try:
            write_synced(
                segment_path(directory, base, LOG_SUFFIX + CLEANED_SUFFIX),
                group.batches,
                sync_every_bytes=COPY_SYNC_BYTES,
            )
            copy = LogSegment(directory, base, self.job.config, file_suffix=CLEANED_SUFFIX)
            copy.rebuild_indexes()
            copy.close_for_writing()
            copy.write_closed()
            copy.sync_closed()
            if not self.still_wanted():
                self.outcome.gone = True
                raise _Stop
            copy.replace_file_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_dir(directory)  # the copy is whole under .swap before the swap begins
        except (OSError, _Stop) as exc:
            remove_copy(directory, base)
            if isinstance(exc, OSError):
                self.outcome.failure = exc
            raise _Stop from None
        finally:
            if copy is not None:
                copy.release_files()
        self.outcome.copies.append(
            PreparedCopy(tuple(group.bases), group.removed, group.bytes_before, group.size)
        )


@dataclass(frozen=True, slots=True)
class _Cleaned:
    """A segment's batches after cleaning."""

    batches: list[bytes]
    size: int  # bytes
    removed: int  # records
    dropped: int  # batches that were empty already


@dataclass(slots=True)
class _Group:
    """Consecutive segments whose cleaned batches go into one segment."""

    bases: list[int] = field(default_factory=list)
    batches: list[bytes] = field(default_factory=list)
    size: int = 0
    bytes_before: int = 0
    removed: int = 0  # records
    dropped: int = 0  # batches that were empty already

    def fits(self, size: int, next_base_offset: int, segment_bytes: int) -> bool:
        """Whether a segment cleaned to ``size`` bytes, ending before
        ``next_base_offset``, can join: the merged file must stay within
        ``segment.bytes`` and its offsets within reach of its base offset."""
        if not self.bases:
            return True
        last_relative = next_base_offset - 1 - self.bases[0]
        return self.size + size <= segment_bytes and last_relative <= MAX_RELATIVE_OFFSET

    def add(self, base: int, bytes_before: int, cleaned: _Cleaned) -> None:
        self.bases.append(base)
        self.batches += cleaned.batches
        self.size += cleaned.size
        self.bytes_before += bytes_before
        self.removed += cleaned.removed
        self.dropped += cleaned.dropped


def _rewrite(header: BatchHeader, records: list[Record]) -> bytes:
    """The batch with only ``records``, keeping its offsets, producer and sequence."""
    return encode_batch(
        records,
        offset_span=(header.base_offset, header.last_offset),
        compression=header.compression,
        log_append_time_ms=(
            header.max_timestamp if header.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        ),
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
    )


def remove_copy(directory: Path, base_offset: int) -> None:
    """Remove a copy that is not swapped in, whichever name its files have."""
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        for state in (CLEANED_SUFFIX, SWAP_SUFFIX):
            segment_path(directory, base_offset, suffix + state).unlink(missing_ok=True)


@blocking
def make_copies(
    job: CompactionJob, still_wanted: Callable[[], bool] = lambda: True
) -> CompactionOutcome:
    """Do the reading and writing of ``job``: one group of segments in memory at a
    time, each written out as its copy before the next is read. A read that
    fails ends the pass as a failed write does."""
    work = _Pass(job, still_wanted)
    try:
        latest = work.latest()
        for group in work.groups(latest):
            work.write_copy(group)
    except _Stop:
        pass
    except OSError as exc:
        work.outcome.failure = exc
    return work.outcome
