"""How long a test waits for a wirekafka broker: from asking for one to the first
record acknowledged by it.

Each run starts a broker the way the pytest plugin's fixtures do
(``kafka_broker``: a subprocess, :class:`wirekafka.testing.BrokerFactory`) or the
way :func:`wirekafka.testing.in_process_broker` does (trio in a background
thread), creates a confluent-kafka producer, produces one record to a new
(auto-created) topic and waits for its acknowledgement; the time from the
request of the broker to that acknowledgement is the figure. It prints each
run and the median and the slowest of each kind.

    python -m tools.plugin_startup_time [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaError, Message, Producer

from wirekafka.testing import BrokerFactory, in_process_broker


def produce_one(bootstrap: str) -> None:
    """One record to a new topic, acknowledged (acks=all), or an error."""
    errors: list[KafkaError | None] = []

    def delivered(error: KafkaError | None, _: Message) -> None:
        errors.append(error)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    producer.produce("startup", b"first", on_delivery=delivered)
    producer.flush(30)
    if errors != [None]:
        raise SystemExit(f"produce failed: {errors}")


def subprocess_run() -> float:
    with tempfile.TemporaryDirectory() as root, BrokerFactory(Path(root)) as factory:
        start = time.perf_counter()
        broker = factory()
        produce_one(broker.bootstrap)
        elapsed = time.perf_counter() - start
        broker.stop()
    return elapsed


def in_process_run() -> float:
    start = time.perf_counter()
    with in_process_broker() as bootstrap:
        produce_one(bootstrap)
        elapsed = time.perf_counter() - start
    return elapsed


KINDS: dict[str, Callable[[], float]] = {"subprocess": subprocess_run, "in-process": in_process_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind (default 5)")
    args = parser.parse_args()
    for kind, run in KINDS.items():
        run()  # a first run warms the page cache and the bytecode cache
        times = [run() for _ in range(args.runs)]
        for number, seconds in enumerate(times, 1):
            print(f"{kind} run {number}: {seconds * 1000:.0f} ms")
        print(
            f"{kind}: median {statistics.median(times) * 1000:.0f} ms, "
            f"slowest {max(times) * 1000:.0f} ms over {args.runs} runs"
        )


if __name__ == "__main__":
    main()
