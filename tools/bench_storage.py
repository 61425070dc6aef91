"""Benchmark: the storage engine's appends, read lookups, crash recovery and memory.

Every figure is measured in the same run, on the same disk (a temporary
directory under the current one, or under --dir), next to a plain reference
where there is one:

1. append MB/s with 1 MiB and 16 KiB batches, against a plain ``os.write``
   loop writing the same bytes; and what rolling a full 1 GiB segment costs;
2. microseconds per ``log.read(offset, 1 MiB)`` at random offsets, in a log of
   one segment and in one of 1,000 segments holding the same batches;
3. recovery scan MB/s (open with ``clean_shutdown=False``), against CRC32C
   over the same bytes in memory;
4. the process's RSS before and after appending ~1 GB and reading it all back
   as the broker will (``log.read`` spans sent with ``os.sendfile``).

    python tools/bench_storage.py [--seconds S] [--rounds N] [--dir D]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import crc32c

from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import HEADER_BYTES, encode_batch, read_batch_header
from wirekafka.storage.config import LogConfig
from wirekafka.storage.files import LOG_SUFFIX
from wirekafka.storage.log import OffsetOutOfRange, PartitionLog, ReadResult

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
MAX_APPEND_BYTES = 2 * GiB  # per side of an append measurement, so the disk never fills
READ_BYTES = 1 * MiB  # max_bytes of each log.read: a consumer's max.partition.fetch.bytes
LOOKUP_BATCH_BYTES = 1 * KiB  # batches of the logs read at random offsets...
LOOKUP_BATCHES_PER_SEGMENT = 64  # ...64 to a segment (64 KiB) in the many-segment log
MANY_SEGMENTS = 1000
RECOVERY_LOG_BYTES = 256 * MiB
MEMORY_LOG_BYTES = 1_000_000_000
VALUE_BYTES = 1000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_batch(size_bytes: int) -> bytes:
    """One uncompressed batch of about ``size_bytes``, of records with ~1000-byte values."""
    per_record = VALUE_BYTES + 10  # the value, plus the record's varint framing
    count = max(1, (size_bytes - HEADER_BYTES) // per_record)
    value = b"v" * max(1, (size_bytes - HEADER_BYTES) // count - 10)
    stamp = now_ms()
    return encode_batch([Record(i, stamp, None, value) for i in range(count)])


def size_label(size: int) -> str:
    return f"{size // MiB} MiB" if size >= MiB else f"{size // KiB} KiB"


def open_log(
    directory: Path, config: LogConfig | None = None, *, clean_shutdown: bool = True
) -> PartitionLog:
    """A log of topic "bench"; after a crash (recovery_point 0) every batch is scanned."""
    return PartitionLog(
        directory, "bench", 0, config or LogConfig(), now_ms, clean_shutdown=clean_shutdown
    )


def fill(log: PartitionLog, batch: bytes, count: int) -> None:
    buf = bytearray(batch)  # patched in place by each append, as a request frame is
    for _ in range(count):
        log.append(buf)


def status_kib(field: str) -> int:
    """A field of /proc/self/status in KiB (VmRSS, VmHWM), or -1 where there is none."""
    try:
        with open("/proc/self/status") as status:
            for text in status:
                if text.startswith(field + ":"):
                    return int(text.split()[1])
    except OSError:
        pass
    return -1


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the peak is this phase's."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def line(label: str, value: str, detail: str = "") -> None:
    print(f"{label:<46} {value:>14}  {detail}".rstrip())


# 1. appends


@dataclass
class AppendRound:
    size: int  # of one write / batch
    writes: int  # per side
    plain_seconds: float
    log_seconds: float
    rolls: int
    roll_seconds: float  # log time in the blocks during which the log rolled

    @property
    def plain_mb_per_s(self) -> float:
        return self.writes * self.size / self.plain_seconds / 1e6

    @property
    def log_mb_per_s(self) -> float:
        return self.writes * self.size / self.log_seconds / 1e6

    @property
    def log_mb_per_s_without_rolls(self) -> float:
        return self.writes * self.size / (self.log_seconds - self.roll_seconds) / 1e6


def append_round(directory: Path, batch: bytes, seconds: float, max_bytes: int) -> AppendRound:
    """Append ``batch`` to a log and write it to a plain file, interleaved, for ``seconds``.

    The two alternate in blocks of ~1 MiB, each block timed as a whole (the
    clock costs nothing measurable even for 16 KiB writes), and which goes
    first alternates too. This VM's page-cache write speed swings by 2x from
    one second to the next; interleaving puts both sides under the same
    conditions, so their ratio holds steady where separate runs did not.

    Fairness: the plain loop writes the pre-built ``bytes`` with no copy. The
    log is given one bytearray holding the same bytes, reused for every
    append: ``log.append`` patches only its 8-byte base offset in place
    (outside the CRC), as it patches a request's bytearray frame in the
    broker, so neither side copies or allocates per write. A fresh bytearray
    per append would add a copy the broker does not make.
    """
    size = len(batch)
    per_block = max(1, MiB // size)
    max_blocks = max(1, max_bytes // (per_block * size))
    plain_path = directory / "plain.bin"
    log_dir = directory / "append-log"
    fd = os.open(plain_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    log = open_log(log_dir)  # default config: 1 GiB segments, an index entry every 4 KiB
    buf = bytearray(batch)
    append, write, clock = log.append, os.write, time.perf_counter
    plain_seconds = log_seconds = roll_seconds = 0.0
    rolls, segments, blocks = 0, 1, 0
    try:
        started = clock()
        while blocks < max_blocks and clock() - started < seconds:
            for side in (0, 1) if blocks % 2 else (1, 0):
                t0 = clock()
                if side:
                    for _ in range(per_block):
                        append(buf)
                else:
                    for _ in range(per_block):
                        write(fd, batch)  # whole: a regular file with room to spare
                t1 = clock()
                if side:
                    log_seconds += t1 - t0
                    if (count := len(log.segments)) != segments:
                        rolls += count - segments
                        segments = count
                        roll_seconds += t1 - t0
                else:
                    plain_seconds += t1 - t0
            blocks += 1
    finally:
        os.close(fd)
        plain_path.unlink()
        log.close()  # fsyncs; outside the timed region
        shutil.rmtree(log_dir)
    return AppendRound(size, blocks * per_block, plain_seconds, log_seconds, rolls, roll_seconds)


def bench_appends(directory: Path, seconds: float, rounds: int, max_bytes: int) -> None:
    print(f"-- 1. appends: {rounds} rounds of {seconds:g} s (or {max_bytes / GiB:.1f} GiB a side), "
          "log.append and os.write interleaved in ~1 MiB blocks, files deleted in between")  # fmt: skip
    for size in (MiB, 16 * KiB):
        batch = build_batch(size)
        runs = [append_round(directory, batch, seconds, max_bytes) for _ in range(rounds)]
        writes = sum(run.writes for run in runs)
        total = writes * len(batch)
        plain_s = sum(run.plain_seconds for run in runs)
        log_s = sum(run.log_seconds for run in runs)
        roll_s = sum(run.roll_seconds for run in runs)
        rolls = sum(run.rolls for run in runs)
        plain, ours = total / plain_s / 1e6, total / log_s / 1e6
        label = size_label(size)
        each = lambda values: ", ".join(f"{value:.2f}" for value in values)  # noqa: E731
        line(f"plain os.write loop, {label} writes", f"{plain:.0f} MB/s",
             f"({total / GiB:.2f} GiB in {plain_s:.2f} s; {len(batch)} bytes a write)")  # fmt: skip
        line(f"PartitionLog.append, {label} batches", f"{ours:.0f} MB/s",
             f"({total / GiB:.2f} GiB in {log_s:.2f} s; {rolls} roll(s) of a 1 GiB segment)")  # fmt: skip
        line(f"  append / plain, {label}", f"{ours / plain:.2f}",
             f"(target >= 0.80; rounds {each(r.log_mb_per_s / r.plain_mb_per_s for r in runs)})")  # fmt: skip
        if rolls:
            steady = total / (log_s - roll_s) / 1e6
            line(f"  append / plain, {label}, rolls excluded", f"{steady / plain:.2f}",
                 f"({steady:.0f} MB/s; the blocks that rolled took {roll_s:.2f} s)")  # fmt: skip
        line(f"  append time beyond the plain write, {label}",
             f"{(log_s - roll_s - plain_s) / writes * 1e6:.1f} us",
             f"(per append; plain write {plain_s / writes * 1e6:.1f} us, rolls excluded)")  # fmt: skip


def bench_roll(directory: Path) -> None:
    """Time the append that rolls a full 1 GiB segment, and a read waiting behind it."""
    batch = build_batch(MiB)
    log_dir = directory / "roll-log"
    log = open_log(log_dir)
    buf = bytearray(batch)
    segment_bytes = log.config.segment_bytes
    while log.segments[-1].size + len(buf) <= segment_bytes:
        log.append(buf)  # untimed: fills the first segment
    stop = threading.Event()
    slowest_read = [0.0, 0.0]  # seconds, reads

    def reader() -> None:  # a consumer reading the partition meanwhile
        while not stop.is_set():
            t0 = time.perf_counter()
            log.read(log.log_start_offset, READ_BYTES)
            slowest_read[0] = max(slowest_read[0], time.perf_counter() - t0)
            slowest_read[1] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=reader)
    thread.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    log.append(buf)  # this one rolls
    rolling = time.perf_counter() - t0
    t0 = time.perf_counter()
    log.sync_rolled_segments()  # the fsync of the old segment, as maintenance runs it
    syncing = time.perf_counter() - t0
    time.sleep(0.05)
    stop.set()
    thread.join()
    assert len(log.segments) == 2
    line("append that rolls a full 1 GiB segment", f"{rolling * 1e3:.0f} ms",
         "(the old segment's fsync is left to the background, outside the lock)")  # fmt: skip
    line("  that background fsync", f"{syncing * 1e3:.0f} ms",
         "(sync_rolled_segments; appends and reads go on meanwhile)")  # fmt: skip
    line("  slowest log.read meanwhile (other thread)", f"{slowest_read[0] * 1e3:.0f} ms",
         f"({slowest_read[1]:.0f} reads; they share the partition's lock)")  # fmt: skip
    log.close()
    shutil.rmtree(log_dir)


# 2. read-span lookups


def read_lookups(log: PartitionLog, seconds: float) -> tuple[float, float, int]:
    """(us per read, mean span bytes, reads) for reads at random offsets."""
    rng = random.Random(42)
    start, end = log.log_start_offset, log.log_end_offset
    offsets = [rng.randrange(start, end) for _ in range(100_000)]
    result = log.read(offsets[0], READ_BYTES)  # warm up; check it is what we think
    assert isinstance(result, ReadResult) and result.size_bytes > 0, result
    reads = 0
    span_bytes = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        first = reads % len(offsets)
        for offset in offsets[first : first + 1000]:  # 100,000 is a multiple of 1,000
            result = log.read(offset, READ_BYTES)
            span_bytes += result.size_bytes  # type: ignore[union-attr]
        reads += 1000
    return elapsed * 1e6 / reads, span_bytes / reads, reads


def bench_lookups(directory: Path, seconds: float) -> None:
    batch = build_batch(LOOKUP_BATCH_BYTES)
    count = LOOKUP_BATCHES_PER_SEGMENT * MANY_SEGMENTS
    segment_bytes = LOOKUP_BATCHES_PER_SEGMENT * len(batch)
    print(f"-- 2. read lookups: log.read(random offset, {READ_BYTES // MiB} MiB); each log holds "
          f"{count} batches of {len(batch)} bytes (1 record), {count * len(batch) / MiB:.1f} MiB")  # fmt: skip
    one = open_log(directory / "one-segment")
    fill(one, batch, count)
    started = time.perf_counter()
    many = open_log(directory / "many-segments", LogConfig(segment_bytes=segment_bytes))
    fill(many, batch, count)
    build = time.perf_counter() - started
    segments = len(many.segments)
    line(f"  built {segments} segments of {segment_bytes} bytes", f"{build:.2f} s",
         f"({build / segments * 1e3:.2f} ms a segment: each roll creates 3 files)")  # fmt: skip
    for label, log in (("1 segment (active)", one), (f"{segments} segments", many)):
        us, mean_span, reads = read_lookups(log, seconds)
        line(f"log.read lookup, {label}", f"{us:.1f} us/read",
             f"({reads} reads; mean span {mean_span / KiB:.0f} KiB)")  # fmt: skip
    for log in (one, many):
        log.close()
    shutil.rmtree(directory / "one-segment")
    shutil.rmtree(directory / "many-segments")


# 3. recovery


def evict_from_page_cache(log_dir: Path) -> None:
    for path in log_dir.glob("*" + LOG_SUFFIX):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # clean pages: they go
        finally:
            os.close(fd)


def bench_recovery(directory: Path, seconds: float, log_bytes: int) -> None:
    print("-- 3. recovery: reopen with clean_shutdown=False, recovery_point=0 "
          "(every batch: header, CRC32C, offsets; indexes rebuilt)")  # fmt: skip
    for size in (16 * KiB, MiB):
        batch = build_batch(size)
        count = max(1, log_bytes // len(batch))
        log_dir = directory / "recovery-log"
        log = open_log(log_dir)
        fill(log, batch, count)
        end = log.log_end_offset
        size_on_disk = log.size_bytes
        log.close()
        times: list[float] = []
        started = time.perf_counter()
        while len(times) < 3 or time.perf_counter() - started < seconds:
            t0 = time.perf_counter()
            log = open_log(log_dir, clean_shutdown=False)
            times.append(time.perf_counter() - t0)
            assert log.log_end_offset == end, (log.log_end_offset, end)
            log.close()
        evict_from_page_cache(log_dir)
        t0 = time.perf_counter()
        log = open_log(log_dir, clean_shutdown=False)
        cold = time.perf_counter() - t0
        log.close()

        with open(log_dir / f"{0:020d}{LOG_SUFFIX}", "rb") as file:
            data = file.read()
        crc_runs = 0
        crc_started = time.perf_counter()
        while (crc_elapsed := time.perf_counter() - crc_started) < 0.5 or crc_runs < 3:
            crc32c.crc32c(data)
            crc_runs += 1
        del data
        crc_time = crc_elapsed / crc_runs

        label = size_label(size)
        mb = size_on_disk / 1e6
        best = min(times)
        line(f"recovery scan, {label} batches, page cache", f"{mb / best:.0f} MB/s",
             f"(best of {len(times)}, median {mb / statistics.median(times):.0f} MB/s; "
             f"{size_on_disk / MiB:.0f} MiB, {count} batches)")  # fmt: skip
        line(f"recovery scan, {label} batches, from disk", f"{mb / cold:.0f} MB/s",
             "(one run, after posix_fadvise DONTNEED on the .log)")  # fmt: skip
        line("  crc32c over the same bytes in memory", f"{mb / crc_time:.0f} MB/s",
             f"(reference; recovery beyond CRC: {(best - crc_time) / count * 1e6:.1f} us a batch)")  # fmt: skip
        shutil.rmtree(log_dir)


# 4. memory


def send_all(log: PartitionLog, devnull: int, records_per_batch: int, batch_bytes: int) -> int:
    """Read the whole log as a consumer would, sending each span to ``devnull``."""
    offset = log.log_start_offset
    sent = 0
    while offset < log.log_end_offset:
        result = log.read(offset, READ_BYTES)
        assert not isinstance(result, OffsetOutOfRange), result
        for span in result.spans:
            position, remaining = span.position, span.size_bytes
            while remaining:
                count = os.sendfile(devnull, span.fileno(), position, remaining)
                position += count
                remaining -= count
            sent += span.size_bytes
            # Every batch has the same size and record count, so the offset
            # after a span follows from its size, without decoding anything.
            assert span.size_bytes % batch_bytes == 0
            offset += span.size_bytes // batch_bytes * records_per_batch
    assert offset == log.log_end_offset
    return sent


def bench_memory(directory: Path, log_bytes: int) -> None:
    batch = build_batch(16 * KiB)
    count = max(1, log_bytes // len(batch))
    print(f"-- 4. memory: append {count * len(batch) / 1e9:.2f} GB of {len(batch)}-byte batches, "
          f"then read it all (log.read {READ_BYTES // MiB} MiB + os.sendfile to /dev/null)")  # fmt: skip
    gc.collect()
    peak_reset = reset_peak_rss()
    log_dir = directory / "memory-log"
    log = open_log(log_dir)
    line("RSS before appending", f"{status_kib('VmRSS') / KiB:.1f} MiB")
    started = time.perf_counter()
    fill(log, batch, count)
    elapsed = time.perf_counter() - started
    size = log.size_bytes
    line("RSS after appending", f"{status_kib('VmRSS') / KiB:.1f} MiB",
         f"(log {size / 1e9:.2f} GB in {len(log.segments)} segment(s), "
         f"appended at {size / elapsed / 1e6:.0f} MB/s)")  # fmt: skip
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        started = time.perf_counter()
        sent = send_all(log, devnull, read_batch_header(batch).record_count, len(batch))
        elapsed = time.perf_counter() - started
    finally:
        os.close(devnull)
    line("RSS after reading it all back", f"{status_kib('VmRSS') / KiB:.1f} MiB",
         f"({sent / 1e9:.2f} GB sent in {elapsed:.2f} s, {sent / elapsed / 1e6:.0f} MB/s)")  # fmt: skip
    if peak_reset:
        line("peak RSS during this phase (VmHWM)", f"{status_kib('VmHWM') / KiB:.1f} MiB")
    log.close()
    shutil.rmtree(log_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="append rounds per batch size")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where the temp dir goes")
    args = parser.parse_args()

    free = shutil.disk_usage(args.dir).free
    # An append round holds two files of up to append_bytes each; nothing else
    # is on disk at the same time, and every measurement deletes its files.
    append_bytes = min(MAX_APPEND_BYTES, free // 8)
    if append_bytes < 1200 * MiB:  # the roll measurement fills a 1 GiB segment
        raise SystemExit(f"{args.dir}: only {free / GiB:.1f} GiB free; need ~10 GiB")
    with tempfile.TemporaryDirectory(prefix="bench_storage-", dir=args.dir) as temp:
        directory = Path(temp)
        print(f"storage benchmark in {directory} ({free / GiB:.0f} GiB free), "
              f"{args.seconds:g} s per measurement")  # fmt: skip
        bench_appends(directory, args.seconds, args.rounds, append_bytes)
        bench_roll(directory)
        bench_lookups(directory, args.seconds)
        bench_recovery(directory, args.seconds, RECOVERY_LOG_BYTES)
        bench_memory(directory, MEMORY_LOG_BYTES)


if __name__ == "__main__":
    main()
