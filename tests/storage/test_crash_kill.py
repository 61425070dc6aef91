"""SIGKILL a process appending to a log, again and again; nothing fsynced may be lost.

From the issue: a subprocess appending in a loop is killed with SIGKILL at random
moments (at least 20 times); after each restart the log is a valid prefix of what
was appended, and every append acknowledged after an fsync is present.

Each round starts ``crash_appender`` on the same log dir; it carries on from the
log end, appending the deterministic batches of :class:`BatchPlan`, flushing
every few appends and printing ``FSYNCED <offset>`` after each flush. The round
kills it at a moment chosen by its kill mode:

* ``random``: 20-300 ms after it reported the log open;
* ``fsync``: as soon as a new ``FSYNCED`` line arrives (right after a flush);
* ``roll``: at once or within 1 ms of a new ``ROLLING`` line (an append about to
  roll a segment, which fsyncs the old segment and creates three files);
* ``startup``: 0-250 ms after the process started, often while it is still
  opening (and recovering) the log.

The test then opens the log dir through ``LogManager.startup()``, which must find
no clean-shutdown marker and recover, and checks that everything read back from
offset 0 is byte for byte the deterministic batches (base offsets contiguous
from 0, every CRC good), that the log end is at least the last ``FSYNCED``
offset and at least every offset already verified and durable, and that index
lookups at random offsets land in the right batch. Then it either shuts the
manager down cleanly (so the next appender trusts the log) or closes the logs
without the marker (so the next appender recovers). In some rounds it checks a
copy instead, leaving the original as the kill left it for the appender's own
recovery; the appender's reported log end must then equal the copy's.

A SIGKILL cannot lose what ``write`` put in the page cache; it tears a batch only
when it lands inside a multi-page ``pwrite``, which is rare. To drive recovery's
truncation too, the rounds marked in ``CHECKS`` also simulate what a power failure
could do to unsynced data: the active segment is cut, or zero-filled, at a random
point after the last byte known to be durable. (Neither can show a missing fsync:
the page cache survives a SIGKILL.)
"""

from __future__ import annotations

import bisect
import itertools
import logging
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.storage.crash_appender import (
    BROKER_ID,
    PARTITION,
    TOPIC,
    BatchPlan,
    crash_log_config,
)
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.record_batch import (
    HEADER_BYTES,
    crc_matches,
    iter_batches,
    read_batch_header,
    set_base_offset,
)
from wirekafka.storage.files import CLEAN_SHUTDOWN_FILE, LOG_SUFFIX, partition_dir_name
from wirekafka.storage.log import OffsetOutOfRange, PartitionLog, ReadResult
from wirekafka.storage.log_manager import LogManager

ROOT = Path(__file__).resolve().parents[2]
SEED = 20_241_121
KILL_MODES = ["random"] * 11 + ["fsync"] * 5 + ["roll"] * 5 + ["startup"] * 3
# Per round: (simulate a torn unsynced tail, check a copy and leave the original to the
# appender's own recovery). Both together are what tests the appender's recovery of a tear.
CHECKS = [(True, True)] * 4 + [(True, False)] * 4 + [(False, True)] * 4 + [(False, False)] * 12
FLUSH_EVERY = (1, 3, 8, 32)
READY_TIMEOUT_S = 20.0
LINE_TIMEOUT_S = 10.0
EXIT_TIMEOUT_S = 10.0
APPENDER_MAX_SECONDS = 30.0  # it stops by itself (and the round fails) if never killed
INDEX_PROBES = 16


def _clock_ms() -> int:
    return time.time_ns() // 1_000_000


# the appender process


