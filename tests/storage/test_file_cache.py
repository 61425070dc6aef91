"""The file cache: log storage keeps at most so many descriptors open, reopens
what it let go of, never closes a file a span still reads, and meets a process
out of descriptors with a retriable error, not an offline partition."""

from __future__ import annotations

import os
import random
import socket
import textwrap
from pathlib import Path

import pytest

from tests.storage.helpers import FakeClock, make_batch, read_all, run_child
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import FileCache
from wirekafka.storage.log import PartitionLog, ReadResult
from wirekafka.storage.log_manager import LogManager

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=500)


def open_fds_under(directory: Path) -> list[str]:
    """What this process's descriptors under ``directory`` point at (index maps included:
    an mmap holds a descriptor of its own)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own descriptor, gone already
            continue
        if target.startswith(f"{directory}/"):
            found.append(target)
    return found


def logs_sharing(tmp_path: Path, files: FileCache, count: int) -> list[PartitionLog]:
    return [
        PartitionLog(tmp_path / f"t-{n}", "t", n, CONFIG, FakeClock(), files=files)
        for n in range(count)
    ]


def fill(logs: list[PartitionLog], batches_each: int) -> dict[int, bytes]:
    """Append to the logs in turn; what each holds, as read_all returns it."""
    expected: dict[int, bytearray] = {log.partition: bytearray() for log in logs}
    for i in range(batches_each):
        for log in logs:
            batch = bytearray(make_batch(i * 100 + log.partition, value_bytes=150))
            log.append(batch)  # patched in place: batch now carries its offsets
            expected[log.partition] += batch
    return {partition: bytes(data) for partition, data in expected.items()}


def test_no_more_descriptors_than_the_capacity_stay_open(tmp_path):
    files = FileCache(5)
    logs = logs_sharing(tmp_path, files, 12)
    expected = fill(logs, 20)
    assert all(len(log.segments) > 2 for log in logs)  # rolled segments, with indexes
    assert len(files) <= 5
    assert len(open_fds_under(tmp_path)) <= 5
    for log in logs:
        assert read_all(log) == expected[log.partition]
        for offset in range(0, log.log_end_offset, 7):  # index lookups in every segment
            assert isinstance(log.read(offset, 100), ReadResult)
        assert len(open_fds_under(tmp_path)) <= 5
    assert files.evictions > 12


def test_files_let_go_of_are_reopened_for_appends_reads_and_lookups(tmp_path):
    files = FileCache(1)  # every use of another file closes the last one
    logs = logs_sharing(tmp_path, files, 4)
    expected = fill(logs, 30)
    rng = random.Random(7)
    for _ in range(200):
        log = rng.choice(logs)
        offset = rng.randrange(log.log_end_offset)
        result = log.read(offset, 1)
        assert isinstance(result, ReadResult)
        [span] = result.spans
        data = span.read_bytes()
        first_offset = int.from_bytes(data[:8], "big")
        last_offset = first_offset + int.from_bytes(data[23:27], "big")
        assert first_offset <= offset <= last_offset
        assert data in expected[log.partition]
        found = log.offset_for_timestamp(int.from_bytes(data[27:35], "big"))  # base timestamp
        assert found is not None and found.offset == first_offset  # timestamps only grow
    del span, result  # the last read's span holds its file open
    for log in logs:
        assert read_all(log) == expected[log.partition]
        assert not log.offline
    assert len(open_fds_under(tmp_path)) <= 1
    for log in logs:
        log.close()
    assert open_fds_under(tmp_path) == []
    reopened = logs_sharing(tmp_path, FileCache(1), 4)
    for log in reopened:  # closed cleanly: no preallocated zeros, indexes whole
        assert read_all(log) == expected[log.partition]
        assert all(s.log_path.stat().st_size == s.size for s in log.segments)
        assert all(s.check_indexes() for s in log.segments)


def test_a_span_keeps_its_file_after_the_cache_lets_go(tmp_path):
    files = FileCache(2)
    logs = logs_sharing(tmp_path, files, 6)
    expected = fill(logs, 20)
    first = logs[0]
    result = first.read(0, 1 << 20)
    assert isinstance(result, ReadResult)
    [span] = result.spans
    path = str(first.segments[0].log_path)
    fd = span.fileno()
    for log in logs[1:]:  # other files take the cache's two places, again and again
        read_all(log)
        fill([log], 2)
    assert open_fds_under(tmp_path).count(path) == 1  # the span's, nothing else's
    assert os.readlink(f"/proc/self/fd/{fd}") == path  # the number was not reused
    sender, receiver = socket.socketpair()
    with sender, receiver:
        sent = os.sendfile(sender.fileno(), span.fileno(), span.position, span.size_bytes)
        assert sent == span.size_bytes
        received = b""
        while len(received) < sent:
            received += receiver.recv(sent - len(received))
    assert received == span.read_bytes() == expected[0][: span.size_bytes]
    del span, result
    assert path not in open_fds_under(tmp_path)  # the last holder closed it


def test_a_log_manager_shares_one_cache_of_its_budget(tmp_path):
    manager = LogManager([tmp_path], CONFIG, FakeClock(), broker_id=1, open_files=3)
    manager.startup()
    logs = [manager.get_or_create_log("t", n) for n in range(8)]
    expected = fill(logs, 10)
    assert manager.files.capacity == 3
    assert len(open_fds_under(tmp_path)) <= 3
    assert manager.shutdown()
    assert open_fds_under(tmp_path) == []
    again = LogManager([tmp_path], CONFIG, FakeClock(), broker_id=1, open_files=3)
    again.startup()  # loading keeps no descriptor per partition or segment
    assert len(open_fds_under(tmp_path)) <= 3
    for log in again.all_logs():
        assert read_all(log) == expected[log.partition]


# A child process with a low RLIMIT_NOFILE: real EMFILE from the kernel.
CHILD_PRELUDE = """
import json, os, resource, sys
from pathlib import Path
from tests.storage.helpers import FakeClock, make_batch, read_all
from wirekafka.storage.config import LogConfig
from wirekafka.storage.file_cache import FileCache
from wirekafka.storage.log import PartitionLog, StorageError

