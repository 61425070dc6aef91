"""File names in a log dir, and writing small files so a crash never leaves half of one.

Names follow Kafka's: segments are named by their base offset in 20 digits
(``00000000000000000042.log`` with its ``.index`` and ``.timeindex``), files
being replaced carry ``.cleaned`` or ``.swap``, files awaiting removal
``.deleted``, and half-written small files ``.tmp``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

from wirekafka.worker_threads import blocking

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TEMP_SUFFIX = ".tmp"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
META_PROPERTIES_FILE = "meta.properties"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"  # high watermarks
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"  # in each partition directory


def offset_prefix(offset: int) -> str:
    return f"{offset:020d}"


def segment_path(partition_dir: Path, base_offset: int, suffix: str) -> Path:
    return partition_dir / (offset_prefix(base_offset) + suffix)


def base_offset_of(path: Path) -> int | None:
    """The base offset a segment file is named by, or None for other files."""
    stem = path.name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    topic, sep, number = name.rpartition("-")
    if not sep or not topic or not number.isdigit():
        return None
    return topic, int(number)


@blocking
def fsync_dir(directory: Path) -> None:
    """Make a directory's entries (created, renamed, removed files) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@blocking
def write_synced(
    path: Path, chunks: Iterable[bytes], mode: int = 0o644, *, sync_every_bytes: int = 0
) -> None:
    """Create (or replace) ``path`` holding ``chunks``, and fsync it; a new file gets
    ``mode``. With ``sync_every_bytes``, the data is also synced each time that much
    more is written, so that no one sync has a big file's worth to flush (on ext4
    such a sync holds up the journal, and with it every other file's appends)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        unsynced = 0
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                written = os.write(fd, view)
                view = view[written:]
                unsynced += written
            if sync_every_bytes and unsynced >= sync_every_bytes:
                os.fdatasync(fd)
                unsynced = 0
        os.fsync(fd)
    finally:
        os.close(fd)


@blocking
def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``path`` so that after a crash it holds either the old or the new bytes.

    The bytes go to ``path.tmp``, are fsynced, and the temp file is renamed
    over ``path``; the directory is fsynced so the rename survives power loss.
    """
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()  # left by a crash, perhaps with another mode
    write_synced(temp, [data], mode)
    os.replace(temp, path)
    fsync_dir(path.parent)


class DelayedDeletions:
    """Files and directories to remove once their delay has passed.

    Segments and partitions are renamed (``.deleted``, ``-delete``) when they
    go, and removed only after ``file.delete.delay.ms``, so readers that
    still hold them finish first.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[tuple[int, list[Path]]] = []

    def __len__(self) -> int:
        """Groups waiting for their time (read unlocked: a maintenance round's first look)."""
        return len(self._pending)

    def schedule(self, paths: list[Path], due_ms: int) -> None:
        with self._lock:
            self._pending.append((due_ms, paths))

    @blocking
    def remove_due(self, now_ms: int) -> int:
        """Remove every group whose time has come; return how many groups went."""
        with self._lock:
            due = [paths for when, paths in self._pending if when <= now_ms]
            self._pending = [(when, paths) for when, paths in self._pending if when > now_ms]
        for paths in due:
            for path in paths:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
        return len(due)
