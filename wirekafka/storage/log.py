"""A partition's log: its segments, offsets, appends, reads, flushes and retention.

Appends to one partition are serialised by the log's lock; different
partitions have different locks and proceed independently. Offsets are
assigned by patching each batch's base offset in place; records are never
decoded on the way in or out. Reads return spans of segment files for
``os.sendfile``.

A batch whose CRC matches but whose records do not parse (a client wrote
junk) is data the log holds but cannot read: every reader that decodes
records (timestamp lookups here, the cleaner, the ``__consumer_offsets``
loader) reports it once, through :meth:`PartitionLog.report_unparsable_batch`,
and passes it over. A batch header that cannot be read inside a segment
(bytes changed on disk after recovery checked them, or a clean start that
trusted them) makes the rest of that segment unreadable: the producer-state
rebuild goes on at the next segment, reads before it return a batch at a time
up to it, reads there answer a storage error, and
the log stays online (recovery after an unclean start would cut the log there
and remove the segments after it; at runtime that would drop acknowledged
records).

The log owns the state of its idempotent producers (:mod:`.producer_state`),
as Kafka's ``UnifiedLog`` owns its ``ProducerStateManager``: it is rebuilt from
the batch headers when the log loads (after recovery has cut what a crash
left), an append checks an idempotent producer's batch against it under the
log's lock (headers only) and records it there, and the maintenance round
forgets producers silent for ``producer.id.expiration.ms``. As in Kafka, the
state outlives the batches it came from: DeleteRecords, retention and
compaction leave it as it is (compaction keeps each producer's last batch, so
a restart finds the producer again).

For replication the log also owns its leader epochs (:mod:`.leader_epochs`,
``leader-epoch-checkpoint``) and a high watermark. A leader's appends stamp
its epoch on their batches (``append(..., leader_epoch=...)``); a follower
appends the leader's batches as they are (:meth:`PartitionLog.append_as_follower`)
and cuts what the new leader does not have (:meth:`PartitionLog.truncate_to`).
While ``replicated`` is false (one broker) the high watermark is the log end.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    NO_PRODUCER_ID,
    BatchHeader,
    batches_of,
    crc_matches,
    decode_batch,
    read_batch_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    single_batch_summary,
)
from wirekafka.storage.compacted_copy import remove_copy
from wirekafka.storage.config import NO_LIMIT as NEVER
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import NO_LIMIT, FileCache, is_out_of_fds
from wirekafka.storage.files import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    SWAP_SUFFIX,
    DelayedDeletions,
    fsync_dir,
)
from wirekafka.storage.leader_epochs import CorruptLeaderEpochCheckpointError, LeaderEpochCache
from wirekafka.storage.loader import is_unreadable_header, load_segments
from wirekafka.storage.producer_state import (
    PRODUCER_ID_EXPIRATION_MS,
    Duplicate,
    InvalidProducerBatch,
    ProducerStateTable,
)
from wirekafka.storage.segment import BatchPosition, LogSegment
from wirekafka.storage.spans import FileSpan
from wirekafka.worker_threads import blocking

log = logging.getLogger("wirekafka.storage")

Clock = Callable[[], int]  # milliseconds since the epoch

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1


class StorageError(Exception):
    """A disk operation on a partition failed; the broker answers KAFKA_STORAGE_ERROR."""

    def __init__(self, topic: str, partition: int, message: str) -> None:
        super().__init__(f"{topic}-{partition}: {message}")
        self.topic = topic
        self.partition = partition


class RollDue(Exception):
    """The active segment must roll before the append (asked not to roll) can go
    on: nothing was appended. The caller runs :meth:`PartitionLog.roll_when_due`
    in a worker thread, then appends again."""


class AppendInfo(NamedTuple):
    """What an append assigned; built with :data:`_new_append_info` on the hot path."""

    first_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    record_count: int
    flush_due: bool  # log.flush.interval.messages reached: the caller flushes
    duplicate: bool  # a retry of a batch in the log: nothing written, its first offsets


_new_append_info = tuple.__new__  # AppendInfo(...) without its Python-level __new__


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches to send, and the partition's offsets at the time of the read."""

    spans: list[FileSpan]
    high_watermark: int
    log_start_offset: int
    log_end_offset: int

    @property
    def size_bytes(self) -> int:
        return sum(span.size_bytes for span in self.spans)


@dataclass(frozen=True, slots=True)
class OffsetOutOfRange:
    """The offset asked for is below the log start or beyond the log end."""

    offset: int
    log_start_offset: int
    log_end_offset: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class _UnsyncedRoll:
    """A segment rolled away from but not yet written out and fsynced, and where it ends."""

    segment: LogSegment
    end_offset: int


@dataclass(slots=True)
class _Offsets:
    log_end: int
    log_start: int
    recovery_point: int
    unflushed_records: int = 0
    last_flush_ms: int = 0
    unsynced_rolls: list[_UnsyncedRoll] = field(default_factory=list)


