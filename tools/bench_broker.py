"""Benchmark: produce and consume through the broker with confluent-kafka (librdkafka).

In one run, the same load goes to a wirekafka broker (a subprocess on a free
port with a temporary data dir) and to librdkafka's in-process mock cluster,
a C peer that keeps records in memory: the ratio says what the Python broker
costs. For 100-byte and 1 KiB records with default batching it prints:
records/s and MB/s for produce (acks=all, until every delivery report is in)
and for consume (assign from the beginning, until all are read), p50/p99
produce latency (librdkafka's per-message latency from produce() to the
delivery report), and the broker's peak RSS (VmHWM).

    python tools/bench_broker.py [--records N] [--partitions P]

The machine is shared by the broker, the client and (for the peer) the mock
cluster, so read the figures side by side, not as absolutes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

STALL_SECONDS = 5.0
LISTENING = re.compile(r"listening on PLAINTEXT://(?P<host>[^:]+):(?P<port>\d+)")


@dataclass
class Figures:
    produce_rate: float
    produce_mb_s: float
    p50_ms: float
    p99_ms: float
    consume_rate: float
    consume_mb_s: float


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable, "-m", "wirekafka", "serve", "--log-level", "WARNING",
            "--override", f"log.dirs={data_dir}",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    match = LISTENING.search(line)
    if match is None:
        process.kill()
        raise SystemExit(f"broker did not start: {line!r}")
    return process, f"{match['host']}:{match['port']}"


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, count: int, size: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    failures: list[str] = []

    def delivered(err: object, msg: object) -> None:
        if err is not None:
            failures.append(str(err))
        else:
            latencies.append(msg.latency())  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    value = os.urandom(size)
    started = time.perf_counter()
    for index in range(count):
        while True:
            try:
                producer.produce(topic, value=value, key=b"%d" % index, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        if index % 1000 == 0:
            producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures or len(latencies) != count:
        raise SystemExit(f"{len(failures)} failed deliveries, first: {failures[:1]}")
    return elapsed, latencies


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> tuple[int, float]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    stored = sum(
        consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(partitions)
    )
    if stored != count:
        print(f"{bootstrap}: {stored} of {count} acknowledged records are there", file=sys.stderr)
        count = stored
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen = 0
    started = last = time.perf_counter()
    while seen < count and time.perf_counter() - last < STALL_SECONDS:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                seen += 1
                last = time.perf_counter()
            else:
                print(f"consumer error: {message.error()}", file=sys.stderr)
    consumer.close()
    if seen != count:  # seen with librdkafka's mock cluster, never with wirekafka
        print(f"{bootstrap}: consumption stalled at {seen} of {count}", file=sys.stderr)
    return seen, last - started


def run(bootstrap: str, topic: str, partitions: int, count: int, size: int) -> Figures:
    """``partitions`` 0: let the broker create the topic (the mock cluster makes 4)."""
    if partitions:
        create_topic(bootstrap, topic, partitions)
    else:
        probe = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
        partitions = len(probe.list_topics(topic, timeout=10).topics[topic].partitions)
    produce_s, latencies = produce(bootstrap, topic, count, size)
    consumed, consume_s = consume(bootstrap, topic, partitions, count)
    quantiles = statistics.quantiles(latencies, n=100)
    megabytes = count * size / 1e6
    return Figures(
        count / produce_s, megabytes / produce_s,
        quantiles[49] * 1000, quantiles[98] * 1000,
        consumed / consume_s, consumed * size / 1e6 / consume_s,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    mock = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    (mock_broker,) = mock.list_topics(timeout=10).brokers.values()
    mock_bootstrap = f"{mock_broker.host}:{mock_broker.port}"
    with tempfile.TemporaryDirectory(prefix="wirekafka-bench-", dir=".") as data_dir:
        broker, bootstrap = start_broker(Path(data_dir))
        try:
            header = (
                f"{'target':<10} {'record':>7} {'produce rec/s':>14} {'MB/s':>7} "
                f"{'p50 ms':>8} {'p99 ms':>8} {'consume rec/s':>14} {'MB/s':>7}"
            )
            print(header)
            for size in (100, 1024):
                for name, target, partitions in (
                    ("wirekafka", bootstrap, args.partitions),
                    ("mock", mock_bootstrap, 0),
                ):
                    f = run(target, f"bench-{size}", partitions, args.records, size)
                    print(
                        f"{name:<10} {size:>6}B {f.produce_rate:>14,.0f} {f.produce_mb_s:>7.1f} "
                        f"{f.p50_ms:>8.2f} {f.p99_ms:>8.2f} {f.consume_rate:>14,.0f} "
                        f"{f.consume_mb_s:>7.1f}",
                        flush=True,
                    )
            print(f"wirekafka broker peak RSS: {peak_rss_mib(broker.pid):.1f} MiB")
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(30)
    mock.flush(0)  # keeps the mock cluster alive until here


if __name__ == "__main__":
    main()
