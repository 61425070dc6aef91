"""Opening a partition directory: tidy leftovers, recover after a crash, find the log end.

After a clean shutdown (the log dir holds ``.kafka_cleanshutdown``) segments
are trusted and only indexes that are missing or fail Kafka's sanity checks
are rebuilt. After a crash every segment from the one holding the recovery
point onward is checked batch by batch (:meth:`LogSegment.recover`); the log
is cut at the first bad byte and any later segments are removed. A clean start
whose active segment holds a batch header that cannot be read checks that
segment the same way: the log end cannot be found past it otherwise.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.record_batch import HEADER_BYTES, read_batch_header
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import NO_LIMIT, FileCache
from wirekafka.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TEMP_SUFFIX,
    TIME_INDEX_SUFFIX,
    base_offset_of,
    fsync_dir,
    segment_path,
)
from wirekafka.storage.leader_epochs import LeaderEpochCache
from wirekafka.storage.segment import LogSegment
from wirekafka.worker_threads import blocking

log = logging.getLogger("wirekafka.storage")


@dataclass(slots=True)
class LoadedLog:
    segments: list[LogSegment]
    log_end_offset: int
    recovery_point: int
    truncated_bytes: int


@blocking
def remove_leftovers(directory: Path) -> None:
    """Finish or undo what a crash interrupted: temp files, swaps, deletions."""
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.endswith((TEMP_SUFFIX, CLEANED_SUFFIX, DELETED_SUFFIX)):
            log.info("%s: removing leftover %s", directory, name)
            path.unlink()
        elif name.endswith(SWAP_SUFFIX):
            # A compaction got as far as its swap file: finish it. It replaces
            # every segment its offsets reach into (several, when the cleaner
            # merged them); their indexes go with the old data and are rebuilt.
            final = path.with_name(name.removesuffix(SWAP_SUFFIX))
            log.info("%s: completing interrupted swap of %s", directory, final.name)
            base = base_offset_of(final)
            if final.suffix == LOG_SUFFIX and base is not None:
                last = _last_offset_in(path, base)
                for replaced in _segment_bases(directory):
                    if base < replaced <= last:
                        log.info("%s: removing segment %020d, merged into it", directory, replaced)
                        segment_path(directory, replaced, LOG_SUFFIX).unlink()
                os.replace(path, final)
                for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                    segment_path(directory, base, suffix).unlink(missing_ok=True)
                fsync_dir(directory)
            else:
                path.unlink()
    logs = set(_segment_bases(directory))
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        for path in directory.glob("*" + suffix):
            if base_offset_of(path) not in logs:
                log.info("%s: removing index %s with no log", directory, path.name)
                path.unlink()


def _segment_bases(directory: Path) -> list[int]:
    """The base offsets of the directory's ``.log`` files, in order."""
    found = (base_offset_of(path) for path in directory.glob("*" + LOG_SUFFIX))
    return sorted(base for base in found if base is not None)


def _last_offset_in(path: Path, base_offset: int) -> int:
    """The last offset of the whole batches at the start of a segment file
    (``base_offset`` - 1 when it holds none)."""
    last = base_offset - 1
    with path.open("rb") as file:
        while len(head := file.read(HEADER_BYTES)) == HEADER_BYTES:
            try:
                header = read_batch_header(head, whole=False)
            except ProtocolError:
                break
            last = max(last, header.last_offset)
            file.seek(header.size_bytes - HEADER_BYTES, os.SEEK_CUR)
    return last


def _indexes_exist(directory: Path, base_offset: int) -> bool:
    return all(
        segment_path(directory, base_offset, suffix).exists()
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
    )


def _open_segment(
    directory: Path,
    base_offset: int,
    config: LogConfig,
    now_ms: int,
    files: FileCache,
    *,
    to_recover: bool,
) -> LogSegment:
    """Open a segment, rebuilding indexes that are missing or fail their checks
    (unless it is about to be recovered, which rebuilds them anyway)."""
    had_indexes = _indexes_exist(directory, base_offset)
    try:
        segment = LogSegment(directory, base_offset, config, now_ms, files)
    except ValueError as exc:  # an index file of impossible size
        log.warning("%s: %s; rebuilding indexes", directory, exc)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            segment_path(directory, base_offset, suffix).unlink()
        segment = LogSegment(directory, base_offset, config, now_ms, files)
        had_indexes = False
    if to_recover:
        return segment
    if segment.size and (not had_indexes or not segment.check_indexes()):
        log.warning("%s: indexes missing or corrupt; rebuilding", segment.log_path)
        segment.rebuild_indexes()
    return segment


