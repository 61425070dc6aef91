"""Appends deterministic record batches to one partition until it is killed.

Run by ``test_crash_kill.py`` as a subprocess, from the repository root::

    python -m tests.storage.crash_appender <log_dir> <seed> [--flush-every N]
        [--checkpoint-every M] [--max-seconds S]

The log is opened through :class:`LogManager`, as the broker opens it, so the
clean-shutdown marker and the recovery-point checkpoint are used for real.
Batch ``i`` is a pure function of ``(seed, i)`` (:class:`BatchPlan`), and the
number of records in it too, so the log end offset tells which batch comes
next and a restarted appender carries on where the log ends.

It prints, each line flushed at once:

* ``READY <log end offset> <next batch>`` once the log is open (and recovered);
* ``ROLLING <batch>`` just before an append that will start a new segment;
* ``FSYNCED <offset>`` after ``flush()`` returned: every offset below is on disk;
* ``STOPPED <log end offset>`` if ``--max-seconds`` pass without a kill (it then
  shuts down cleanly).
"""

from __future__ import annotations

import argparse
import bisect
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from wirekafka.protocol.records.record import Header, Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.storage.config import NO_LIMIT, LogConfig
from wirekafka.storage.log_manager import LogManager

TOPIC = "crash"
PARTITION = 0
BROKER_ID = 1
SEGMENT_BYTES = 64 * 1024
INDEX_INTERVAL_BYTES = 1024
BASE_TIMESTAMP_MS = 1_700_000_000_000


def crash_log_config() -> LogConfig:
    """Small segments and a dense index, so rolls and index entries are frequent.

    Segments roll on size only: ``PartitionLog`` rolls on ``now`` minus the
    first batch's timestamp, so the fixed (old) timestamps of these batches
    would otherwise roll a segment on every append.
    """
    return LogConfig(
        segment_bytes=SEGMENT_BYTES,
        index_interval_bytes=INDEX_INTERVAL_BYTES,
        roll_ms=NO_LIMIT,
        retention_ms=-1,
    )


def record_count(index: int) -> int:
    """How many records batch ``index`` holds: 1 to 5, in a fixed pattern."""
    return 1 + index * 7 % 5


def batches_per_append(index: int) -> int:
    """How many batches the append that starts at batch ``index`` carries."""
    return 3 if index % 13 == 0 else 2 if index % 7 == 0 else 1


def batch_records(seed: int, index: int) -> list[Record]:
    """The records of batch ``index``; offsets are relative (the log assigns them)."""
    rng = random.Random(f"{seed}:{index}")
    count = record_count(index)
    if index % 6 == 5:  # well over the index interval, up to a quarter of a segment
        total = rng.randint(2 * INDEX_INTERVAL_BYTES, SEGMENT_BYTES // 4)
    else:
        total = rng.randint(10, INDEX_INTERVAL_BYTES // 2)
    records = []
    for i in range(count):
        headers: list[Header] = [("batch", b"%d" % index)] if i == 0 else []
        key = None if index % 10 == 3 and i == 0 else b"key-%d-%d" % (index, i)
        records.append(
            Record(
                offset=i,
                timestamp=BASE_TIMESTAMP_MS + index * 10 + i,
                key=key,
                value=rng.randbytes(max(1, total // count)),
                headers=headers,
            )
        )
    return records


class BatchPlan:
    """The deterministic sequence of batches: their bytes and their first offsets."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._first_offsets = [0]  # of batch 0, 1, ...; one more than batches known

    def batch(self, index: int) -> bytes:
        """Batch ``index`` as the producer sends it (base offset 0)."""
        return encode_batch(batch_records(self.seed, index))

    def first_offset(self, index: int) -> int:
        while len(self._first_offsets) <= index:
            known = len(self._first_offsets) - 1
            self._first_offsets.append(self._first_offsets[-1] + record_count(known))
        return self._first_offsets[index]

    def index_at(self, offset: int) -> int | None:
        """The batch that starts at ``offset``, or None when ``offset`` is inside a batch."""
        while self._first_offsets[-1] < offset:
            self.first_offset(len(self._first_offsets))
        index = bisect.bisect_left(self._first_offsets, offset)
        return index if self._first_offsets[index] == offset else None


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _clock_ms() -> int:
    return time.time_ns() // 1_000_000


def run(
    log_dir: Path,
    seed: int,
    *,
    flush_every: int,
    checkpoint_every: int,
    max_seconds: float,
) -> int:
    manager = LogManager([log_dir], crash_log_config(), _clock_ms, broker_id=BROKER_ID)
    manager.startup()
    log = manager.get_or_create_log(TOPIC, PARTITION)
    plan = BatchPlan(seed)
    index = plan.index_at(log.log_end_offset)
    if index is None:
        print(f"log end {log.log_end_offset} is inside a batch", file=sys.stderr)
        return 2
    _say(f"READY {log.log_end_offset} {index}")
    segment_bytes = log.config.segment_bytes
    deadline = time.monotonic() + max_seconds
    appends = 0
    while time.monotonic() < deadline:
        count = batches_per_append(index)
        data = bytearray(b"".join(plan.batch(i) for i in range(index, index + count)))
        active = log.segments[-1]
        if active.size and active.size + len(data) > segment_bytes:
            _say(f"ROLLING {index}")
        info = log.append(data)
        if info.first_offset != plan.first_offset(index):
            print(f"batch {index} got offset {info.first_offset}", file=sys.stderr)
            return 2
        index += count
        appends += 1
        if appends % flush_every == 0:
            flushed = log.log_end_offset  # appends are ours alone: all of it is flushed
            log.flush()
            _say(f"FSYNCED {flushed}")
        if appends % checkpoint_every == 0:
            manager.write_checkpoints()
    manager.shutdown()
    _say(f"STOPPED {log.log_end_offset}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log_dir", type=Path)
    parser.add_argument("seed", type=int)
    parser.add_argument("--flush-every", type=int, default=8, help="appends per flush()")
    parser.add_argument(
        "--checkpoint-every", type=int, default=20, help="appends per write_checkpoints()"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=20.0, help="stop cleanly if not killed by then"
    )
    args = parser.parse_args(argv)
    return run(
        args.log_dir,
        args.seed,
        flush_every=args.flush_every,
        checkpoint_every=args.checkpoint_every,
        max_seconds=args.max_seconds,
    )


if __name__ == "__main__":
    sys.exit(main())
