"""A partition's leader epochs: the first offset each leader epoch wrote.

A leader stamps its epoch on the batches it appends (the batch header's
``partition_leader_epoch``), and the partition remembers where each epoch
began. A follower that comes back after a leader change asks the leader where
its own latest epoch ended (OffsetForLeaderEpoch, KIP-101 and KIP-279) and cuts
its log there, so it never keeps records the new leader does not have.

The map lives in memory and in ``leader-epoch-checkpoint`` in the partition
directory, Kafka's text format::

    0                   version
    2                   number of entries
    0 0                 <epoch> <start offset>, epochs and offsets increasing
    3 1742

Appends change the map on the event loop (:meth:`LeaderEpochCache.assign`
only marks it dirty); the file is rewritten by :meth:`LeaderEpochCache.flush`
in a worker thread, when the log flushes. A file that cannot be read raises
:class:`CorruptLeaderEpochCheckpointError`; the log then builds the map again
from its batches.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

from wirekafka.storage.files import write_atomically
from wirekafka.worker_threads import blocking

LEADER_EPOCH_CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_EPOCH = attrgetter("epoch")
_START = attrgetter("start_offset")


class CorruptLeaderEpochCheckpointError(ValueError):
    """``leader-epoch-checkpoint`` is not in Kafka's format; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """Leader epoch ``epoch`` wrote its first record at ``start_offset``."""

    epoch: int
    start_offset: int


class LeaderEpochCache:
    """The leader epoch → start offset map of one partition, and its checkpoint file.

    Entries are kept with both epochs and start offsets strictly increasing.
    Methods other than :meth:`load` and :meth:`flush` touch memory only and
    may run on the event loop; a lock of the cache's own, held for a few list
    operations, lets a worker thread flush while appends assign.
    """

    def __init__(
        self, path: Path, entries: Iterable[EpochEntry] = (), *, dirty: bool = False
    ) -> None:
        """``dirty``: the file does not hold ``entries`` (the next flush writes it)."""
        self.path = path
        self._entries = list(entries)
        self._latest_epoch = self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH
        self._dirty = dirty
        self._lock = threading.Lock()  # of the fields above, for list operations only
        self._flush_lock = threading.Lock()  # one write of the file at a time

    def __repr__(self) -> str:
        pairs = ", ".join(f"{e.epoch}@{e.start_offset}" for e in self.entries)
        return f"LeaderEpochCache({self.path}, [{pairs}])"

    @classmethod
    @blocking
    def load(cls, path: Path) -> LeaderEpochCache:
        """The cache held by the checkpoint file at ``path``; empty when there is none.

        Raises CorruptLeaderEpochCheckpointError, naming the file and the line,
        when the file is not a version-0 checkpoint whose entry count matches
        its lines and whose epochs and start offsets increase.
        """
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            return cls(path)
        except UnicodeDecodeError as exc:
            raise CorruptLeaderEpochCheckpointError(f"{path}: not a text file ({exc})") from exc
        return cls(path, _parse(path, text.splitlines()))

    # reading

    @property
    def latest_epoch(self) -> int:
        """The highest epoch recorded; -1 when there is none."""
        return self._latest_epoch

    @property
    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, oldest epoch first."""
        with self._lock:
            return list(self._entries)

    @property
    def dirty(self) -> bool:
        """Whether the entries changed since the file was last written."""
        return self._dirty

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetForLeaderEpoch for ``requested_epoch``.

        * the latest epoch ends at the log end: ``(latest, log_end_offset)``;
        * an epoch above every known one, an undefined (negative) one, or any
          epoch when the cache is empty: ``(-1, -1)``;
        * otherwise the epoch ends where the first epoch above it starts, and
          the answer names the largest known epoch at or below the one asked
          for (the one asked for when it is below every known epoch): a
          follower truncates to that offset and asks again for that epoch.
        """
        if requested_epoch < 0:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        with self._lock:
            entries = self._entries
            if entries and entries[-1].epoch == requested_epoch:
                return requested_epoch, log_end_offset
            higher = bisect.bisect_right(entries, requested_epoch, key=_EPOCH)
            if higher == len(entries):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            end_offset = entries[higher].start_offset
            if higher == 0:
                return requested_epoch, end_offset
            return entries[higher - 1].epoch, end_offset

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch the record at ``offset`` was written in: the latest epoch
        starting at or before it; -1 when none does."""
        with self._lock:
            entries = self._entries
            at = bisect.bisect_right(entries, offset, key=_START)
            return entries[at - 1].epoch if at else UNDEFINED_EPOCH

    # changes (memory only)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``, when it is above the
        latest epoch; whether it was recorded. Earlier entries whose start offset
        is not below ``start_offset`` are dropped (no record of theirs remains
        before the new epoch's). Negative epochs (batches no leader stamped)
        and epochs at or below the latest are ignored. No I/O: :meth:`flush`
        writes the file."""
        if epoch <= self._latest_epoch:  # nearly every append: the epoch it already knows
            return False
        if start_offset < 0:
            raise ValueError(f"leader epoch {epoch} cannot start at offset {start_offset}")
        with self._lock:
            if epoch <= self._latest_epoch:
                return False
            entries = self._entries
            while entries and entries[-1].start_offset >= start_offset:
                entries.pop()
            entries.append(EpochEntry(epoch, start_offset))
            self._latest_epoch = epoch
            self._dirty = True
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after ``end_offset`` (the log was cut there)."""
        with self._lock:
            entries = self._entries
            if not entries or entries[-1].start_offset < end_offset:
                return
            del entries[bisect.bisect_left(entries, end_offset, key=_START) :]
            self._latest_epoch = entries[-1].epoch if entries else UNDEFINED_EPOCH
            self._dirty = True

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: entries wholly before it go,
        and the one spanning it starts there."""
        with self._lock:
            entries = self._entries
            spanning = bisect.bisect_right(entries, start_offset, key=_START)
            if not spanning or (spanning == 1 and entries[0].start_offset == start_offset):
                return
            entries[:spanning] = [EpochEntry(entries[spanning - 1].epoch, start_offset)]
            self._dirty = True

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            if self._entries:
                self._entries.clear()
                self._latest_epoch = UNDEFINED_EPOCH
                self._dirty = True

    # the file

    @blocking
    def flush(self) -> bool:
        """Write the checkpoint file when the entries changed since the last write
        (a temp file, fsynced, renamed over the old one, the directory fsynced);
        whether it was written. On failure the cache stays dirty."""
        with self._flush_lock:
            with self._lock:
                if not self._dirty:
                    return False
                entries = list(self._entries)
                self._dirty = False
            lines = [str(LEADER_EPOCH_CHECKPOINT_VERSION), str(len(entries))]
            lines += [f"{entry.epoch} {entry.start_offset}" for entry in entries]
            try:
                write_atomically(self.path, ("\n".join(lines) + "\n").encode("ascii"))
            except BaseException:
                with self._lock:
                    self._dirty = True
                raise
        return True


