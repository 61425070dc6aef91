"""Log compaction: keep only the latest record for each key.

Used by compacted topics (``cleanup.policy=compact``) such as
``__consumer_offsets``. As in Kafka, the log splits at its first dirty offset
(kept in ``cleaner-offset-checkpoint``): before it, segments already cleaned,
holding at most one record per key; from it to the active segment's start,
segments not cleaned yet. Segments holding records newer than
``min.compaction.lag.ms`` (default 0) are left out of the dirty part, as is
the active segment. A pass runs when the dirty part is at least
``min.cleanable.dirty.ratio`` of the log up to it, or when the first dirty
segment's first batch is older than ``max.compaction.lag.ms`` (then whatever
the ratio). It reads the dirty part, the segments after it and the active
segment to find each key's latest offset, then rewrites every segment up to
the end of the dirty part without the records that a later record with the
same key supersedes. Tombstones (null values) go too once they are older than
``delete.retention.ms``, and so do records without a key, which a compacted
topic cannot hold. Consecutive segments whose cleaned batches fit in
``segment.bytes`` together become one, so a log that compacts well does not
keep a file per segment it ever rolled. Everything before the end of the
dirty part is then clean: that is the next first dirty offset.

All reading and writing happens without the log's lock (segments other than
the active one never change), and so do the rebuild of the cleaned copy's
indexes and every fsync (:meth:`PartitionLog.swap_in_cleaned`); only the
renames of the final swap take it, so appends carry on during a pass.
Batches that lose no record are copied byte for byte; others are rewritten
with their header fields kept.

Data a client wrote that the cleaner cannot parse never stops it: a batch
whose CRC matches but whose records do not parse is reported once, kept byte
for byte, and its keys supersede nothing. Data the disk changed is another
matter: a batch header that cannot be read (the rest of its segment
unreadable) or a batch that fails its CRC ends the pass for that log,
reported once, as Kafka's cleaner gives up on such a log. Copied on, a batch
failing its CRC would have the cleaned segment cut there when its indexes are
rebuilt; what the pass swapped in before is whole, and the log is left as it
is from there.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    NO_PRODUCER_ID,
    BatchHeader,
    crc_matches,
    encode_batch,
    encode_empty_batch,
)
from wirekafka.storage.files import CLEANED_SUFFIX, LOG_SUFFIX, segment_path, write_synced
from wirekafka.storage.loader import is_unreadable_header
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.producer_state import PRODUCER_ID_EXPIRATION_MS
from wirekafka.storage.segment import MAX_RELATIVE_OFFSET, BatchPosition, LogSegment
from wirekafka.worker_threads import blocking

log = logging.getLogger("wirekafka.storage")


@dataclass(frozen=True, slots=True)
class CleanerStats:
    segments_rewritten: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    first_dirty_offset: int | None = None  # where the next pass starts; None: no pass ran


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


class _UnreadableSegment(Exception):
    """A batch header in ``segment`` cannot be read, or a batch fails its CRC:
    the pass stops there."""

    def __init__(self, segment: LogSegment, problem: str) -> None:
        super().__init__(problem)
        self.segment = segment


def _batches(segment: LogSegment, end: int | None = None) -> Iterator[BatchPosition]:
    """The segment's batches; _UnreadableSegment where a header cannot be read."""
    try:
        yield from segment.batches_from(0, end)
    except OSError as exc:
        if not is_unreadable_header(exc):
            raise
        raise _UnreadableSegment(segment, str(exc)) from exc


def _records(
    partition_log: PartitionLog, segment: LogSegment, header: BatchHeader, raw: bytes
) -> list[Record] | None:
    """The batch's records, or None when they cannot be parsed (reported once);
    _UnreadableSegment when it fails its CRC."""
    if not crc_matches(raw, 0, header):
        raise _UnreadableSegment(segment, f"the batch at offset {header.base_offset} fails its CRC")
    return partition_log.parsed_records(raw, header, verify_crc=False)


@dataclass(frozen=True, slots=True)
class _Horizons:
    """Times before which a tombstone, and a producer's last (emptied) batch, may go."""

    tombstones_ms: int  # now - delete.retention.ms
    producers_ms: int  # now - producer.id.expiration.ms: the producer is forgotten