class Appender:
    """One run of ``crash_appender``; its stdout lines are collected by a thread."""

    def __init__(self, log_dir: Path, seed: int, flush_every: int, stderr_path: Path) -> None:
        self._stderr_path = stderr_path
        self._stderr = stderr_path.open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.storage.crash_appender",
                str(log_dir),
                str(seed),
                "--flush-every",
                str(flush_every),
                "--checkpoint-every",
                "10",
                "--max-seconds",
                str(APPENDER_MAX_SECONDS),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.lines: list[str] = []
        self._code: int | None = None
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def _drain(self) -> bool:
        """Take the lines already read; whether the output has ended."""
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return False
            if line is None:
                return True
            self.lines.append(line)

    def wait_for(self, prefix: str, timeout: float, *, fresh: bool = False) -> str:
        """The next line starting with ``prefix``; fails on timeout or exit.

        With ``fresh``, lines already printed are passed over: the line must
        come after this call, so that a kill on seeing it follows it closely.
        """
        deadline = time.monotonic() + timeout
        if fresh and self._drain():
            pytest.fail(f"the appender exited before a {prefix} line{self.stderr()}")
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                pytest.fail(f"no {prefix} line from the appender in {timeout} s{self.stderr()}")
            if line is None:
                pytest.fail(f"the appender exited before a {prefix} line{self.stderr()}")
            self.lines.append(line)
            if line.startswith(prefix):
                return line

    def kill(self) -> int:
        """SIGKILL it (if still running), wait for it and its output; its return code."""
        if self._code is None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGKILL)
            try:
                self._code = self.process.wait(timeout=EXIT_TIMEOUT_S)
            finally:
                self._stderr.close()
            self._reader.join(timeout=EXIT_TIMEOUT_S)
            assert not self._reader.is_alive(), "the appender's stdout did not close"
            self._drain()
            assert self.process.stdout is not None
            self.process.stdout.close()
        return self._code

    def stderr(self) -> str:
        text = self._stderr_path.read_text() if self._stderr_path.exists() else ""
        return f"\nappender stderr:\n{text[-4000:]}" if text.strip() else ""


@dataclass(frozen=True)
class AppenderOutput:
    ready_offset: int | None  # the log end it found on opening the log
    last_fsynced: int | None
    last_rolling: int | None  # the batch of the last ROLLING line, when it is the last line

    @classmethod
    def parse(cls, lines: list[str]) -> AppenderOutput:
        ready = fsynced = None
        for line in lines:
            word, *values = line.split()
            if word == "READY":
                ready = int(values[0])
            elif word == "FSYNCED":
                fsynced = int(values[0])
            elif word not in ("ROLLING", "STOPPED"):
                raise AssertionError(f"unexpected line from the appender: {line!r}")
        last = lines[-1].split() if lines else []
        rolling = int(last[1]) if last and last[0] == "ROLLING" else None
        return cls(ready, fsynced, rolling)


def run_and_kill(appender: Appender, mode: str, rng: random.Random) -> None:
    try:
        if mode == "startup":
            time.sleep(rng.uniform(0.0, 0.25))
        else:
            appender.wait_for("READY", READY_TIMEOUT_S)
            if mode == "random":
                time.sleep(rng.uniform(0.02, 0.3))
            elif mode == "fsync":
                time.sleep(rng.uniform(0.0, 0.2))
                appender.wait_for("FSYNCED", LINE_TIMEOUT_S, fresh=True)
            elif mode == "roll":
                time.sleep(rng.uniform(0.0, 0.2))
                delay = rng.choice((0.0, rng.uniform(0.0, 0.001)))
                appender.wait_for("ROLLING", LINE_TIMEOUT_S, fresh=True)
                if delay:
                    time.sleep(delay)
            else:
                raise AssertionError(mode)
    finally:
        code = appender.kill()
    assert code == -signal.SIGKILL, f"the appender ended with {code}, not by SIGKILL" + (
        appender.stderr()
    )


# what the log should hold