class PartitionLog:
    """The log of one topic partition, in ``<log dir>/<topic>-<partition>/``."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        clock: Clock,
        *,
        clean_shutdown: bool = True,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        files: FileCache = NO_LIMIT,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
        high_watermark: int | None = None,
        wants_rounds: Callable[[PartitionLog], None] | None = None,
        reconfigured: Callable[[PartitionLog], None] | None = None,
    ) -> None:
        """``high_watermark``: the one ``replication-offset-checkpoint`` holds for
        the partition; given, the log is ``replicated`` and starts with it.
        ``wants_rounds``: called with the log when it gets work for the
        maintenance rounds (see :meth:`needs_rounds`), from whatever thread
        gave it that work, possibly under the log's lock. ``reconfigured``:
        called with the log after each :meth:`reconfigure`, outside its lock."""
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self._name = f"{topic}-{partition}"
        self.config = config
        self._log_append_time = config.message_timestamp_type == TimestampType.LOG_APPEND_TIME
        self.clock = clock
        self._lock = threading.Lock()
        self._roll_lock = threading.Lock()  # one roll at a time; before _lock
        self._roll_wanted = False  # an append found the active segment due to roll
        self._sync_lock = threading.Lock()  # one sync of rolled segments at a time; before _lock
        self._flush_lock = (
            threading.Lock()
        )  # one fsync of the active segment at a time; before _lock
        self._files = files
        self._deletions = DelayedDeletions()
        self.offline = False
        self._reported: set[tuple[str, int]] = set()  # unreadable spots already logged
        self._reported_lock = threading.Lock()
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        epochs_path = directory / LEADER_EPOCH_CHECKPOINT_FILE
        try:
            self.leader_epochs = LeaderEpochCache.load(epochs_path)
            rebuild_epochs = False
        except CorruptLeaderEpochCheckpointError as exc:
            log.warning("%s; rebuilding it from the log's batches", exc)
            self.leader_epochs = LeaderEpochCache(epochs_path, dirty=True)
            rebuild_epochs = True
        loaded = load_segments(
            directory,
            config,
            clean_shutdown=clean_shutdown,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            now_ms=clock(),
            files=files,
            leader_epochs=self.leader_epochs,
        )
        if created:  # the new directory and its first segment's files must survive power loss
            files.retrying(lambda: fsync_dir(directory))
            files.retrying(lambda: fsync_dir(directory.parent))
        self._segments = loaded.segments
        self._bases = [segment.base_offset for segment in self._segments]
        start = min(max(log_start_offset, self._bases[0]), loaded.log_end_offset)
        self._offsets = _Offsets(
            log_end=loaded.log_end_offset,
            log_start=start,
            recovery_point=loaded.recovery_point,
            last_flush_ms=clock(),
        )
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers = self._load_producers()
        # The replication layer sets ``replicated`` and moves the high watermark;
        # until then it is the log end, read at no cost.
        self.replicated = high_watermark is not None
        self._high_watermark = min(high_watermark or 0, loaded.log_end_offset)
        self._load_leader_epochs(rebuild_epochs)
        self._wants_rounds = wants_rounds or (lambda partition_log: None)
        self._reconfigured = reconfigured or (lambda partition_log: None)

    def __repr__(self) -> str:
        return f"PartitionLog({self.topic}-{self.partition}, {self.log_start_offset}..{self.log_end_offset})"

    def _load_producers(self) -> ProducerStateTable:
        """The idempotent producers' state, rebuilt from the batch headers; segments
        whose batches are all older than ``producer.id.expiration.ms`` are passed over."""
        now = self.clock()
        producers = ProducerStateTable()
        producers.rebuild(self.batch_headers(now - self.producer_id_expiration_ms))
        producers.expire(now, self.producer_id_expiration_ms)
        if len(producers):
            log.info("%r: %d producers rebuilt from the log", self, len(producers))
        return producers

    def _load_leader_epochs(self, rebuild: bool) -> None:
        """Fit the leader epochs to the log as loaded: rebuilt from every batch
        header when their checkpoint could not be read, cut to the log's
        start and end, and written out when that changed them."""
        epochs = self.leader_epochs
        if rebuild:
            for header in self.batch_headers():
                epochs.assign(header.partition_leader_epoch, header.base_offset)
        epochs.truncate_from_end(self._offsets.log_end)
        epochs.truncate_from_start(self._offsets.log_start)
        epochs.flush()

    def reconfigure(self, config: LogConfig) -> None:
        """Take a topic's changed config (IncrementalAlterConfigs): retention, cleanup
        policy, flushes, timestamps and the active segment's roll from now on."""
        with self._lock:
            self.config = config
            self._log_append_time = config.message_timestamp_type == TimestampType.LOG_APPEND_TIME
            self._segments[-1].set_limits(config)
        if self.needs_rounds():  # a timed flush, say
            self._wants_rounds(self)
        self._reconfigured(self)

    # offsets

    @property
    def log_end_offset(self) -> int:
        return self._offsets.log_end

    @property
    def log_start_offset(self) -> int:
        return self._offsets.log_start

    @property
    def recovery_point(self) -> int:
        return self._offsets.recovery_point

    @property
    def high_watermark(self) -> int:
        """The offset below which every record is known replicated: what consumers
        may read. The log end while ``replicated`` is false."""
        offsets = self._offsets
        if not self.replicated:
            return offsets.log_end
        return max(self._high_watermark, offsets.log_start)

    def set_high_watermark(self, offset: int) -> int:
        """Move the high watermark up to ``offset``, clamped to the log's start and
        end; it never moves back (only :meth:`truncate_to` lowers it). Returns it."""
        with self._lock:
            offsets = self._offsets
            clamped = min(max(offset, offsets.log_start), offsets.log_end)
            if clamped > self._high_watermark:
                self._high_watermark = clamped
            return max(self._high_watermark, offsets.log_start)

    @property
    def segments(self) -> list[LogSegment]:
        """A snapshot of the segment list, oldest first."""
        with self._lock:
            return list(self._segments)

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self.segments)

    def _fail(self, action: str, exc: OSError) -> StorageError:
        if is_out_of_fds(exc):  # back-pressure: the same request works once descriptors are free
            return StorageError(
                self.topic,
                self.partition,
                f"{action} failed: the broker is out of file descriptors ({exc.strerror}); "
                "try again",
            )
        return StorageError(self.topic, self.partition, f"{action} failed: {exc}")

    def _fail_sync(self, action: str, exc: OSError) -> StorageError:
        """A failed fsync takes the log offline. The kernel reports a lost
        write-back once: a second fsync may succeed with the data gone, so
        only recovery after a restart can tell what is on disk. A file that
        could not be opened for lack of descriptors was not synced, nor lost."""
        if not is_out_of_fds(exc):
            with self._lock:
                self.offline = True
        return self._fail(action, exc)

    def _check_online(self) -> None:
        if self.offline:
            raise StorageError(self.topic, self.partition, "log is offline after a disk error")

    # data that cannot be read

    def _first_report(self, kind: str, offset: int) -> bool:
        with self._reported_lock:
            if (kind, offset) in self._reported:
                return False
            self._reported.add((kind, offset))
            return True

    def parsed_records(
        self, data: Buffer, header: BatchHeader, position: int = 0, *, verify_crc: bool = True
    ) -> list[Record] | None:
        """The records of the batch ``header`` heads at ``position`` in ``data``, or
        None when they cannot be parsed (reported once: the caller skips the batch)."""
        try:
            return decode_batch(data, position, verify_crc=verify_crc).records
        except ProtocolError as exc:
            self.report_unparsable_batch(header, str(exc))
            return None

    def report_unparsable_batch(self, header: BatchHeader, problem: str) -> None:
        """Log, once per batch, that its records cannot be parsed; the caller skips it."""
        if self._first_report("batch", header.base_offset):
            log.error(
                "%s-%d: the batch at offsets %d..%d holds records that cannot be parsed "
                "(%s); skipping it",
                self.topic, self.partition, header.base_offset, header.last_offset, problem,
            )  # fmt: skip

    def report_unreadable_segment(self, base_offset: int, problem: str) -> None:
        """Log, once per segment, that the rest of it cannot be read; the caller skips it."""
        if self._first_report("segment", base_offset):
            log.error(
                "%s-%d: segment %020d cannot be read to its end (%s); skipping the rest of it",
                self.topic, self.partition, base_offset, problem,
            )  # fmt: skip

    # appends

    def append(
        self,
        records: Buffer,
        batches: list[tuple[int, BatchHeader]] | None = None,
        *,
        flush_when_due: bool = True,
        roll: bool = True,
        leader_epoch: int | None = None,
    ) -> AppendInfo:
        """Append one or more record batches, assigning their offsets.

        ``records`` is patched in place when writable (a bytearray frame from
        the network); otherwise it is copied once. ``batches`` are the
        (position, header) pairs of ``records`` when the caller has them
        already (from checking CRCs); they are read here otherwise. When
        ``log.flush.interval.messages`` is reached the log is flushed here,
        unless ``flush_when_due`` is false: then the caller flushes (the broker
        does so off its event loop), told by ``flush_due``. When the active
        segment is due to roll, the roll (which creates files) happens here,
        unless ``roll`` is false: then nothing is appended and RollDue is
        raised, for the caller to run :meth:`roll_when_due` in a worker thread
        and append again. The event loop appends with neither, and so never
        blocks here on more than the ``pwrite`` of the batches.

        A batch with a producer id (an idempotent producer's) is appended
        alone, after a check against its producer's state: a retry of one of
        the producer's last five batches is not written again (``duplicate``,
        with the first attempt's offsets); an older epoch or a sequence that
        does not follow on raises InvalidProducerBatch.

        A leader of a replicated partition passes its ``leader_epoch``: it is
        stamped on every batch (in place, like the offsets) and recorded in
        :attr:`leader_epochs` as starting at the first offset appended, when
        it is new. None (one broker) leaves the batches' epochs as they came.

        Raises ProtocolError when the data is not whole magic-2 batches,
        StorageError on a disk error.
        """
        data = (
            records
            if type(records) is bytearray
            or (type(records) is memoryview and not records.readonly)  # a frame's
            else _writable(records)
        )
        summary = None  # of the one batch that is all of ``data``, read without its header
        producer_batch = None  # the header of an idempotent producer's batch
        if batches is None:
            if (summary := single_batch_summary(data)) is None:
                batches = batches_of(data)
            elif summary[3] != NO_PRODUCER_ID:
                summary, batches = None, [(0, read_batch_header(data))]
        if batches is not None:  # an idempotent producer's batch must be alone
            if len(batches) == 1:
                if (first := batches[0][1]).producer_id != NO_PRODUCER_ID:
                    producer_batch = first
            elif any(header.producer_id != NO_PRODUCER_ID for _, header in batches):
                raise ProtocolError("an idempotent producer's batch is appended alone")
        if leader_epoch is not None:
            if batches is None:
                set_partition_leader_epoch(data, 0, leader_epoch)
            else:
                for position, _ in batches:
                    set_partition_leader_epoch(data, position, leader_epoch)
        # Every line here runs once per produced batch: locals, no helpers, and
        # the lock taken by hand (a with statement costs twice as much).
        lock = self._lock
        lock.acquire()
        try:
            if self.offline:
                self._check_online()
            offsets = self._offsets
            log_append_time = self._log_append_time
            now = self.clock() if log_append_time else NO_TIMESTAMP
            if producer_batch is not None:
                verdict = self._producers.check(producer_batch)
                if verdict is not None:
                    if isinstance(verdict, Duplicate):
                        return self._duplicate(verdict)
                    raise self._producers.refusal(producer_batch, verdict, self._name)
            first_offset = next_offset = offsets.log_end
            max_timestamp, offset_of_max = NO_TIMESTAMP, first_offset
            if summary is not None:  # the loop below, for one batch at position 0
                last_offset_delta, timestamp, record_count, _ = summary
                set_base_offset(data, 0, next_offset)
                if log_append_time:
                    set_log_append_time(data, 0, now)
                    timestamp = now
                next_offset += last_offset_delta + 1
                if timestamp > max_timestamp:
                    max_timestamp, offset_of_max = timestamp, next_offset - 1
            else:
                record_count = 0
                for position, header in batches:  # type: ignore[union-attr]
                    set_base_offset(data, position, next_offset)
                    timestamp = header.max_timestamp
                    if log_append_time:
                        set_log_append_time(data, position, now)
                        timestamp = now
                    next_offset += header.last_offset_delta + 1
                    if timestamp > max_timestamp:
                        max_timestamp, offset_of_max = timestamp, next_offset - 1
                    record_count += header.record_count
            last_offset = next_offset - 1
            segment = self._segments[-1]
            roll_due = self._roll_wanted or segment.should_roll(
                len(data), last_offset, max_timestamp, self.clock
            )
            if roll_due:  # nothing changes: the roll comes first, then this append again
                self._roll_wanted = True
            else:
                try:
                    segment.append(data, last_offset, max_timestamp, offset_of_max)
                except OSError as exc:
                    raise self._write_failed(segment, exc) from exc
                if producer_batch is not None:
                    self._producers.record(producer_batch, first_offset, now)
                flush_due, log_start = self._written(
                    first_offset, next_offset, record_count, leader_epoch
                )
        finally:
            lock.release()
        if roll_due:
            if not roll:
                raise RollDue(f"{self.topic}-{self.partition}: the active segment is due to roll")
            self.roll_when_due()
            return self.append(
                data, batches, flush_when_due=flush_when_due, leader_epoch=leader_epoch
            )
        if flush_due and flush_when_due:
            self.flush()
        return _new_append_info(
            AppendInfo,
            (first_offset, last_offset, now, log_start, record_count, flush_due, False),
        )

    def _write_failed(self, segment: LogSegment, exc: OSError) -> StorageError:
        """The error of an append whose write failed (with ``_lock`` held); the log goes
        offline if the write could not be undone."""
        # Out of descriptors, the file could not be opened: nothing was written.
        if not is_out_of_fds(exc) and not segment.is_intact():
            self.offline = True
        return self._fail("append", exc)

    def _written(
        self, first_offset: int, next_offset: int, record_count: int, leader_epoch: int | None
    ) -> tuple[bool, int]:
        """Count appended batches in (with ``_lock`` held): whether a flush is due by
        ``log.flush.interval.messages``, and the log start offset."""
        offsets = self._offsets
        offsets.log_end = next_offset
        if leader_epoch is not None:
            self.leader_epochs.assign(leader_epoch, first_offset)
        unflushed = offsets.unflushed_records = offsets.unflushed_records + record_count
        return unflushed >= self.config.flush_interval_messages, offsets.log_start

    def append_many(
        self,
        appends: list[tuple[bytearray | memoryview, list[tuple[int, BatchHeader]]]],
        *,
        leader_epoch: int | None = None,
    ) -> list[AppendInfo | InvalidProducerBatch | StorageError]:
        """Several appends at once, in order, as the event loop makes them: each is
        ``(records, batches)`` as :meth:`append` takes them with ``flush_when_due``
        and ``roll`` false, and each gets its own result: its AppendInfo, or the
        InvalidProducerBatch or StorageError that refused it.

        Appends of one batch without a producer id that follow one another are
        written with one ``pwritev`` (group commit: the batches of pipelined
        produce requests cost one write); an idempotent producer's batch is
        appended on its own, after the check against its producer's state. When
        the active segment is due to roll, the results stop at the append that
        must wait for it: the caller runs :meth:`roll_when_due` in a worker
        thread and passes the rest again.
        """
        results: list[AppendInfo | InvalidProducerBatch | StorageError] = []
        if len(appends) == 1:  # one partition of a request: as it comes
            self._append_one(appends[0], leader_epoch, results)
            return results
        group: list[tuple[bytearray | memoryview, list[tuple[int, BatchHeader]]]] = []
        for item in appends:
            batches = item[1]
            if len(batches) == 1 and batches[0][1].producer_id == NO_PRODUCER_ID:
                group.append(item)
                continue
            if group and not self._append_group(group, leader_epoch, results):
                return results
            group = []
            if not self._append_one(item, leader_epoch, results):
                return results
        if group:
            self._append_group(group, leader_epoch, results)
        return results

    def _append_one(
        self,
        item: tuple[bytearray | memoryview, list[tuple[int, BatchHeader]]],
        leader_epoch: int | None,
        results: list[AppendInfo | InvalidProducerBatch | StorageError],
    ) -> bool:
        """One append of :meth:`append_many`; False (nothing written) when a roll is due."""
        try:
            info = self.append(
                item[0], item[1], flush_when_due=False, roll=False, leader_epoch=leader_epoch
            )
        except RollDue:
            return False
        except (InvalidProducerBatch, StorageError) as exc:
            results.append(exc)
            return True
        results.append(info)
        return True

    def _append_group(
        self,
        group: list[tuple[bytearray | memoryview, list[tuple[int, BatchHeader]]]],
        leader_epoch: int | None,
        results: list[AppendInfo | InvalidProducerBatch | StorageError],
    ) -> bool:
        """Write appends of one batch each, none an idempotent producer's, with one
        write; their results go to ``results``. False when the active segment is
        due to roll before one of them (those before it are written)."""
        if len(group) > 1:
            try:
                written = self._write_group(group, leader_epoch)
            except StorageError as exc:
                results.extend(exc for _ in group)
                return True
            if written is not None:
                results.extend(written)
                return True
        # one append, or a group the active segment cannot take whole: one by one
        return all(self._append_one(item, leader_epoch, results) for item in group)

    def _write_group(
        self,
        group: list[tuple[bytearray | memoryview, list[tuple[int, BatchHeader]]]],
        leader_epoch: int | None,
    ) -> list[AppendInfo] | None:
        """:meth:`_append_group`'s one write; None (nothing written) when the active
        segment is empty or might roll within the group: the appends then go one by
        one, rolling exactly where they would."""
        lock = self._lock
        lock.acquire()
        try:
            if self.offline:
                self._check_online()
            offsets = self._offsets
            log_append_time = self._log_append_time
            now = self.clock() if log_append_time else NO_TIMESTAMP
            first_offset = next_offset = offsets.log_end
            datas = []
            indexed = []  # (last offset, max timestamp, its offset) of each append
            assigned = []  # (first offset, last offset, record count) of each append
            group_max_timestamp = NO_TIMESTAMP
            record_count = 0
            for data, ((position, header),) in group:
                if leader_epoch is not None:
                    set_partition_leader_epoch(data, position, leader_epoch)
                set_base_offset(data, position, next_offset)
                timestamp = header.max_timestamp
                if log_append_time:
                    set_log_append_time(data, position, now)
                    timestamp = now
                last_offset = next_offset + header.last_offset_delta
                indexed.append((last_offset, timestamp, last_offset))
                assigned.append((next_offset, last_offset, header.record_count))
                datas.append(data)
                if timestamp > group_max_timestamp:
                    group_max_timestamp = timestamp
                record_count += header.record_count
                next_offset = last_offset + 1
            segment = self._segments[-1]
            size = sum(len(data) for data in datas)
            if (
                not segment.size  # its first batch sets when the segment is due to roll
                or segment.size + size > self.config.segment_bytes
                or self._roll_wanted
                or segment.should_roll(size, next_offset - 1, group_max_timestamp, self.clock)
            ):
                return None
            try:
                segment.append_many(datas, indexed)
            except OSError as exc:
                raise self._write_failed(segment, exc) from exc
            flush_due, log_start = self._written(
                first_offset, next_offset, record_count, leader_epoch
            )
        finally:
            lock.release()
        return [
            _new_append_info(AppendInfo, (first, last, now, log_start, count, flush_due, False))
            for first, last, count in assigned
        ]

    def append_as_follower(self, records: Buffer, *, roll: bool = True) -> AppendInfo:
        """Append the leader's batches as they are: a follower's copy of the log.

        Nothing in the batches changes (offsets, timestamps and leader epochs
        are the leader's). Every batch's CRC is checked; the first must start
        at the log end and each next one where the one before it ended. Each
        batch's ``partition_leader_epoch`` goes into :attr:`leader_epochs`
        (new epochs only), and batches with a producer id into the producer
        state, without the sequence checks a leader makes (it made them).

        Rolls as :meth:`append` does (RollDue when ``roll`` is false) and says
        when ``log.flush.interval.messages`` is reached (``flush_due``: the
        caller flushes). ``log_append_time_ms`` is -1: the batches carry the
        leader's times.

        Raises ProtocolError when the data is not whole magic-2 batches, a CRC
        does not match or the offsets do not follow on (the message names
        them), StorageError on a disk error.
        """
        batches = batches_of(records)
        first_offset = expected = batches[0][1].base_offset
        max_timestamp, offset_of_max = NO_TIMESTAMP, first_offset
        record_count = 0
        for position, header in batches:
            if header.base_offset != expected:
                raise ProtocolError(
                    f"{self._name}: the leader's batch at offset {header.base_offset} does "
                    f"not follow on from the one before it, which ends before {expected}"
                )
            if header.last_offset_delta < 0:
                raise ProtocolError(
                    f"{self._name}: the leader's batch at offset {header.base_offset} has "
                    f"a negative last offset delta {header.last_offset_delta}"
                )
            if not crc_matches(records, position, header):
                raise ProtocolError(
                    f"{self._name}: the leader's batch at offsets {header.base_offset}.."
                    f"{header.last_offset} does not match its CRC"
                )
            expected = header.next_offset
            record_count += header.record_count
            if header.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = header.max_timestamp, header.last_offset
        last_offset = expected - 1
        with self._lock:
            self._check_online()
            offsets = self._offsets
            if first_offset != offsets.log_end:
                raise ProtocolError(
                    f"{self._name}: the leader's batches start at offset {first_offset}, "
                    f"the log ends at offset {offsets.log_end}"
                )
            segment = self._segments[-1]
            roll_due = self._roll_wanted or segment.should_roll(
                len(records), last_offset, max_timestamp, self.clock
            )
            if roll_due:
                self._roll_wanted = True
            else:
                try:
                    segment.append(records, last_offset, max_timestamp, offset_of_max)
                except OSError as exc:
                    if not is_out_of_fds(exc) and not segment.is_intact():
                        self.offline = True
                    raise self._fail("append", exc) from exc
                offsets.log_end = expected
                headers = [header for _, header in batches]
                self._producers.rebuild(headers)
                assign = self.leader_epochs.assign
                for header in headers:
                    assign(header.partition_leader_epoch, header.base_offset)
                unflushed = offsets.unflushed_records = offsets.unflushed_records + record_count
                flush_due = unflushed >= self.config.flush_interval_messages
                log_start = offsets.log_start
        if roll_due:
            if not roll:
                raise RollDue(f"{self.topic}-{self.partition}: the active segment is due to roll")
            self.roll_when_due()
            return self.append_as_follower(records)
        return AppendInfo(
            first_offset, last_offset, NO_TIMESTAMP, log_start, record_count, flush_due, False
        )

    def _duplicate(self, duplicate: Duplicate) -> AppendInfo:
        """What the first attempt of a retried batch was assigned (called with ``_lock`` held)."""
        batch = duplicate.batch
        return AppendInfo(
            batch.first_offset,
            batch.last_offset,
            batch.log_append_time_ms,
            self._offsets.log_start,
            record_count=0,
            flush_due=False,
            duplicate=True,
        )

    def needs_rounds(self) -> bool:
        """Whether the maintenance rounds have work here, now or later: segments
        besides the active one (retention), rolled segments to fsync, files
        waiting for deletion, or a timed flush (``flush.ms``). A log that has
        none is left out of the rounds until it tells ``wants_rounds`` again,
        so that a round over thousands of idle partitions costs nothing (a
        worker thread running Python keeps the event loop waiting for the GIL).
        Read unlocked: what changes meanwhile calls ``wants_rounds``.
        """
        return bool(
            len(self._segments) > 1
            or self._offsets.unsynced_rolls
            or self._deletions
            or self.config.flush_interval_ms != NEVER
        )

    def expire_producers(self) -> int:
        """Forget producers silent for longer than ``producer.id.expiration.ms``
        (the maintenance round); how many went."""
        if not self._producers:  # no idempotent producer ever wrote here: nothing to lock
            return 0
        with self._lock:
            return self._producers.expire(self.clock(), self.producer_id_expiration_ms)

    @blocking
    def roll_when_due(self) -> None:
        """Roll the active segment if an append found it due (:class:`RollDue`).

        The new segment starts at the log end. Its files are created, and the
        active one is cut to its last batch (recovery after a crash checks the
        segments from the one holding the recovery point on, so an earlier one
        must not end in preallocated zeros), outside the log's lock: appends
        stop at RollDue meanwhile, so the log end stays where it is; under the
        lock the new segment only takes its place. When it cannot be created
        (out of descriptors, a full disk) the old one stays active and whole,
        and the append fails without harm. One roll at a time.
        """
        with self._roll_lock:
            with self._lock:
                if not self._roll_wanted:
                    return  # rolled meanwhile
                old = self._segments[-1]
                base = self._offsets.log_end
            try:
                old.trim_preallocated()
                segment = LogSegment(self.directory, base, self.config, self.clock(), self._files)
            except OSError as exc:
                with self._lock:
                    self._roll_wanted = False
                raise self._fail("roll", exc) from exc
            with self._lock:
                assert self._offsets.log_end == base and self._segments[-1] is old
                old.close_for_writing()
                self._segments.append(segment)
                self._bases.append(base)
                # written out and fsynced by the next flush or maintenance round
                self._offsets.unsynced_rolls.append(_UnsyncedRoll(old, base))
                self._roll_wanted = False
            self._wants_rounds(self)
        log.info("%s-%d: rolled to segment %020d", self.topic, self.partition, base)

    @blocking
    def sync_rolled_segments(self) -> None:
        """Write out and fsync segments rolled away from (and the directory
        naming the new ones), then move the recovery point past them. Runs
        without the log's lock; one call at a time. When they cannot be
        written out (a full disk, no descriptors) or opened for their fsync
        (no descriptors), nothing is lost: they wait for the next call. A
        failed fsync takes the log offline."""
        with self._sync_lock:
            with self._lock:
                pending, self._offsets.unsynced_rolls = self._offsets.unsynced_rolls, []
            if not pending:
                return
            try:
                for rolled in pending:
                    rolled.segment.write_closed()
            except OSError as exc:
                self._unsynced_again(pending)
                raise self._fail("writing out a rolled segment", exc) from exc
            try:
                for rolled in pending:
                    rolled.segment.sync_closed()
                self._files.retrying(lambda: fsync_dir(self.directory))
            except OSError as exc:
                if is_out_of_fds(exc):
                    self._unsynced_again(pending)
                raise self._fail_sync("fsync of a rolled segment", exc) from exc
            self._flush_leader_epochs()  # before the recovery point passes their batches
            with self._lock:
                end = pending[-1].end_offset
                self._offsets.recovery_point = max(self._offsets.recovery_point, end)

    def _unsynced_again(self, rolls: list[_UnsyncedRoll]) -> None:
        """Put rolls back, before any made since, for the next sync to take."""
        with self._lock:
            self._offsets.unsynced_rolls[:0] = rolls
        self._wants_rounds(self)

    @blocking
    def roll(self) -> None:
        """Start a new segment now (if the active one holds anything)."""
        with self._lock:
            if not self._segments[-1].size:
                return
            self._roll_wanted = True
        self.roll_when_due()

    # truncation (a follower's)

    @blocking
    def truncate_to(self, offset: int) -> bool:
        """Remove every record at or after ``offset``: a follower drops what the
        new leader does not have. Whether anything was removed.

        The log is cut at a batch boundary: an offset inside a batch cuts at
        the start of that batch (the log end becomes that batch's base
        offset). Later segments are deleted (renamed ``.deleted``, removed
        after ``file.delete.delay.ms``), the segment holding the cut is
        truncated (its file and both indexes) and becomes the active one, the
        producer state is rebuilt from what remains, the leader epochs from
        the cut on go (their checkpoint is written), and the high watermark
        and recovery point come down to the new log end if above it.

        Under the log's lock only the in-memory state is swapped (segment
        list, the cut segment's size and index entries, offsets), so reads go
        on; appends wait meanwhile, as they wait for a roll (RollDue, or
        :meth:`roll_when_due` in a worker thread). The files are cut, fsynced
        and the directory fsynced after; a failure there takes the log offline
        (its files no longer match what it serves; recovery at the next start
        finishes the cut).
        """
        with self._roll_lock, self._sync_lock, self._flush_lock:  # no roll, sync or flush meanwhile
            with self._lock:
                self._check_online()
                offsets = self._offsets
                if offset >= offsets.log_end:
                    return False
                index = max(0, bisect.bisect_right(self._bases, offset) - 1)
                kept = self._segments[index]
                try:
                    found = kept.find_batch(offset)
                except OSError as exc:
                    raise self._fail("truncation", exc) from exc
                if found is None:  # the offset is past this segment's batches
                    position, new_end = kept.size, offset
                else:
                    position = found.position
                    new_end = max(min(offset, found.header.base_offset), kept.base_offset)
                doomed = self._segments[index + 1 :]
                del self._segments[index + 1 :]
                del self._bases[index + 1 :]
                self._roll_wanted = True  # appends wait until the files are cut
                try:
                    kept.cut(position, new_end)
                except OSError as exc:
                    self.offline = True
                    raise self._fail("truncation", exc) from exc
                kept.set_limits(self.config)
                offsets.log_end = new_end
                offsets.log_start = min(offsets.log_start, new_end)
                offsets.recovery_point = min(offsets.recovery_point, new_end)
                remaining = self._segments[:index]
                offsets.unsynced_rolls = [
                    rolled for rolled in offsets.unsynced_rolls if rolled.segment in remaining
                ]
                self._high_watermark = min(self._high_watermark, new_end)
                self.leader_epochs.truncate_from_end(new_end)
            log.info(
                "%s-%d: truncating to offset %d (asked %d), %d later segments deleted",
                self.topic, self.partition, new_end, offset, len(doomed),
            )  # fmt: skip
            try:
                due = self.clock() + self.config.file_delete_delay_ms
                for segment in doomed:
                    self._deletions.schedule(segment.mark_deleted(), due)
                self._wants_rounds(self)
                kept.trim_files()
                kept.sync_log()
                kept.sync_indexes()
                self._files.retrying(lambda: fsync_dir(self.directory))
                self.leader_epochs.flush()
                producers = self._load_producers()
            except OSError as exc:
                with self._lock:
                    self.offline = True
                    self._roll_wanted = False
                raise self._fail("truncation", exc) from exc
            except StorageError:
                with self._lock:
                    self._roll_wanted = False
                raise
            with self._lock:
                self._producers = producers
                self._roll_wanted = False
        return True

    # flushing

    @blocking
    def flush(self) -> None:
        """fsync every segment up to the log end; move the recovery point there.

        One flush at a time: the kernel reports a lost write-back to one fsync
        only, so a second fsync running beside the one that fails could return
        success for records that are gone. Waiting its turn, it finds the log
        offline instead."""
        self.sync_rolled_segments()
        with self._flush_lock:
            try:
                with self._lock:
                    self._check_online()
                    segment = self._segments[-1]
                    handle = segment.open_file()
                    log_end = self._offsets.log_end
                    count = self._offsets.unflushed_records
                    # A roll since sync_rolled_segments: the rolled segment is not synced yet.
                    rolled = self._offsets.unsynced_rolls
                    durable_end = rolled[0].segment.base_offset if rolled else log_end
            except OSError as exc:
                raise self._fail("flush", exc) from exc
            try:
                segment.sync_log(handle)  # outside _lock: appends go on while the disk works
            except OSError as exc:
                raise self._fail_sync("flush", exc) from exc
            self._flush_leader_epochs()  # every epoch up to log_end is in it
            with self._lock:
                self._offsets.recovery_point = max(self._offsets.recovery_point, durable_end)
                self._offsets.unflushed_records -= count
                self._offsets.last_flush_ms = self.clock()

    def _flush_leader_epochs(self) -> None:
        """Write the leader epoch checkpoint if it changed (a worker thread's work)."""
        try:
            self.leader_epochs.flush()
        except OSError as exc:  # it stays dirty: the next flush writes it
            raise self._fail("leader epoch checkpoint", exc) from exc

    @blocking
    def flush_if_due(self) -> bool:
        """Flush when ``log.flush.interval.ms`` has passed with records unflushed;
        fsync segments rolled since the last call in any case."""
        offsets = self._offsets  # read unlocked: what changes meanwhile waits for the next round
        if not offsets.unsynced_rolls and (
            not offsets.unflushed_records
            or self.clock() - offsets.last_flush_ms < self.config.flush_interval_ms
        ):
            return False  # the common case, and all the lock below would find
        self.sync_rolled_segments()
        with self._lock:
            due = (
                self._offsets.unflushed_records > 0
                and self.clock() - self._offsets.last_flush_ms >= self.config.flush_interval_ms
            )
        if due:
            self.flush()
        return due

    @blocking
    def close(self) -> None:
        """Flush everything, including indexes, and let go of every file.

        An offline log raises StorageError: its files are not known to be whole,
        so the broker must not mark the shutdown clean (the next start recovers it).
        """
        try:
            if not self.offline:
                self.sync_rolled_segments()
            with self._lock:
                self._check_online()
                segment = self._segments[-1]
                segment.close_for_writing()  # nothing is appended from here on
                log_end = self._offsets.log_end
            try:  # outside the lock: readers go on while the disk works
                segment.write_closed()
                segment.sync_closed()
                self.leader_epochs.flush()
            except OSError as exc:
                raise self._fail("close", exc) from exc
            with self._lock:
                self._offsets.recovery_point = log_end
                self._offsets.unflushed_records = 0
        finally:
            for closed in self.segments:
                closed.release_files()

    # reads

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult | OffsetOutOfRange:
        """Whole batches from the one holding ``offset``, within ``max_bytes``.

        Batches at or beyond ``max_offset`` (the high watermark; the log end
        by default) are not returned. At least one batch is returned even when
        it exceeds ``max_bytes``, unless ``min_one_batch`` is false. Spans stay
        within one segment; the next read continues from where this one ended.
        """
        with self._lock:
            self._check_online()
            start, end = self._offsets.log_start, self._offsets.log_end
            high_watermark = end if max_offset is None else min(max_offset, end)
            if not start <= offset <= end:
                return OffsetOutOfRange(offset, start, end)
            try:
                spans = self._read_spans(offset, max_bytes, high_watermark, min_one_batch)
            except OSError as exc:
                raise self._fail("read", exc) from exc
            return ReadResult(spans, high_watermark, start, end)

    def _read_spans(
        self, offset: int, max_bytes: int, high_watermark: int, min_one_batch: bool
    ) -> list[FileSpan]:
        if offset >= high_watermark:
            return []
        first = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for index in range(first, len(self._segments)):
            segment = self._segments[index]
            found = segment.find_batch(offset)
            if found is None:
                continue  # the offset is past this segment's data (or compacted away)
            if found.header.base_offset >= high_watermark:
                return []
            end_of_data = segment.size
            is_last = index + 1 == len(self._segments)
            if high_watermark < self._offsets.log_end and (
                is_last or high_watermark < self._bases[index + 1]
            ):  # the high watermark falls in this segment: stop at its batch
                beyond = segment.find_batch(high_watermark, found.position)
                if beyond is not None:
                    end_of_data = beyond.position
            limit = min(found.position + max(max_bytes, 0), end_of_data)
            try:
                end = segment.boundary_at_or_below(limit, found.position)
            except OSError as exc:  # a header after this batch cannot be read
                if not is_unreadable_header(exc):
                    raise
                end = found.position  # this batch alone, below
            if end == found.position:
                if not min_one_batch:
                    return []
                end = found.position + found.header.size_bytes
                if end > end_of_data:
                    return []
            return [FileSpan(segment.open_file(), found.position, end - found.position)]
        return []

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """ListOffsets: earliest (-2), latest (-1), max timestamp (-3), or the
        first record whose timestamp is at least ``timestamp``."""
        with self._lock:  # the active segment's index changes under appends
            self._check_online()
            if timestamp == EARLIEST_TIMESTAMP:
                return TimestampOffset(NO_TIMESTAMP, self._offsets.log_start)
            if timestamp == LATEST_TIMESTAMP:
                return TimestampOffset(NO_TIMESTAMP, self._offsets.log_end)
            try:
                if timestamp == MAX_TIMESTAMP:
                    best = max(self._segments, key=lambda s: s.max_timestamp)
                    if best.max_timestamp < 0:
                        return None
                    return self._record_at_max_timestamp(best)
                return self._first_at_or_after(self._segments, timestamp)
            except OSError as exc:
                raise self._fail("timestamp lookup", exc) from exc

    def _record_at_max_timestamp(self, segment: LogSegment) -> TimestampOffset | None:
        """The first record carrying the segment's max timestamp (Kafka 3.8+): the
        batch holding it is decoded; a LogAppendTime batch answers with its base."""
        found = segment.find_batch(segment.offset_of_max_timestamp)
        if found is None:
            return None
        header = found.header
        if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return TimestampOffset(header.max_timestamp, header.base_offset)
        for record in self._records_of(segment, found):
            if record.timestamp == header.max_timestamp:
                return TimestampOffset(record.timestamp, record.offset)
        return TimestampOffset(header.max_timestamp, header.last_offset)

    def _records_of(self, segment: LogSegment, batch: BatchPosition) -> list[Record]:
        """The batch's records; none when they cannot be parsed (reported once)."""
        return self.parsed_records(segment.read_batch(batch), batch.header) or []

    def _first_at_or_after(
        self, segments: list[LogSegment], timestamp: int
    ) -> TimestampOffset | None:
        for segment in segments:
            if segment.max_timestamp < timestamp:
                continue
            _, indexed_offset = segment.time_index.lookup(timestamp)
            found = segment.find_batch(indexed_offset)
            if found is None:
                continue
            for batch in segment.batches_from(found.position):
                header = batch.header
                if header.max_timestamp < timestamp or header.last_offset < self._offsets.log_start:
                    continue
                start = self._offsets.log_start
                if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
                    return TimestampOffset(header.max_timestamp, max(header.base_offset, start))
                for record in self._records_of(segment, batch):
                    if record.timestamp >= timestamp and record.offset >= start:
                        return TimestampOffset(record.timestamp, record.offset)
        return None

    def batch_headers(self, newer_than_ms: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the batches in the log, oldest first, read header by header.

        Segments whose newest timestamp is known and at most ``newer_than_ms``
        are passed over, except the active one. Where a batch header cannot be
        read, the rest of its segment is skipped (reported once).
        """
        with self._lock:
            self._check_online()
            segments = [(segment, segment.size) for segment in self._segments]
        for index, (segment, end) in enumerate(segments):
            newest = segment.max_timestamp
            if (
                newer_than_ms is not None
                and index + 1 < len(segments)
                and 0 <= newest <= newer_than_ms
            ):
                continue
            try:
                for batch in segment.batches_from(0, end):
                    yield batch.header
            except OSError as exc:
                if not is_unreadable_header(exc):
                    raise self._fail("batch scan", exc) from exc
                self.report_unreadable_segment(segment.base_offset, str(exc))

    # retention

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (at most the log end)."""
        with self._lock:
            if offset > self._offsets.log_end:
                raise ValueError(f"offset {offset} is beyond the log end {self._offsets.log_end}")
            if offset > self._offsets.log_start:
                self._offsets.log_start = offset
                self.leader_epochs.truncate_from_start(offset)
            return self._offsets.log_start

    @blocking
    def delete_old_segments(self) -> int:
        """Remove whole segments past retention (time, size) or below the log
        start offset; never the active segment. Returns how many went."""
        if len(self._segments) < 2:  # the active segment alone (read unlocked: a
            return 0  # roll meanwhile is seen by the next round)
        now = self.clock()
        with self._lock:
            doomed = 0
            segments = self._segments
            while doomed + 1 < len(segments) and self._bases[doomed + 1] <= self._offsets.log_start:
                doomed += 1
            if self.config.delete and self.config.retention_ms >= 0:
                while doomed + 1 < len(segments) and self._expired(segments[doomed], now):
                    doomed += 1
            if self.config.delete and self.config.retention_bytes >= 0:
                excess = sum(s.size for s in segments) - self.config.retention_bytes
                excess -= sum(s.size for s in segments[:doomed])
                while doomed + 1 < len(segments) and excess - segments[doomed].size >= 0:
                    excess -= segments[doomed].size
                    doomed += 1
            if not doomed:
                return 0
            gone, self._segments = segments[:doomed], segments[doomed:]
            del self._bases[:doomed]
            if self._bases[0] > self._offsets.log_start:
                self._offsets.log_start = self._bases[0]
                self.leader_epochs.truncate_from_start(self._bases[0])
            due = now + self.config.file_delete_delay_ms
            for segment in gone:
                log.info("%s-%d: deleting segment %s", self.topic, self.partition, segment)
                try:
                    self._deletions.schedule(segment.mark_deleted(), due)
                except OSError as exc:
                    raise self._fail("segment deletion", exc) from exc
            self._wants_rounds(self)
            return doomed

    def _expired(self, segment: LogSegment, now: int) -> bool:
        newest = segment.max_timestamp
        if newest < 0:  # no timestamps at all: fall back to the file's age
            newest = int(os.stat(segment.log_path).st_mtime * 1000)
        return now - newest > self.config.retention_ms

    @blocking
    def remove_deleted_files(self) -> int:
        """Unlink ``.deleted`` files whose ``file.delete.delay.ms`` has passed."""
        deletions = self._deletions
        return deletions.remove_due(self.clock()) if deletions else 0

    # compaction support

    @blocking
    def swap_in_prepared(self, olds: list[LogSegment]) -> bool:
        """Replace consecutive segments ``olds`` by their compacted copy, made whole
        under ``.swap`` names (``<first base>.log.swap`` and its indexes, fsynced
        with the directory: :mod:`wirekafka.storage.compacted_copy`).

        Under the log's lock the segments are only checked and renamed: the
        old files become ``.deleted``, the copy's lose ``.swap``, and the copy
        takes the olds' place in the segment list. The directory's fsync comes
        after. A crash at any step is finished or undone when the log is next
        opened (a ``.log.swap`` replaces the segments its offsets reach into;
        ``.cleaned`` files and the copy's ``.swap`` indexes go, and its indexes
        are rebuilt). Returns False (and removes the copy) if any of ``olds``
        left the log meanwhile, by retention.

        Nothing the cleaner read can have changed: appends write only to the
        active segment, which a pass never rewrites (``olds`` are all before
        it), and only retention and compaction take segments out of the list.
        """
        base_offset = olds[0].base_offset
        if not self._holds(olds):
            remove_copy(self.directory, base_offset)
            return False
        try:
            new = LogSegment(
                self.directory, base_offset, self.config, self.clock(), self._files,
                file_suffix=SWAP_SUFFIX,
            )  # fmt: skip
            new.close_for_writing()
        except OSError as exc:
            remove_copy(self.directory, base_offset)
            raise self._fail("compaction swap", exc) from exc
        except ValueError as exc:  # an index of impossible size
            remove_copy(self.directory, base_offset)
            raise StorageError(self.topic, self.partition, f"compaction swap: {exc}") from exc
        with self._lock:
            gone = not self._holds_locked(olds)
            if not gone:
                first = self._segments.index(olds[0])
                try:
                    doomed = [path for old in olds for path in old.mark_deleted()]
                    new.replace_file_suffix(SWAP_SUFFIX, "")
                except OSError as exc:
                    raise self._fail("compaction swap", exc) from exc
                self._segments[first : first + len(olds)] = [new]
                self._bases[first : first + len(olds)] = [base_offset]
        if gone:
            new.release_files()
            remove_copy(self.directory, base_offset)
            return False
        self._deletions.schedule(doomed, self.clock() + self.config.file_delete_delay_ms)
        self._wants_rounds(self)
        try:
            fsync_dir(self.directory)
        except OSError as exc:  # swapped all the same; a crash before the next fsync is finished
            raise self._fail("compaction swap", exc) from exc  # when the log is next opened
        return True

    def _holds(self, segments: list[LogSegment]) -> bool:
        with self._lock:
            return self._holds_locked(segments)

    def _holds_locked(self, segments: list[LogSegment]) -> bool:
        """Whether ``segments`` are still consecutive inactive segments of the log
        (called with the lock held)."""
        present = self._segments
        if not all(segment in present for segment in segments):
            return False
        first = present.index(segments[0])
        if present[first : first + len(segments)] != segments:
            raise AssertionError("the segments to replace are not consecutive")
        return first + len(segments) < len(present)


def _writable(buffer: Buffer) -> bytearray | memoryview:
    """The buffer itself when it can be patched in place, else a copy that can."""
    if isinstance(buffer, bytearray) or (isinstance(buffer, memoryview) and not buffer.readonly):
        return buffer
    return bytearray(buffer)
