"""The log dirs of a broker: their partitions, checkpoints and clean-shutdown marker.

Each log dir holds ``meta.properties``, ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint`` (the high
watermark of each replicated partition; a log opened again starts from it),
``cleaner-offset-checkpoint`` (where the next
compaction of each compacted partition starts), one ``<topic>-<partition>``
directory per partition, and, between a clean shutdown and the next start,
``.kafka_cleanshutdown``. Without that marker every partition is recovered.
"""

from __future__ import annotations

import logging
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from wirekafka.storage.checkpoint import TopicPartition, read_checkpoint, write_checkpoint
from wirekafka.storage.cleaner import CleanerStats, clean_log
from wirekafka.storage.cleaner_process import CleanerProcess, CompactionStopped
from wirekafka.storage.compacted_copy import make_copies
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import FileCache
from wirekafka.storage.files import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    DelayedDeletions,
    fsync_dir,
    parse_partition_dir_name,
    partition_dir_name,
    write_atomically,
)
from wirekafka.storage.log import Clock, PartitionLog, StorageError
from wirekafka.storage.meta_properties import (
    MetaProperties,
    new_cluster_id,
    read_meta_properties,
    write_meta_properties,
)
from wirekafka.storage.producer_state import PRODUCER_ID_EXPIRATION_MS
from wirekafka.worker_threads import blocking

log = logging.getLogger("wirekafka.storage")

DELETE_DIR_SUFFIX = "-delete"


class LogDirError(RuntimeError):
    """A log dir cannot be used (belongs to another broker or cluster, unreadable)."""