class ExpectedLog:
    """The deterministic batches end to end, with the base offsets the log assigns."""

    def __init__(self, plan: BatchPlan) -> None:
        self.plan = plan
        self.data = bytearray()
        self.batch_ends: list[int] = []  # byte position after batch i

    def _extend_to(self, size: int) -> None:
        while len(self.data) < size:
            index = len(self.batch_ends)
            batch = bytearray(self.plan.batch(index))
            set_base_offset(batch, 0, self.plan.first_offset(index))
            self.data += batch
            self.batch_ends.append(len(self.data))

    def check_prefix(self, actual: bytes) -> int:
        """How many whole batches ``actual`` is; fails unless it is a prefix of them."""
        self._extend_to(len(actual))
        if actual != self.data[: len(actual)]:
            pytest.fail("the log is not a prefix of what was appended: " + self._where(actual))
        batches = bisect.bisect_left(self.batch_ends, len(actual))
        if len(actual) and self.batch_ends[batches] != len(actual):
            pytest.fail(f"the log ends inside batch {batches}, at byte {len(actual)}")
        return batches + 1 if len(actual) else 0

    def _where(self, actual: bytes) -> str:
        position = next(
            i for i, (a, b) in enumerate(zip(actual, self.data, strict=False)) if a != b
        )
        index = bisect.bisect_right(self.batch_ends, position)
        start = self.batch_ends[index - 1] if index else 0
        got = (
            read_batch_header(actual, start, whole=False)
            if start + HEADER_BYTES <= len(actual)
            else None
        )
        return (
            f"first difference at byte {position}, {position - start} bytes into batch {index} "
            f"(offset {self.plan.first_offset(index)}); the log's batch there: {got}"
        )


def read_whole_log(log: PartitionLog) -> tuple[bytes, int]:
    """Every batch from offset 0 through the read API: bytes and batch count.

    Checks on the way that base offsets run on contiguously from 0 and every
    batch passes its CRC.
    """
    chunks: list[bytes] = []
    offset = batches = 0
    while offset < log.log_end_offset:
        result = log.read(offset, 256 * 1024)
        assert isinstance(result, ReadResult), f"read at {offset}: {result}"
        assert result.spans, f"read at {offset} returned nothing below the log end"
        for span in result.spans:
            data = span.read_bytes()
            try:
                found = list(iter_batches(data))
            except ProtocolError as exc:
                pytest.fail(f"unreadable batches in the read at offset {offset}: {exc}")
            for position, header in found:
                assert header.base_offset == offset, (
                    f"batch {batches} has base offset {header.base_offset}, expected {offset}"
                )
                assert crc_matches(data, position, header), f"batch at offset {offset} fails CRC"
                offset = header.next_offset
                batches += 1
            chunks.append(data)
    assert offset == log.log_end_offset, f"batches end at {offset}, log end {log.log_end_offset}"
    return b"".join(chunks), batches


def probe_index(log: PartitionLog, rng: random.Random) -> None:
    """Reads at random offsets start with the batch holding that offset."""
    end = log.log_end_offset
    for offset in (rng.randrange(end) for _ in range(INDEX_PROBES if end else 0)):
        result = log.read(offset, 1)
        assert isinstance(result, ReadResult) and result.spans, f"read at {offset}: {result}"
        header = read_batch_header(result.spans[0].read_bytes(), whole=False)
        assert header.base_offset <= offset <= header.last_offset, (
            f"read at {offset} starts with the batch {header.base_offset}..{header.last_offset}"
        )
    at_end = log.read(end, 1024)
    assert isinstance(at_end, ReadResult) and not at_end.spans
    assert isinstance(log.read(end + 1, 1024), OffsetOutOfRange)


# the state of the log dir between rounds