def _latest_offsets(
    partition_log: PartitionLog, segments: list[LogSegment], active_end: int
) -> _Latest:
    """Each key's and producer's last offset in ``segments``, the last of them
    active up to ``active_end``."""
    latest = _Latest()
    for segment in segments:
        end = active_end if segment is segments[-1] else None
        for batch in _batches(segment, end):
            header = batch.header
            if header.producer_id != NO_PRODUCER_ID:
                latest.producers[header.producer_id] = header.last_offset
            if header.is_control:
                continue
            for record in _records(partition_log, segment, header, segment.read_batch(batch)) or ():
                if record.key is not None:
                    latest.offsets[record.key] = record.offset
    return latest


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


def _clean_segment(
    partition_log: PartitionLog, segment: LogSegment, latest: _Latest, horizons: _Horizons
) -> tuple[list[bytes], int, int]:
    """The segment's batches after cleaning, how many records went, and how
    many batches that were empty already went.

    A producer's last batch stays, empty if need be, so that its sequence
    numbers outlive the records (as Kafka's cleaner keeps them), until the
    producer would be forgotten anyway: its last batch older than
    ``producer.id.expiration.ms``.
    """
    kept: list[bytes] = []
    removed = dropped_empty = 0
    for batch in _batches(segment):
        raw = segment.read_batch(batch)
        if batch.header.is_control:
            kept.append(raw)
            continue
        records = _records(partition_log, segment, batch.header, raw)
        if records is None:  # unparsable: kept as it is
            kept.append(raw)
            continue
        retained = [
            record
            for record in records
            if record.key is not None
            and not latest.supersedes(record.key, record.offset)
            and not (record.value is None and batch.header.max_timestamp < horizons.tombstones_ms)
        ]
        removed += len(records) - len(retained)
        if retained and len(retained) == len(records):
            kept.append(raw)
        elif retained:
            kept.append(_rewrite(batch.header, retained))
        elif (  # empty, or emptied now
            latest.is_producers_last(batch.header)
            and batch.header.max_timestamp >= horizons.producers_ms
        ):
            kept.append(raw if not records else encode_empty_batch(batch.header))
        elif not records:
            dropped_empty += 1
    return kept, removed, dropped_empty


@dataclass(slots=True)
class _Group:
    """Consecutive inactive segments whose cleaned batches go into one segment."""

    segments: list[LogSegment] = field(default_factory=list)
    batches: list[bytes] = field(default_factory=list)
    size: int = 0
    removed: int = 0  # records
    dropped_empty: int = 0  # batches that were empty already

    def fits(self, size: int, next_base_offset: int, segment_bytes: int) -> bool:
        """Whether a segment cleaned to ``size`` bytes, ending before
        ``next_base_offset``, can join: the merged file must stay within
        ``segment.bytes`` and its offsets within reach of its base offset."""
        if not self.segments:
            return True
        last_relative = next_base_offset - 1 - self.segments[0].base_offset
        return self.size + size <= segment_bytes and last_relative <= MAX_RELATIVE_OFFSET

    def add(
        self, segment: LogSegment, batches: list[bytes], size: int, removed: int, dropped: int
    ) -> None:
        self.segments.append(segment)
        self.batches += batches
        self.size += size
        self.removed += removed
        self.dropped_empty += dropped


def _groups(
    partition_log: PartitionLog,
    segments: list[LogSegment],
    latest: _Latest,
    horizons: _Horizons,
    segment_bytes: int,
) -> Iterator[_Group]:
    """All segments but the last, cleaned, in groups that each become one
    segment (Kafka merges small cleaned segments the same way)."""
    group = _Group()
    for index, segment in enumerate(segments[:-1]):
        batches, removed, dropped = _clean_segment(partition_log, segment, latest, horizons)
        size = sum(len(batch) for batch in batches)
        if not group.fits(size, segments[index + 1].base_offset, segment_bytes):
            yield group
            group = _Group()
        group.add(segment, batches, size, removed, dropped)
    yield group


def _swap_in(partition_log: PartitionLog, group: _Group) -> CleanerStats:
    """Replace the group's segments by one holding its cleaned batches, unless
    that would change nothing (one segment, no record or batch removed)."""
    if not group.segments or (
        len(group.segments) == 1 and not group.removed and not group.dropped_empty
    ):
        return CleanerStats()
    size_before = sum(segment.size for segment in group.segments)
    base_offset = group.segments[0].base_offset
    path = _write_cleaned(partition_log.directory, base_offset, group.batches)
    if not partition_log.swap_in_cleaned(group.segments, path):
        return CleanerStats()
    return CleanerStats(len(group.segments), group.removed, size_before, group.size)


def _write_cleaned(directory: Path, base_offset: int, batches: list[bytes]) -> Path:
    path = segment_path(directory, base_offset, LOG_SUFFIX + CLEANED_SUFFIX)
    write_synced(path, batches)
    return path


