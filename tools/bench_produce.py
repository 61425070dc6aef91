"""Benchmark: librdkafka's own load generator against wirekafka brokers, side by side.

It builds ``rdkafka_performance`` from the example source Debian's
``librdkafka-dev`` ships (``tools/rdkafka/src`` stands in for the library's
internal ``rd.h``/``rdtime.h``), starts a broker from each source tree given
(this checkout, and with ``--baseline REF`` the same broker at a git ref,
checked out into a temporary worktree), and runs each row against them in
turn, ``--reps`` times, alternating, so that a noisy machine weighs on every
tree alike. For each run it prints the rate and the broker's CPU time per
message from ``/proc/<pid>/stat`` (user + system, over the run), then the
medians and the rate of each tree against the first.

    python -m tools.bench_produce [--baseline REF] [--messages N] [--reps R] [--row NAME ...]

Rows (``--row``, default ``default-batching``):

* ``default-batching``: 100-byte records, librdkafka's default batching, acks=1;
* ``batch-1``: 200-byte records one per request (batch.num.messages=1,
  linger.ms=0), acks=1, the SIGMOD 2011 paper's producer test;
* ``batch-50``: 200-byte records, 50 per batch, acks=1;
* ``batch-1-idempotent``, ``batch-50-idempotent``: the same with an idempotent
  producer (``enable.idempotence=true``, which needs acks=all), whose batches
  the partition log checks against its producer state.

Every row runs at librdkafka's default ``linger.ms=5`` unless it says otherwise:
``rdkafka_performance`` sets 1000 of its own, which made each run wait up to a
second on its last batch (the rates before 2026-11-24 include that wait).

Needs gcc and librdkafka-dev (``apt-get install librdkafka-dev``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tools.bench_support import (
    LIBRDKAFKA_DEFAULT_LINGER,
    ROOT,
    cpu_seconds,
    rdkafka_performance,
    start_wirekafka,
)

RATE = re.compile(r"(\d+) msgs/s")


@dataclass(frozen=True)
class Row:
    record_bytes: int
    options: tuple[str, ...]  # rdkafka_performance arguments beyond topic, broker, size, count


IDEMPOTENT = ("-a", "-1", "-X", "enable.idempotence=true")  # idempotence needs acks=all
ROWS = {
    "default-batching": Row(100, ("-a", "1")),
    "batch-1": Row(200, ("-a", "1", "-X", "batch.num.messages=1", "-X", "linger.ms=0")),
    "batch-50": Row(200, ("-a", "1", "-X", "batch.num.messages=50")),
    "batch-1-idempotent": Row(
        200, (*IDEMPOTENT, "-X", "batch.num.messages=1", "-X", "linger.ms=0")
    ),
    "batch-50-idempotent": Row(200, (*IDEMPOTENT, "-X", "batch.num.messages=50")),
}


@dataclass(frozen=True)
class Result:
    rate: float  # messages per second
    broker_cpu_us: float  # broker CPU per message


def run_once(load: Path, tree: Path, row: Row, messages: int) -> Result:
    with tempfile.TemporaryDirectory(prefix="wirekafka-bench-") as data_dir:
        broker, port = start_wirekafka(tree, Path(data_dir))
        try:
            before = cpu_seconds(broker.pid)
            command = [
                str(load), "-P", "-t", "bench", "-b", f"127.0.0.1:{port}",
                "-s", str(row.record_bytes), "-c", str(messages), "-q",
                *LIBRDKAFKA_DEFAULT_LINGER, *row.options,
            ]  # fmt: skip
            output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            used = cpu_seconds(broker.pid) - before
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(60)
    found = RATE.search(output)
    if found is None:
        raise SystemExit(f"rdkafka_performance printed no rate:\n{output}")
    return Result(float(found[1]), used / messages * 1e6)


def checkout(ref: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), ref],
        check=True,
        capture_output=True,
    )
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="REF", help="also run the broker at this git ref")
    parser.add_argument("--messages", type=int, default=3_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--row", action="append", choices=sorted(ROWS), dest="rows")
    args = parser.parse_args()
    load = rdkafka_performance()
    scratch = Path(tempfile.mkdtemp(prefix="wirekafka-bench-trees-"))
    try:
        trees = {"this checkout": ROOT}
        if args.baseline:
            trees = {args.baseline: checkout(args.baseline, scratch / "baseline"), **trees}
        for name in args.rows or ["default-batching"]:
            row = ROWS[name]
            results: dict[str, list[Result]] = {tree: [] for tree in trees}
            for rep in range(args.reps):
                for label, tree in trees.items():
                    result = run_once(load, tree, row, args.messages)
                    results[label].append(result)
                    print(
                        f"{name} rep {rep + 1} {label:>14}: {result.rate:>12,.0f} msg/s, "
                        f"broker {result.broker_cpu_us:.3f} µs CPU/msg",
                        flush=True,
                    )
            first = statistics.median(r.rate for r in next(iter(results.values())))
            for label, found in results.items():
                rate = statistics.median(r.rate for r in found)
                cpu = statistics.median(r.broker_cpu_us for r in found)
                print(
                    f"{name} median {label:>14}: {rate:>12,.0f} msg/s ({rate / first:.2f}), "
                    f"broker {cpu:.3f} µs CPU/msg"
                )
    finally:
        if args.baseline:
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(ROOT),
                    "worktree",
                    "remove",
                    "--force",
                    str(scratch / "baseline"),
                ],
                capture_output=True,
            )
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