@blocking
def load_segments(
    directory: Path,
    config: LogConfig,
    *,
    clean_shutdown: bool,
    recovery_point: int,
    log_start_offset: int,
    now_ms: int,
    files: FileCache = NO_LIMIT,
    leader_epochs: LeaderEpochCache | None = None,
) -> LoadedLog:
    """The directory's segments, checked as the last shutdown requires. Segments
    keep no descriptor: the file cache has whatever the checks opened last.

    The batches that recovery checks carry the leader epochs that wrote them:
    ``leader_epochs`` forgets what it held from the first segment checked on,
    and takes the epochs of the batches found good instead (so epochs whose
    checkpoint a crash lost come back, and epochs of a cut tail go)."""
    remove_leftovers(directory)
    bases = _segment_bases(directory)
    if not bases:
        bases = [log_start_offset]
    first_to_recover = len(bases)
    if not clean_shutdown:
        first_to_recover = max(0, sum(1 for base in bases if base <= recovery_point) - 1)

    segments: list[LogSegment] = []
    next_offset = bases[0]
    truncated_total = 0
    for index, base in enumerate(bases):
        segment = _open_segment(
            directory, base, config, now_ms, files, to_recover=index >= first_to_recover
        )
        segments.append(segment)
        is_last = index == len(bases) - 1
        if index >= first_to_recover:
            if index == first_to_recover and leader_epochs is not None:
                leader_epochs.truncate_from_end(base)
            scan = segment.check_batches(next_offset, leader_epochs)
            if scan.bad_bytes and not is_last:
                # Later segments go first: a crash before the cut below must not
                # leave them to follow a gap.
                _remove_segments_after(directory, bases[index + 1 :])
                is_last = True
            segment.truncate(scan)
            next_offset = scan.next_offset
            truncated_total += scan.bad_bytes
            # What was checked is made durable, so the recovery point can move past it.
            segment.sync_log()
            segment.sync_indexes()
            if is_last:
                break
        if not is_last:
            segment.close_for_writing()
            segment.write_closed()
    if first_to_recover >= len(bases):  # clean: the log end is after the last batch
        try:
            next_offset = segments[-1].load_running_state()
        except (OSError, ProtocolError) as exc:
            if isinstance(exc, OSError) and not is_unreadable_header(exc):
                raise
            next_offset, cut = _recover_active_segment(segments[-1], str(exc), leader_epochs)
            truncated_total += cut
    return LoadedLog(segments, next_offset, next_offset, truncated_total)


def is_unreadable_header(exc: OSError) -> bool:
    """Whether a segment's OSError is a batch header that is not one (the bytes
    are there but are not a header), rather than a failed read."""
    return isinstance(exc.__cause__, ProtocolError)


def _recover_active_segment(
    segment: LogSegment, problem: str, leader_epochs: LeaderEpochCache | None
) -> tuple[int, int]:
    """Check the active segment batch by batch, as after a crash; (log end, bytes cut)."""
    log.warning(
        "%s: %s although the last shutdown was clean; checking the segment as after a crash",
        segment.log_path, problem,
    )  # fmt: skip
    if leader_epochs is not None:
        leader_epochs.truncate_from_end(segment.base_offset)
    scan = segment.check_batches(segment.base_offset, leader_epochs)
    segment.truncate(scan)
    segment.sync_log()
    segment.sync_indexes()
    return scan.next_offset, scan.bad_bytes


def _remove_segments_after(directory: Path, bases: list[int]) -> None:
    for base in bases:
        log.warning("%s: removing segment %020d, which follows corrupt data", directory, base)
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            segment_path(directory, base, suffix).unlink(missing_ok=True)
    fsync_dir(directory)