def _first_dirty_segment(segments: list[LogSegment], first_dirty_offset: int) -> int:
    """The index of the first segment holding offsets at or after ``first_dirty_offset``:
    the last one starting at or before it (or the first)."""
    found = bisect.bisect_right(segments, first_dirty_offset, key=lambda s: s.base_offset)
    return max(found - 1, 0)


def _first_uncleanable_segment(
    segments: list[LogSegment], first_dirty: int, min_compaction_lag_ms: int, now_ms: int
) -> int:
    """The index of the first segment from ``first_dirty`` on that a pass must
    leave alone: the active one, or an earlier one holding a record newer than
    ``min.compaction.lag.ms``."""
    active = len(segments) - 1
    if min_compaction_lag_ms <= 0:
        return active
    newest_allowed = now_ms - min_compaction_lag_ms
    for index in range(first_dirty, active):
        if segments[index].largest_timestamp_ms() > newest_allowed:
            return index
    return active


def _compaction_overdue(dirty: list[LogSegment], max_compaction_lag_ms: int, now_ms: int) -> bool:
    """Whether a dirty segment's first batch is older than ``max.compaction.lag.ms``."""
    if max_compaction_lag_ms >= now_ms:  # the default, "never": no segment need be read
        return False
    stamps = [stamp for segment in dirty if (stamp := _first_batch_timestamp(segment)) > 0]
    return bool(stamps) and min(stamps) < now_ms - max_compaction_lag_ms


def _first_batch_timestamp(segment: LogSegment) -> int:
    try:
        return segment.first_batch_timestamp()
    except OSError as exc:
        if not is_unreadable_header(exc):
            raise
        raise _UnreadableSegment(segment, str(exc)) from exc


@blocking
def clean_log(
    partition_log: PartitionLog,
    first_dirty_offset: int = 0,
    *,
    producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
) -> CleanerStats:
    """One compaction pass over a compacted log, if enough of it is dirty or
    it has waited too long; safe to run beside appends. ``first_dirty_offset``
    is where the last pass stopped (0: nothing is known to be clean). A pass
    that meets a batch header it cannot read, or a batch failing its CRC,
    stops there (reported once) and says no pass ran."""
    try:
        return _clean(partition_log, first_dirty_offset, producer_id_expiration_ms)
    except _UnreadableSegment as exc:
        partition_log.report_unreadable_segment(exc.segment, f"{exc}; it is not compacted")
        return CleanerStats()


def _clean(
    partition_log: PartitionLog, first_dirty_offset: int, producer_id_expiration_ms: int
) -> CleanerStats:
    config = partition_log.config
    if not config.compact:
        return CleanerStats()
    segments = partition_log.segments
    if len(segments) < 2 or first_dirty_offset >= segments[-1].base_offset:
        return CleanerStats()
    now = partition_log.clock()
    first_dirty = _first_dirty_segment(segments, first_dirty_offset)
    end = _first_uncleanable_segment(segments, first_dirty, config.min_compaction_lag_ms, now)
    if end == first_dirty:
        return CleanerStats()
    dirty_bytes = sum(segment.size for segment in segments[first_dirty:end])
    clean_bytes = sum(segment.size for segment in segments[:first_dirty])
    dirty_enough = dirty_bytes >= config.min_cleanable_dirty_ratio * (dirty_bytes + clean_bytes)
    if not dirty_enough and not _compaction_overdue(
        segments[first_dirty:-1], config.max_compaction_lag_ms, now
    ):
        return CleanerStats()
    active_end = segments[-1].size
    latest = _latest_offsets(partition_log, segments[first_dirty:], active_end)
    horizons = _Horizons(now - config.delete_retention_ms, now - producer_id_expiration_ms)
    groups = _groups(partition_log, segments[: end + 1], latest, horizons, config.segment_bytes)
    swapped = [_swap_in(partition_log, group) for group in groups]  # one group in memory at a time
    rewritten = sum(stats.segments_rewritten for stats in swapped)
    removed_total = sum(stats.records_removed for stats in swapped)
    before = sum(stats.bytes_before for stats in swapped)
    after = sum(stats.bytes_after for stats in swapped)
    if rewritten:
        log.info(
            "%r: compacted %d segments, %d records removed, %d -> %d bytes",
            partition_log, rewritten, removed_total, before, after,
        )  # fmt: skip
    return CleanerStats(
        rewritten, removed_total, before, after, first_dirty_offset=segments[end].base_offset
    )