def _parse(path: Path, lines: list[str]) -> list[EpochEntry]:
    def corrupt(number: int, problem: str) -> CorruptLeaderEpochCheckpointError:
        return CorruptLeaderEpochCheckpointError(f"{path}: line {number}: {problem}")

    def integer(number: int, text: str, what: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise corrupt(number, f"{what} {text!r} is not an integer") from None

    if not lines:
        raise corrupt(1, "the file is empty, expected the version")
    version = integer(1, lines[0].strip(), "version")
    if version != LEADER_EPOCH_CHECKPOINT_VERSION:
        raise corrupt(1, f"unknown version {version}, expected {LEADER_EPOCH_CHECKPOINT_VERSION}")
    if len(lines) < 2:
        raise corrupt(2, "missing, expected the number of entries")
    count = integer(2, lines[1].strip(), "entry count")
    if count < 0:
        raise corrupt(2, f"negative entry count {count}")
    entries: list[EpochEntry] = []
    for number, line in enumerate(lines[2:], start=3):
        if not line.strip():
            continue
        if len(entries) == count:
            raise corrupt(number, f"more entries than the {count} the file announces")
        fields = line.split()
        if len(fields) != 2:
            raise corrupt(number, f"expected '<epoch> <start offset>', found {line!r}")
        epoch = integer(number, fields[0], "epoch")
        start_offset = integer(number, fields[1], "start offset")
        if epoch < 0 or start_offset < 0:
            raise corrupt(number, f"negative epoch or offset in {line!r}")
        if entries and (epoch <= entries[-1].epoch or start_offset <= entries[-1].start_offset):
            raise corrupt(
                number,
                f"epoch {epoch} at offset {start_offset} does not follow "
                f"epoch {entries[-1].epoch} at offset {entries[-1].start_offset}",
            )
        entries.append(EpochEntry(epoch, start_offset))
    if len(entries) != count:
        raise corrupt(
            len(lines) + 1,
            f"the file ends after {len(entries)} of the {count} entries it announces",
        )
    return entries