def segment_files(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*" + LOG_SUFFIX))


def log_bytes(partition_dir: Path) -> int:
    return sum(path.stat().st_size for path in segment_files(partition_dir))


def position_of(segment: Path, offset: int) -> int | None:
    """Where the batch starting at ``offset`` is in ``segment`` (or its end, if it ends there)."""
    data = segment.read_bytes()
    base = int(segment.name.split(".")[0])
    position, next_offset = 0, base
    while next_offset < offset:
        if position + HEADER_BYTES > len(data):
            return None
        header = read_batch_header(data, position, whole=False)
        position += header.size_bytes
        next_offset = header.next_offset
    return position if next_offset == offset and position <= len(data) else None


def tear_unsynced_tail(partition_dir: Path, durable: int, rng: random.Random) -> bool:
    """Do to the active segment what a power failure may: cut or zero it after ``durable``.

    Everything before the active segment was fsynced when it rolled, and the
    active segment up to ``durable``; only what follows may go.
    """
    segments = segment_files(partition_dir)
    if not segments:
        return False
    active = segments[-1]
    base = int(active.name.split(".")[0])
    keep = position_of(active, max(durable, base))
    size = active.stat().st_size
    if keep is None or keep >= size:
        return False
    cut = rng.randrange(keep, size)
    with active.open("r+b") as file:
        if rng.random() < 0.5:
            file.truncate(cut)
        else:  # the file's size reached the disk, its data did not
            file.seek(cut)
            file.write(bytes(size - cut))
    return True


@contextmanager
def storage_warnings() -> Iterator[list[str]]:
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.WARNING)
    logger = logging.getLogger("wirekafka.storage")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


@dataclass
class Stats:
    rounds: int = 0
    batches: int = 0
    records: int = 0
    size_bytes: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    landed: Counter[str] = field(default_factory=Counter)
    truncated_after_kill: int = 0
    torn: int = 0
    truncated_after_tear: int = 0
    tears_left_to_appender: int = 0
    clean_restarts: int = 0
    copies: int = 0

    def summary(self, seconds: float) -> str:
        kills = ", ".join(f"{n} {mode}" for mode, n in sorted(self.kills.items()))
        landed = ", ".join(f"{n} {what}" for what, n in sorted(self.landed.items()))
        return (
            f"crash-kill: {self.rounds} SIGKILL rounds ({kills}) in {seconds:.1f} s; "
            f"landed: {landed}; recovery truncated after {self.truncated_after_kill} plain kills "
            f"and {self.truncated_after_tear}/{self.torn} simulated torn tails "
            f"({self.tears_left_to_appender} left to the appender's recovery); "
            f"{self.clean_restarts} restarts after a clean shutdown, {self.copies} verified on a copy; "
            f"log: {self.batches} batches, {self.records} records, {self.size_bytes / 1e6:.1f} MB"
        )


@dataclass
class LogState:
    verified_end: int = 0  # the log end the last check found (and the appender must find)
    durable: int = 0  # offsets below this are known to be on disk