class LogManager:
    def __init__(
        self,
        log_dirs: Iterable[Path],
        config: LogConfig,
        clock: Clock,
        *,
        broker_id: int,
        topic_config: Callable[[str], LogConfig] | None = None,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
        open_files: int | None = None,
        cleaner: CleanerProcess | None = None,
    ) -> None:
        """``open_files``: how many segment files and index maps every log together
        keeps open (``FdBudget.open_files``); None keeps whatever is opened.
        ``cleaner``: the process that does compaction passes' reading and writing
        (closed at :meth:`shutdown`); None does them in the calling thread."""
        self.log_dirs = [Path(d) for d in log_dirs]
        if not self.log_dirs:
            raise LogDirError("log.dirs names no directory")
        self.default_config = config
        self.clock = clock
        self.broker_id = broker_id
        self.topic_config = topic_config or (lambda topic: config)
        self.producer_id_expiration_ms = producer_id_expiration_ms  # the logs' and the cleaner's
        self.cluster_id = ""
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._first_dirty: dict[TopicPartition, int] = {}  # of compacted logs, once cleaned
        self._lock = threading.Lock()  # of the maps above, held for lookups and swaps only
        self._create_lock = threading.Lock()  # one creation of a log at a time; before _lock
        self._checkpoint_lock = threading.Lock()  # one writer of the checkpoint files at a time
        # the partitions whose logs have work for the maintenance rounds
        # (PartitionLog.needs_rounds), and the lock of that set alone, held for
        # its changes and never while a log's lock is taken
        self._in_rounds: set[TopicPartition] = set()
        self._rounds_lock = threading.Lock()
        # the partitions whose logs' configs compact, under _lock: the compaction
        # passes look at these alone, not at every log (see logs_to_compact)
        self._compacted: set[TopicPartition] = set()
        self._deletions = DelayedDeletions()
        self.files = FileCache(open_files)  # shared by every log
        self.cleaner = cleaner
        self.had_clean_shutdown = True

    # startup and shutdown

    @blocking
    def startup(self, cluster_id: str | None = None) -> None:
        """Open every log dir and load (recovering where needed) every partition."""
        self.cluster_id = self._check_meta_properties(cluster_id)
        for log_dir in self.log_dirs:
            marker = log_dir / CLEAN_SHUTDOWN_FILE
            clean = marker.exists()
            self.had_clean_shutdown &= clean
            children = sorted(log_dir.iterdir())
            if not clean and any(parse_partition_dir_name(c.name) for c in children):
                log.warning("%s: no clean-shutdown marker; recovering its partitions", log_dir)
            recovery_points = read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT_FILE)
            start_offsets = read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT_FILE)
            cleaned = read_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT_FILE)
            high_watermarks = read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT_FILE)
            for child in children:
                if child.is_dir() and child.name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(child)
                    continue
                parsed = parse_partition_dir_name(child.name) if child.is_dir() else None
                if parsed is None:
                    continue
                self._logs[parsed] = PartitionLog(
                    child,
                    parsed[0],
                    parsed[1],
                    self.topic_config(parsed[0]),
                    self.clock,
                    clean_shutdown=clean,
                    recovery_point=recovery_points.get(parsed, 0),
                    log_start_offset=start_offsets.get(parsed, 0),
                    files=self.files,
                    producer_id_expiration_ms=self.producer_id_expiration_ms,
                    high_watermark=high_watermarks.get(parsed),
                    wants_rounds=self._wants_rounds,
                    reconfigured=self._policy_may_have_changed,
                )
                self._dir_of[parsed] = log_dir
                self._note_policy(parsed, self._logs[parsed])
                self._rounds_if_needed(self._logs[parsed])  # loaded with several segments, say
                if parsed in cleaned:
                    self._first_dirty[parsed] = cleaned[parsed]
            # From here on a crash must be noticed: the marker goes until the next clean stop.
            marker.unlink(missing_ok=True)
            fsync_dir(log_dir)
        self.write_checkpoints()
        log.info(
            "%d partitions loaded; log files open at once: %s",
            len(self._logs),
            "no limit" if self.files.capacity is None else f"at most {self.files.capacity}",
        )

    def _check_meta_properties(self, cluster_id: str | None) -> str:
        found: dict[Path, MetaProperties] = {}
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            meta = read_meta_properties(log_dir)
            if meta is not None:
                if meta.broker_id != self.broker_id:
                    raise LogDirError(
                        f"{log_dir} belongs to broker.id {meta.broker_id}, not {self.broker_id}"
                    )
                found[log_dir] = meta
        cluster_ids = {meta.cluster_id for meta in found.values()}
        if cluster_id is not None:
            cluster_ids.add(cluster_id)
        if len(cluster_ids) > 1:
            raise LogDirError(f"log dirs belong to different clusters: {sorted(cluster_ids)}")
        chosen = cluster_ids.pop() if cluster_ids else new_cluster_id()
        for log_dir in self.log_dirs:
            if log_dir not in found:
                write_meta_properties(log_dir, MetaProperties(self.broker_id, chosen))
        return chosen

    @blocking
    def shutdown(self) -> bool:
        """Flush and close every log, write checkpoints, then the clean-shutdown
        marker; False when something failed and the marker was left out."""
        if self.cleaner is not None:
            self.cleaner.close()
        failed = False
        for partition_log in self.all_logs():
            try:
                partition_log.close()
            except StorageError as exc:
                log.error("%s", exc)
                failed = True
        try:
            self.write_checkpoints()
        except OSError as exc:  # the older checkpoints stay, and recovery starts from them
            log.error("writing the offset checkpoints at shutdown failed: %s", exc)
            failed = True
        if failed:
            return False  # without the marker, the next start recovers
        try:
            for log_dir in self.log_dirs:
                write_atomically(log_dir / CLEAN_SHUTDOWN_FILE, b"")
        except OSError as exc:
            log.error("writing the clean-shutdown marker failed: %s", exc)
            return False
        return True

    @blocking
    def write_checkpoints(self) -> None:
        with self._lock:
            placed = [(tp, lg, self._dir_of[tp]) for tp, lg in self._logs.items()]
        with self._checkpoint_lock:
            for log_dir in self.log_dirs:
                logs = {tp: lg for tp, lg, in_dir in placed if in_dir == log_dir}
                write_checkpoint(
                    log_dir / RECOVERY_POINT_CHECKPOINT_FILE,
                    {tp: lg.recovery_point for tp, lg in logs.items()},
                )
                write_checkpoint(
                    log_dir / LOG_START_OFFSET_CHECKPOINT_FILE,
                    {tp: lg.log_start_offset for tp, lg in logs.items()},
                )
                write_checkpoint(
                    log_dir / REPLICATION_OFFSET_CHECKPOINT_FILE,
                    {tp: lg.high_watermark for tp, lg in logs.items() if lg.replicated},
                )
                self._write_cleaner_checkpoint(log_dir)

    def _write_cleaner_checkpoint(self, log_dir: Path) -> None:
        """Called with ``_checkpoint_lock`` held: maintenance and compaction
        both write it, from worker threads."""
        with self._lock:
            offsets = {
                tp: offset
                for tp, offset in self._first_dirty.items()
                if self._dir_of.get(tp) == log_dir
            }
        write_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT_FILE, offsets)

    # partitions

    def _snapshot(self) -> dict[TopicPartition, PartitionLog]:
        with self._lock:
            return dict(self._logs)

    def all_logs(self) -> list[PartitionLog]:
        return list(self._snapshot().values())

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        # one dict lookup, atomic: no lock (this runs for every produce and fetch)
        return self._logs.get((topic, partition))

    @blocking
    def get_or_create_log(
        self, topic: str, partition: int, config: LogConfig | None = None
    ) -> PartitionLog:
        """The partition's log, created in the log dir with the fewest partitions."""
        key = (topic, partition)
        with self._create_lock:  # the log is made without _lock: lookups go on meanwhile
            with self._lock:
                existing = self._logs.get(key)
                if existing is not None:
                    return existing
                counts = {d: 0 for d in self.log_dirs}
                for log_dir in self._dir_of.values():
                    counts[log_dir] += 1
                log_dir = min(self.log_dirs, key=lambda d: counts[d])
            created = PartitionLog(
                log_dir / partition_dir_name(topic, partition),
                topic,
                partition,
                config or self.topic_config(topic),
                self.clock,
                files=self.files,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
                wants_rounds=self._wants_rounds,
                reconfigured=self._policy_may_have_changed,
            )
            with self._lock:
                self._logs[key] = created
                self._dir_of[key] = log_dir
                self._note_policy(key, created)
            self._rounds_if_needed(created)  # under a timed flush, say
            return created

    @blocking
    def delete_log(self, topic: str, partition: int, delay_ms: int | None = None) -> bool:
        """Remove a partition: its directory is renamed ``...-delete`` and removed later."""
        key = (topic, partition)
        with self._lock:
            removed = self._logs.pop(key, None)
            log_dir = self._dir_of.pop(key, None)
            self._compacted.discard(key)
            self._first_dirty.pop(key, None)
        if removed is None or log_dir is None:
            return False
        try:
            removed.close()
        except StorageError as exc:  # offline, or its files failed: they go all the same
            log.warning("%s; deleting the partition all the same", exc)
        doomed = removed.directory.with_name(
            f"{removed.directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        )
        removed.directory.rename(doomed)
        fsync_dir(log_dir)
        delay = self.default_config.file_delete_delay_ms if delay_ms is None else delay_ms
        self._deletions.schedule([doomed], self.clock() + delay)
        return True

    def _policy_may_have_changed(self, partition_log: PartitionLog) -> None:
        """A log took a changed config (its ``reconfigured`` callback)."""
        key = (partition_log.topic, partition_log.partition)
        with self._lock:
            if self._logs.get(key) is partition_log:
                self._note_policy(key, partition_log)

    def _note_policy(self, key: TopicPartition, partition_log: PartitionLog) -> None:
        """Keep :attr:`_compacted` up to date with a log's config (under ``_lock``)."""
        if partition_log.config.compact:
            self._compacted.add(key)
        else:
            self._compacted.discard(key)

    def logs_to_compact(self) -> list[PartitionLog]:
        """The logs of compacted topics with a segment beside the active one: those
        a compaction pass may clean. Found among the compacted logs alone, never by a
        walk over every log: at 9,000 partitions such a walk took 70-110 ms on
        the event loop (the logs' objects, untouched since the last one, come
        back slowly from memory), a stall every 15 s."""
        with self._lock:
            compacted = [self._logs[key] for key in self._compacted]
        return [partition_log for partition_log in compacted if len(partition_log.segments) > 1]

    # background work

    @blocking
    def clean(self, partition_log: PartitionLog) -> CleanerStats:
        """Compact a log from its first dirty offset (see :mod:`cleaner`); when a
        pass runs, the offset it reached goes to ``cleaner-offset-checkpoint``."""
        key = (partition_log.topic, partition_log.partition)
        with self._lock:
            first_dirty = self._first_dirty.get(key, 0)
            log_dir = self._dir_of.get(key)
        if first_dirty > partition_log.log_end_offset:  # the log was cut back after a crash
            log.warning(
                "%r: first dirty offset %d is past the log end; compacting it all",
                partition_log, first_dirty,
            )  # fmt: skip
            first_dirty = 0
        try:
            stats = clean_log(
                partition_log,
                first_dirty,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
                run=self.cleaner.run if self.cleaner is not None else make_copies,
            )
        except CompactionStopped:  # shutting down
            return CleanerStats()
        if stats.first_dirty_offset is None or log_dir is None:
            return stats
        with self._lock:
            if self._logs.get(key) is not partition_log:
                return stats  # deleted meanwhile
            self._first_dirty[key] = stats.first_dirty_offset
        with self._checkpoint_lock:
            self._write_cleaner_checkpoint(log_dir)
        return stats

    def _wants_rounds(self, partition_log: PartitionLog) -> None:
        with self._rounds_lock:
            self._in_rounds.add((partition_log.topic, partition_log.partition))

    def _rounds_if_needed(self, partition_log: PartitionLog) -> None:
        """Put a log just placed in the map into the rounds if it has work for them
        already (only once it is in the map: a round drops a partition it finds
        no log of)."""
        if partition_log.needs_rounds():
            self._wants_rounds(partition_log)

    def partitions_in_rounds(self) -> list[TopicPartition]:
        """The partitions the maintenance rounds go through, sorted."""
        with self._rounds_lock:
            return sorted(self._in_rounds)

    @blocking
    def run_maintenance(self, *, expire_producers: bool = True) -> None:
        """One round of the periodic work: retention, timed flushes, fsync of
        rolled segments, delayed deletions and, with ``expire_producers``,
        expiry of producers silent for ``producer.id.expiration.ms``.

        The broker calls this from a background task; each log takes its own
        lock only briefly, so appends carry on. Only the logs that said they
        have work for the rounds (:meth:`PartitionLog.needs_rounds`) are gone
        through, each until it has none left; the expiry of producers looks at
        every log.
        """
        with self._rounds_lock:
            keys = list(self._in_rounds)
        for key in keys:
            partition_log = self._logs.get(key)
            if partition_log is not None:
                try:
                    partition_log.delete_old_segments()
                    partition_log.flush_if_due()
                    partition_log.remove_deleted_files()
                except StorageError as exc:
                    log.error("maintenance of %r failed: %s", partition_log, exc)
            with self._rounds_lock:  # the log in the map now (a new one, perhaps), asked again
                current = self._logs.get(key)
                if current is None or not current.needs_rounds():
                    self._in_rounds.discard(key)
        if expire_producers:
            for partition_log in self.all_logs():
                try:
                    partition_log.expire_producers()
                except StorageError as exc:
                    log.error("expiring the producers of %r failed: %s", partition_log, exc)
        self._deletions.remove_due(self.clock())