root = Path(sys.argv[1])
config = LogConfig(segment_bytes=3000, index_interval_bytes=500)

def limit_to(spare):
    in_use = len(os.listdir("/proc/self/fd"))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + spare, hard))

def error_of(action):
    try:
        action()
    except StorageError as exc:
        return str(exc)
    return None
"""

SHED_CHILD = CHILD_PRELUDE + textwrap.dedent(
    """
    files = FileCache(1000)  # more than the process may open
    limit_to(24)
    logs = [PartitionLog(root / f"t-{n}", "t", n, config, FakeClock(), files=files)
            for n in range(40)]
    expected = {log.partition: bytearray() for log in logs}
    for i in range(12):
        for log in logs:
            batch = bytearray(make_batch(i * 100 + log.partition, value_bytes=150))
            log.append(batch)
            expected[log.partition] += batch
    same = all(read_all(log) == expected[log.partition] for log in logs)
    print(json.dumps({"same": same, "evictions": files.evictions, "cached": len(files),
                      "offline": [log.partition for log in logs if log.offline],
                      "segments": min(len(log.segments) for log in logs)}))
    """
)


def test_out_of_descriptors_the_cache_sheds_and_the_open_is_tried_again(tmp_path):
    result = run_child(SHED_CHILD, tmp_path)
    assert result["segments"] > 2
    assert result["evictions"] > 0  # only EMFILE made the cache let go: it had room for all
    assert result["cached"] <= 24
    assert result["same"]
    assert result["offline"] == []


EXHAUSTED_CHILD = CHILD_PRELUDE + textwrap.dedent(
    """
    files = FileCache(8)
    rolling = PartitionLog(root / "t-0", "t", 0, config, FakeClock(), files=files)
    plain = PartitionLog(root / "t-1", "t", 1, config, FakeClock(), files=files)
    batch = make_batch(0, value_bytes=150)
    small = make_batch(1, records=1, value_bytes=1)
    expected = {0: bytearray(), 1: bytearray(), 2: bytearray()}

    def append(log, what=batch):
        data = bytearray(what)
        log.append(data)
        expected[log.partition] += data

    while len(rolling.segments) < 2:  # a roll not yet fsynced
        append(rolling)
    while rolling.segments[-1].size + len(batch) <= config.segment_bytes:
        append(rolling, small)  # until a batch rolls the segment, and a small one does not
    append(plain)
    written = PartitionLog(root / "t-2", "t", 2, config, FakeClock(), files=files)
    while len(written.segments) < 2:
        append(written)
    # Written out already: its flush needs descriptors only for the fsync.
    written.segments[0].write_closed()
    point = rolling.recovery_point
    while files.shed():  # every descriptor the cache held goes
        pass
    limit_to(8)
    hogs = []
    while True:
        try:
            hogs.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            break
    report = {
        "roll": error_of(lambda: append(rolling)),
        "append": error_of(lambda: append(plain)),
        "flush": error_of(rolling.flush),
        "fsync": error_of(written.flush),
        "read": error_of(lambda: rolling.read(0, 1000)),
        "segments_after_failed_roll": len(rolling.segments),
        "point_unchanged": rolling.recovery_point == point,
        "offline_when_exhausted": [rolling.offline, plain.offline, written.offline],
    }
    for fd in hogs:
        os.close(fd)
    append(rolling, small)  # into the segment that stayed active
    report["segments_after_small"] = len(rolling.segments)
    append(rolling)
    append(plain)
    for log in (rolling, plain, written):
        log.flush()
    report["segments_after"] = len(rolling.segments)
    report["synced_to_end"] = all(
        log.recovery_point == log.log_end_offset for log in (rolling, plain, written)
    )
    report["offline_after"] = [rolling.offline, plain.offline, written.offline]
    for log in (rolling, plain, written):
        log.close()
    # The roll whose fsync failed was tried again: its index entries are in the files.
    report["indexes_written"] = [
        index.path.stat().st_size == index.entries * index.ENTRY.size
        for segment in rolling.segments
        for index in (segment.offset_index, segment.time_index)
    ]
    report["same_after_restart"] = all(
        read_all(PartitionLog(root / f"t-{n}", "t", n, config, FakeClock())) == expected[n]
        for n in (0, 1, 2)
    )
    print(json.dumps(report))
    """
)


def test_out_of_descriptors_is_a_retriable_error_and_no_partition_goes_offline(tmp_path):
    report = run_child(EXHAUSTED_CHILD, tmp_path)
    for action in ("roll", "append", "flush", "fsync", "read"):
        assert "the broker is out of file descriptors" in report[action], (action, report)
    assert report["roll"].startswith("t-0: roll failed")
    assert report["append"].startswith("t-1: append failed")
    assert report["flush"].startswith("t-0: writing out a rolled segment failed")
    assert report["fsync"].startswith("t-2: fsync of a rolled segment failed")
    assert report["segments_after_failed_roll"] == 2  # the old segment stayed active
    assert report["point_unchanged"]
    assert report["offline_when_exhausted"] == [False, False, False]
    # Once descriptors are free the same requests work, and nothing was lost.
    assert report["segments_after_small"] == 2
    assert report["segments_after"] == 3
    assert report["synced_to_end"]
    assert report["offline_after"] == [False, False, False]
    assert report["indexes_written"] == [True] * 6
    assert report["same_after_restart"]


@pytest.mark.parametrize("capacity", [0, -1])
def test_a_cache_holds_at_least_one(capacity):
    with pytest.raises(ValueError, match="at least one"):
        FileCache(capacity)
