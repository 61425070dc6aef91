"""Benchmark: what one round of the broker's periodic log maintenance costs.

The broker runs ``LogManager.run_maintenance`` in a worker thread every
``log.flush.scheduler.interval.ms`` (1 s by default). The thread holds the GIL
while it goes through the logs, and the event loop, wanting it back, may wait
up to the switch interval: on a broker of many partitions, a long round
shows as a stall in every client's latency. This times rounds over
``--partitions`` logs in a temporary directory (half never written, half
holding one batch: neither has work for the rounds) and ``--rolled`` more
logs of three segments each (retention looks at them every round), against a
bare loop over all the logs, and prints ms a round and ns a partition, with
and without the expiry of idle producers (a round every
``producer.id.expiration.check.interval.ms`` looks at every log for them)::

    python -m tools.bench_maintenance [--partitions N] [--rolled M] [--rounds R]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tools.bench_storage import build_batch, now_ms
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log_manager import LogManager


def best_s(round_: Callable[[], object], rounds: int) -> float:
    """The fastest of ``rounds`` calls of ``round_``, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        round_()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rolled", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_maintenance-") as temp:
        logs = LogManager([Path(temp)], LogConfig(), now_ms, broker_id=0)
        logs.startup()
        batch = build_batch(1024)
        for partition in range(args.partitions):
            log = logs.get_or_create_log("bench", partition)
            if partition % 2:
                log.append(bytearray(batch))
        small_segments = LogConfig(segment_bytes=len(batch))  # a roll before each append
        for partition in range(args.rolled):
            log = logs.get_or_create_log("rolled", partition, small_segments)
            for _ in range(3):
                log.append(bytearray(batch))
        logs.run_maintenance()  # the rolled segments fsynced: what is left is retention's
        every = list(logs.all_logs())

        def bare() -> None:
            for log in logs.all_logs():
                log.topic  # noqa: B018 (a loop that touches each log, and nothing else)

        figures = {
            "bare loop over the logs": best_s(bare, args.rounds),
            "round": best_s(lambda: logs.run_maintenance(expire_producers=False), args.rounds),
            "round with producer expiry": best_s(logs.run_maintenance, args.rounds),
        }
        print(
            f"{len(every)} partitions ({args.rolled} of several segments), "
            f"best of {args.rounds} rounds"
        )
        for label, seconds in figures.items():
            print(
                f"{label:<28} {seconds * 1e3:8.2f} ms  {seconds / len(every) * 1e9:6.0f} ns/partition"
            )
        logs.shutdown()


if __name__ == "__main__":
    main()
