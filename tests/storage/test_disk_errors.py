"""Disk errors surface as StorageError for the partition and never damage what was written."""

from __future__ import annotations

import errno
import textwrap
import threading

import pytest

from tests.storage.helpers import FakeClock, make_batch, read_all, run_child
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import FileCache
from wirekafka.storage.log import PartitionLog, StorageError

# A child process whose files may not grow past a limit (RLIMIT_FSIZE): writes
# beyond it fail with EFBIG, a real OSError from the kernel, as a full disk would.
CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path
    from tests.storage.helpers import FakeClock, make_batch
    from wirekafka.storage.config import LogConfig
    from wirekafka.storage.log import PartitionLog, StorageError

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    log = PartitionLog(Path(sys.argv[1]), "t", 0, LogConfig(), FakeClock())
    for i in range(20):
        log.append(bytearray(make_batch(i, value_bytes=1000)))
    acknowledged = log.log_end_offset
    size = log.segments[-1].size
    limit = size + 4500  # room for one more batch and part of the next
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    errors = []
    for i in range(20, 25):
        try:
            log.append(bytearray(make_batch(i, value_bytes=1000)))
            acknowledged = log.log_end_offset
        except StorageError as exc:
            errors.append(str(exc))
    print(json.dumps({"acknowledged": acknowledged, "errors": errors,
                      "log_end": log.log_end_offset, "size": log.segments[-1].size,
                      "limit": limit}))
    """
)


def test_a_write_that_fails_midway_leaves_the_log_as_it_was(tmp_path):
    directory = tmp_path / "t-0"
    result = run_child(CHILD, directory, timeout_s=60)
    assert result["errors"], "no write failed: the limit did not bite"
    assert all("append failed" in e and "t-0" in e for e in result["errors"])
    assert result["log_end"] == result["acknowledged"] == 21 * 3
    assert result["size"] <= result["limit"]
    # The failed append was cut back: the file holds exactly the acknowledged batches.
    assert (directory / "00000000000000000000.log").stat().st_size == result["size"]
    reopened = PartitionLog(directory, "t", 0, LogConfig(), FakeClock(), clean_shutdown=False)
    assert reopened.log_end_offset == result["acknowledged"]
    batches = read_all(reopened)
    assert len(batches) == result["size"]


def test_a_vanished_segment_file_is_a_storage_error_on_read(tmp_path):
    # One descriptor kept: the first segment's file is closed by the time it is read.
    files = FileCache(1)
    log = PartitionLog(
        tmp_path / "t-0", "t", 0, LogConfig(segment_bytes=2000), FakeClock(), files=files
    )
    for i in range(20):
        log.append(bytearray(make_batch(i)))
    first = log.segments[0]
    first.log_path.unlink()
    with pytest.raises(StorageError, match="read failed"):
        log.read(0, 1000)
    # Other segments still read.
    assert log.read(log.segments[1].base_offset, 1000).spans


def test_a_flush_beside_one_that_fails_does_not_succeed(tmp_path, monkeypatch):
    """Linux reports a lost write-back to one fsync only: a second fsync of the file
    running at the same time returns 0 with the records gone. The fake fsync here
    fails the first call (after giving a second one a chance to start) and lets any
    other succeed, as the kernel would; both flushes must fail."""
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(), FakeClock())
    log.append(bytearray(make_batch(0)))
    calls: list[int] = []
    first_started, second_started = threading.Event(), threading.Event()

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            first_started.set()
            second_started.wait(1.0)
            raise OSError(errno.EIO, "Input/output error")
        second_started.set()

    monkeypatch.setattr("wirekafka.storage.segment.os.fsync", fsync)
    outcomes: list[str] = []

    def flush() -> None:
        try:
            log.flush()
            outcomes.append("flushed")
        except StorageError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=flush) for _ in range(2)]
    threads[0].start()
    assert first_started.wait(10)  # the first is in its fsync before the second starts
    threads[1].start()
    for thread in threads:
        thread.join(10)
    assert len(outcomes) == 2
    assert "flushed" not in outcomes, outcomes
    assert log.offline