@pytest.mark.slow
def test_sigkill_at_random_moments_keeps_a_prefix_with_every_fsynced_append(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    rng = random.Random(SEED)
    modes = list(KILL_MODES)
    rng.shuffle(modes)
    checks = list(CHECKS)
    rng.shuffle(checks)
    log_dir = tmp_path / "logs"
    partition_dir = log_dir / partition_dir_name(TOPIC, PARTITION)
    plan = BatchPlan(SEED)
    expected = ExpectedLog(plan)
    state = LogState()
    stats = Stats()

    for number, (mode, (tear, on_copy)) in enumerate(zip(modes, checks, strict=True)):
        context = f"round {number} ({mode} kill)"
        appender = Appender(log_dir, SEED, rng.choice(FLUSH_EVERY), tmp_path / f"stderr-{number}")
        run_and_kill(appender, mode, rng)
        output = AppenderOutput.parse(appender.lines)
        stats.rounds += 1
        stats.kills[mode] += 1
        if output.ready_offset is not None:
            assert output.ready_offset == state.verified_end, (
                f"{context}: the appender opened the log at {output.ready_offset}, "
                f"the last check found {state.verified_end}"
            )
        durable = max(state.durable, output.ready_offset or 0, output.last_fsynced or 0)
        # The appender may have been killed before it created the partition.
        torn = tear and partition_dir.exists() and tear_unsynced_tail(partition_dir, durable, rng)
        stats.torn += torn
        stats.tears_left_to_appender += torn and on_copy

        check_dir = log_dir
        if on_copy:
            check_dir = tmp_path / f"copy-{number}"
            shutil.copytree(log_dir, check_dir)
            stats.copies += 1
        check_partition_dir = check_dir / partition_dir.name
        size_before = log_bytes(check_partition_dir) if check_partition_dir.exists() else 0
        assert not (check_dir / CLEAN_SHUTDOWN_FILE).exists() or output.ready_offset is None, (
            f"{context}: a clean-shutdown marker survived the appender's startup"
        )
        manager = LogManager([check_dir], crash_log_config(), _clock_ms, broker_id=BROKER_ID)
        with storage_warnings() as warnings:
            manager.startup()
        if output.ready_offset is not None:
            assert not manager.had_clean_shutdown, f"{context}: no recovery after the kill"
        log = manager.get_or_create_log(TOPIC, PARTITION)
        truncated = log_bytes(check_partition_dir) < size_before
        assert truncated == any("truncated" in message for message in warnings), (
            f"{context}: the log shrank: {truncated}; recovery said: {warnings}"
        )

        data, batches = read_whole_log(log)
        assert expected.check_prefix(data) == batches
        end = log.log_end_offset
        assert end == plan.first_offset(batches)
        if output.last_fsynced is not None:
            assert end >= output.last_fsynced, (
                f"{context}: the log ends at {end}, before the fsynced offset "
                f"{output.last_fsynced}; recovery said: {warnings}"
            )
        assert end >= durable, f"{context}: the log ends at {end}, durable data reached {durable}"
        probe_index(log, rng)

        if torn:
            stats.truncated_after_tear += truncated
        else:
            stats.truncated_after_kill += truncated
        if output.ready_offset is None:
            stats.landed["in startup"] += 1
        elif output.last_rolling is not None and end == plan.first_offset(output.last_rolling):
            stats.landed["mid-roll"] += 1
        elif output.last_fsynced is not None and end == output.last_fsynced:
            stats.landed["at an fsync"] += 1
        else:
            stats.landed["with unflushed appends"] += 1
        stats.batches, stats.records, stats.size_bytes = batches, end, len(data)
        state.verified_end = end

        if on_copy:  # the original stays as the kill left it, for the appender to recover
            for partition_log in manager.all_logs():
                partition_log.close()
            shutil.rmtree(check_dir)
            state.durable = durable
        elif rng.random() < 0.3:
            manager.shutdown()
            stats.clean_restarts += 1
            state.durable = end
        else:  # recovery made what it checked durable; the marker stays absent
            for partition_log in manager.all_logs():
                partition_log.close()
            state.durable = end

    assert stats.rounds >= 20
    assert stats.batches > stats.rounds, "the appenders hardly appended anything"
    with capsys.disabled():
        print("\n" + stats.summary(time.monotonic() - started))


def test_batch_plan_maps_offsets_to_batches() -> None:
    plan = BatchPlan(1)
    starts = [plan.first_offset(i) for i in range(50)]
    assert starts[0] == 0
    assert all(a < b for a, b in itertools.pairwise(starts))
    assert [plan.index_at(offset) for offset in starts] == list(range(50))
    wide = next(i for i in range(50) if starts[i + 1] - starts[i] > 1)
    assert plan.index_at(starts[wide] + 1) is None
    assert plan.batch(7) == BatchPlan(1).batch(7) != BatchPlan(2).batch(7)
    sizes = {len(plan.batch(i)) for i in range(50)}
    assert min(sizes) < crash_log_config().index_interval_bytes < max(sizes)
