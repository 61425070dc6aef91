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

A pass is planned here, from the segment list; its reading and writing
(:mod:`wirekafka.storage.compacted_copy`) need only the partition's files, and
run wherever the caller's ``run`` puts them: in this thread by default, in a
process of its own in the broker (:mod:`wirekafka.storage.cleaner_process`).
Each copy comes back whole, indexes rebuilt and every file fsynced, under
``.swap`` names; only the renames of the swap itself
(:meth:`PartitionLog.swap_in_prepared`) take the log's lock, so appends carry
on during a pass. Batches that lose no record are copied byte for byte; others
are rewritten with their header fields kept.

Data a client wrote that the cleaner cannot parse never stops it: a batch
whose CRC matches but whose records do not parse is reported once, kept byte
for byte, and its keys supersede nothing. Data the disk changed is another
matter: a batch header that cannot be read (the rest of its segment
unreadable) or a batch that fails its CRC ends the pass for that log,
reported once, as Kafka's cleaner gives up on such a log. The copies made
before are whole and swapped in; the log is left as it is from there.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from dataclasses import dataclass

from wirekafka.storage.compacted_copy import (
    CompactionJob,
    CompactionOutcome,
    Horizons,
    PreparedCopy,
    make_copies,
)
from wirekafka.storage.loader import is_unreadable_header
from wirekafka.storage.log import PartitionLog, StorageError
from wirekafka.storage.producer_state import PRODUCER_ID_EXPIRATION_MS
from wirekafka.storage.segment import LogSegment
from wirekafka.worker_threads import blocking

log = logging.getLogger("wirekafka.storage")


@dataclass(frozen=True, slots=True)
class CleanerStats:
    segments_rewritten: int = 0
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    first_dirty_offset: int | None = None  # where the next pass starts; None: no pass ran


CompactionRunner = Callable[[CompactionJob], CompactionOutcome]


def _swap_in(
    partition_log: PartitionLog, by_base: dict[int, LogSegment], copy: PreparedCopy
) -> CleanerStats:
    if not partition_log.swap_in_prepared([by_base[base] for base in copy.bases]):
        return CleanerStats()
    return CleanerStats(len(copy.bases), copy.records_removed, copy.bytes_before, copy.bytes_after)


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
        raise _UnreadableSegment(segment.base_offset, str(exc)) from exc


class _UnreadableSegment(Exception):
    """The first batch header of the segment at ``base_offset`` cannot be read."""

    def __init__(self, base_offset: int, problem: str) -> None:
        super().__init__(problem)
        self.base_offset = base_offset


@blocking
def clean_log(
    partition_log: PartitionLog,
    first_dirty_offset: int = 0,
    *,
    producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
    run: CompactionRunner = make_copies,
) -> CleanerStats:
    """One compaction pass over a compacted log, if enough of it is dirty or
    it has waited too long; safe to run beside appends. ``first_dirty_offset``
    is where the last pass stopped (0: nothing is known to be clean); ``run``
    does the pass's reading and writing. A pass that meets a batch header it
    cannot read, or a batch failing its CRC, stops there (reported once) and
    says no pass ran; one whose writing failed raises StorageError."""
    segments = partition_log.segments
    try:
        job = _plan(partition_log, segments, first_dirty_offset, producer_id_expiration_ms)
    except _UnreadableSegment as exc:
        partition_log.report_unreadable_segment(exc.base_offset, f"{exc}; it is not compacted")
        return CleanerStats()
    if job is None:
        return CleanerStats()
    by_base = {segment.base_offset: segment for segment in segments}
    outcome = run(job)
    for header, problem in outcome.unparsable:
        partition_log.report_unparsable_batch(header, problem)
    swapped = [_swap_in(partition_log, by_base, copy) for copy in outcome.copies]
    if outcome.failure is not None:
        raise StorageError(
            partition_log.topic, partition_log.partition, f"compaction failed: {outcome.failure}"
        ) from outcome.failure
    if outcome.unreadable is not None:
        base_offset, problem = outcome.unreadable
        partition_log.report_unreadable_segment(base_offset, f"{problem}; it is not compacted")
    if outcome.unreadable is not None or outcome.gone:
        return CleanerStats()
    rewritten = sum(stats.segments_rewritten for stats in swapped)
    removed_total = sum(stats.records_removed for stats in swapped)
    before = sum(stats.bytes_before for stats in swapped)
    after = sum(stats.bytes_after for stats in swapped)
    if rewritten:
        log.info(
            "%r: compacted %d segments, %d records removed, %d -> %d bytes",
            partition_log, rewritten, removed_total, before, after,
        )  # fmt: skip
    next_dirty = job.segments[job.end][0]
    return CleanerStats(rewritten, removed_total, before, after, first_dirty_offset=next_dirty)


def _plan(
    partition_log: PartitionLog,
    segments: list[LogSegment],
    first_dirty_offset: int,
    producer_id_expiration_ms: int,
) -> CompactionJob | None:
    """The pass over ``segments`` (the log's, now) to make now, or None when the
    log is not dirty enough nor overdue."""
    config = partition_log.config
    if not config.compact:
        return None
    if len(segments) < 2 or first_dirty_offset >= segments[-1].base_offset:
        return None
    now = partition_log.clock()
    first_dirty = _first_dirty_segment(segments, first_dirty_offset)
    end = _first_uncleanable_segment(segments, first_dirty, config.min_compaction_lag_ms, now)
    if end == first_dirty:
        return None
    dirty_bytes = sum(segment.size for segment in segments[first_dirty:end])
    clean_bytes = sum(segment.size for segment in segments[:first_dirty])
    dirty_enough = dirty_bytes >= config.min_cleanable_dirty_ratio * (dirty_bytes + clean_bytes)
    if not dirty_enough and not _compaction_overdue(
        segments[first_dirty:-1], config.max_compaction_lag_ms, now
    ):
        return None
    return CompactionJob(
        partition_log.directory,
        tuple((segment.base_offset, segment.size) for segment in segments),  # the active's end now
        first_dirty,
        end,
        Horizons(now - config.delete_retention_ms, now - producer_id_expiration_ms),
        config,
    )
