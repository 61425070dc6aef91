"""Compaction passes done by a child process: the same result as in the thread,
a child that dies is replaced, and the broker can end a pass under way."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import threading
import time

import pytest

from tests.storage.helpers import FakeClock
from tests.storage.test_cleaner import COMPACTED, new_log, surviving, write_updates
from wirekafka.storage.cleaner import clean_log
from wirekafka.storage.cleaner_process import CleanerProcess, CompactionStopped
from wirekafka.storage.compacted_copy import CompactionJob, Horizons
from wirekafka.storage.files import LOG_SUFFIX, segment_path
from wirekafka.storage.log import PartitionLog

KEYS = [b"k%02d" % i for i in range(12)]


@pytest.fixture
def cleaner():
    process = CleanerProcess()
    yield process
    process.close()


@dataclasses.dataclass
class Written:
    log: PartitionLog
    clock: FakeClock
    latest: dict[bytes, bytes | None]
    offsets: dict[bytes, int]


def written_log(path, seed) -> Written:
    """A compacted log of random updates, rolled: ready for a pass."""
    clock = FakeClock()
    log = new_log(path, clock)
    latest, offsets = write_updates(log, clock, random.Random(seed), 300, KEYS)
    log.roll()
    return Written(log, clock, latest, offsets)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_pass_in_the_child_compacts_as_one_in_this_thread(tmp_path, cleaner):
    written = written_log(tmp_path / "here", 21)
    here, latest, offsets = written.log, written.latest, written.offsets
    there = written_log(tmp_path / "there", 21).log
    expected = clean_log(here)
    assert expected.segments_rewritten > 1
    assert clean_log(there, run=cleaner.run) == expected
    assert cleaner.pid is not None and cleaner.pid != os.getpid()
    records = surviving(there)
    assert records == surviving(here)
    assert {r.key: r.value for r in records} == latest
    assert sorted(r.offset for r in records) == sorted(offsets.values())
    names = [path.name for path in (tmp_path / "there" / "c-0").iterdir()]
    assert not [name for name in names if name.endswith((".cleaned", ".swap"))]


def test_a_child_that_died_is_started_again(tmp_path, cleaner):
    written = written_log(tmp_path, 22)
    log = written.log
    first_dirty = clean_log(log, run=cleaner.run).first_dirty_offset
    first = cleaner.pid
    assert first is not None and first_dirty is not None
    os.kill(first, signal.SIGKILL)
    latest, _ = write_updates(log, written.clock, random.Random(23), 300, KEYS)
    log.roll()
    assert clean_log(log, first_dirty, run=cleaner.run).segments_rewritten > 0
    assert cleaner.pid not in (None, first)
    assert {r.key: r.value for r in surviving(log)} == {**written.latest, **latest}


def test_a_pass_that_raises_in_the_child_reports_its_traceback(tmp_path, cleaner):
    job = CompactionJob(tmp_path, (), 0, 1, Horizons(0, 0), COMPACTED)  # names no segment
    with pytest.raises(RuntimeError, match=r"(?s)the cleaner process failed:.*IndexError"):
        cleaner.run(job)
    # the child still serves: a segment that is not there ends a pass quietly
    assert cleaner.run(dataclasses.replace(job, segments=((0, 10), (10, 0)))).gone


def test_interrupt_ends_a_pass_under_way_and_refuses_the_next(tmp_path, cleaner):
    # the segment is a FIFO with no writer: the child waits in its open() until killed
    os.mkfifo(segment_path(tmp_path, 0, LOG_SUFFIX))
    job = CompactionJob(tmp_path, ((0, 100), (100, 0)), 0, 1, Horizons(0, 0), COMPACTED)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            cleaner.run(job)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while cleaner.pid is None and time.monotonic() < deadline:
        time.sleep(0.01)
    pid = cleaner.pid
    assert pid is not None
    cleaner.interrupt()
    thread.join(30)
    assert not thread.is_alive()
    assert [type(exc) for exc in raised] == [CompactionStopped]
    with pytest.raises(CompactionStopped):
        cleaner.run(job)
    cleaner.close()
    assert gone(pid)


def test_close_leaves_no_child(tmp_path, cleaner):
    clean_log(written_log(tmp_path, 24).log, run=cleaner.run)
    pid = cleaner.pid
    assert pid is not None
    cleaner.close()
    assert gone(pid) and cleaner.pid is None
