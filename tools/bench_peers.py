"""Benchmark: the same load against wirekafka, Apache Kafka and librdkafka's mock cluster.

Three brokers in one run: wirekafka from this checkout, Apache Kafka 4.3
(KRaft, one JVM with -Xmx1g, ``tools/apache_kafka.py``, jar set ``kafka`` of
``interop_tests/jvm/fetch``) and librdkafka's mock cluster
(``tools/rdkafka/mock_cluster.c``, a C peer that keeps records in memory).
wirekafka and Apache Kafka run for the whole benchmark (first warmed up with
250 MB produced and read back, so the JVM has compiled its hot paths); the
mock starts afresh for every run. Every run writes a new topic, of one
partition but in ``partitions-1000``. Each row runs ``--reps`` times, the brokers
taking turns (the first broker of each rep rotates), so a noisy machine weighs
on each alike. librdkafka's producer rows have one more peer, ``socket→file``,
their limit: ``tools/produce_floor.py``, a plain loop in Python (on trio, as
wirekafka) that writes each produce's batch to its partition's file and
answers, without any of a broker's checks or bookkeeping, a new process for
every run; with ``--epoll-floor`` also ``socket→file epoll``, the same loop on a
bare ``select.epoll`` loop, which tells trio's share of that limit. The consume
rows have one more peer, ``sendfile``, their limit: right after each wirekafka
run, the bytes wirekafka just served (its partition's segment files up to their
last batch, warm in the page cache) moved by plain ``os.sendfile`` into a
loopback socket that a small C program
(``tools/rdkafka/sink.c``) drains; its MB/s is of the same records' payload
over that time, so wirekafka/sendfile is the ratio of the two times.

The load comes from programs that are not the ceiling: librdkafka's
``rdkafka_performance`` (C, built by ``tools/bench_support.py``) and Kafka's
own ``ProducerPerformance`` and ``ConsumerPerformance`` (``kafka-producer-perf-test``,
``kafka-consumer-perf-test``). For each run it prints msg/s (MB/s for consume),
and the broker's CPU (user + system from ``/proc/<pid>/stat``, over the timed
part: for Apache Kafka the JVM's, for the mock its process's) per message, per
request and per GB of record payload. Requests are counted by the client
(librdkafka's statistics, requests sent by API against ``txmsgs``/``rxmsgs``;
the Java client's ``request-total`` metric), so they include its Metadata and,
for the Java consumer, group requests. Then a table of medians with the ratios
wirekafka/peer, and, with both ``partitions-*`` rows, each broker's CPU per
message at 1,000 partitions against 1. For librdkafka's producer rows it also
gives the load generator's own CPU per message (``getrusage`` of the ended
child) against each broker: on two cores it shares the machine with the
broker, so what it spends bounds the rate as much as what the broker spends.
With it goes the producer's average round trip (librdkafka's ``rtt``
statistics, from a Produce's send to its answer): long when the producer
waits for the broker (its queue full), short when it is the limit itself.

    python -m tools.bench_peers [--reps R] [--row NAME ...] [--scale F]
                                [--baseline CHECKOUT] [--without-kafka]
                                [--idle-partitions N] [--epoll-floor]

``--baseline`` adds wirekafka from another checkout (``git worktree add
/tmp/base <commit>``) as a peer, so a change is measured against what it
changed in the same run; ``--without-kafka`` leaves the JVM out.
``--idle-partitions N`` gives each broker that runs for the whole benchmark
(wirekafka, the baseline, Apache Kafka) a topic of N partitions that nothing
writes to before the rows, so the rows show what a broker's background work
over many partitions costs them.

Rows (``--row``, default all):

* ``default-batching``, ``batch-1``, ``batch-50``: ``tools/bench_produce.py``'s
  rows, by ``rdkafka_performance -P``: 100-byte records at librdkafka's default
  batching; 200-byte records one per request and 50 per batch, acks=1 (the
  SIGMOD 2011 paper's producer test). Every ``rdkafka_performance`` producer runs
  at librdkafka's default ``linger.ms=5`` unless its row says otherwise (the
  program sets 1000 of its own, a wait of up to a second on the last batch);
* ``partitions-1``, ``partitions-1000``: 100-byte records, acks=1, linger.ms=5,
  each to a random partition of a topic of 1 or 1,000 partitions (librdkafka's
  default partitioner with ``sticky.partitioning.linger.ms=0``: a keyless record
  otherwise goes where the last 10 ms went, even with ``partitioner=random``);
* ``consume-1k``: 1 KiB records, written first (not timed) and read from
  offset 0 from the page cache by ``rdkafka_performance -C``; against plain
  sendfile too;
* ``latency-10k``: end-to-end latency at 10,000 msg/s: ``rdkafka_performance``'s
  latency mode, a consumer reading the topic (``-C -l``) while a producer
  writes 100-byte records stamped with the wall clock at 10,000 msg/s
  (``-P -l -r 10000``, acks=1, librdkafka's default linger.ms=5); p50 and
  p99 of the consumer's per-record latencies (``-A``), the largest (the
  largest of all runs in the table of medians: a rare stall of the broker
  shows there first), and CPU per record at that rate;
* ``latency-10k-linger-0``: the same with linger.ms=0, so nearly every record
  is a request of its own (10,000 produce requests a second);
* ``produce-10k``: that row's producer alone (100-byte records at 10,000 msg/s,
  acks=1, linger.ms=0), against the two socket→file limits too: the rate is the
  load's, the figure to read is the broker's CPU a request when each request
  comes alone, a wake-up of its own (what the latency row's broker spends most
  of its CPU on);
* ``rss-10g``: wirekafka's memory while 10 GB flow through it: 1M records of
  10,000 bytes, acks=1, librdkafka's default batching, produced while
  ``rdkafka_performance -C`` reads them; the broker's ``VmRSS`` (``/proc``)
  sampled every 0.5 s, shown as at the start/the largest/at the end, with the
  producer's MB/s. The topic keeps ~2 GB on disk (``segment.bytes`` 128 MiB,
  ``retention.bytes`` 1 GiB, ``file.delete.delay.ms`` 0). Only wirekafka
  (and ``--baseline``): Apache Kafka's RSS is mostly its JVM's heap, not comparable;
* ``java-produce``: ``ProducerPerformance``, 100-byte records, acks=1, the
  Java producer's default batching;
* ``java-consume``: ``ConsumerPerformance`` (a consumer group), 1 KiB records
  written first; its fetch MB/s (without the group join); against plain
  sendfile too.

Not run against the mock: the consume rows and ``rss-10g`` (its partitions
keep only their last ~5 MB), and the Java rows (the Java client 4.3 never gets
going against the mock of librdkafka 2.0: no error, no progress). ``--scale``
multiplies the record counts. Needs gcc, librdkafka-dev, Java 17 and the
fetched jars.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Protocol

from confluent_kafka.admin import AdminClient, NewTopic

from interop_tests.jvm_jars import KAFKA, classpath, java
from tools.apache_kafka import ApacheKafka, die_with_parent
from tools.bench_produce import ROWS as PRODUCE_ROWS
from tools.bench_support import (
    LIBRDKAFKA_DEFAULT_LINGER,
    ROOT,
    cpu_seconds,
    mock_cluster,
    rdkafka_performance,
    sink,
    start_wirekafka,
    stop_wirekafka,
)

RUN_TIMEOUT_S = 600.0
TOPIC_TIMEOUT_S = 60.0
WARM_UP_RECORDS = 250_000  # of 1 KiB
IDLE_TOPIC = "idle"  # --idle-partitions
IDLE_TOPIC_TIMEOUT_S = 300.0  # creating thousands of partitions takes a while
LATENCY_RATE = 10_000  # msg/s
BASELINE = "baseline"  # the peer name of wirekafka from --baseline's checkout
SENDFILE = "sendfile"  # the limit of the consume rows: plain sendfile of wirekafka's log
FLOOR = "socket→file"  # the limit of librdkafka's producer rows: tools/produce_floor.py
EPOLL_FLOOR = "socket→file epoll"  # the same on a bare epoll loop (--epoll-floor)
FLOORS = (FLOOR, EPOLL_FLOOR)
RSS_EVERY_S = 0.5
RUNS = itertools.count(1)  # numbers each run's topic
# partitions-*: each keyless record to a random partition. librdkafka 2.0's
# default partitioner sticks to one partition for sticky.partitioning.linger.ms
# (10 ms) and so does partitioner=random; 0 turns the stickiness off.
PARTITIONS_OPTIONS = ("-a", "1", "-X", "linger.ms=5", "-X", "sticky.partitioning.linger.ms=0")
# rss-10g: the data flows through the broker, ~2 GB of it stays on disk: wirekafka
# applies retention every second (log.flush.scheduler.interval.ms), so about a
# second's worth more than retention.bytes and the active segment.
RSS_TOPIC_CONFIGS = {
    "segment.bytes": str(128 * 1024**2),
    "retention.bytes": str(1024**3),
    "file.delete.delay.ms": "0",
}
LOAD_HEAP = "-Xmx512m"
# A deleted topic's files go within the next second (Kafka's key; wirekafka reads it
# too). Not 0: Kafka's deleter would then look again at once, without end.
DELETE_DELAY_OVERRIDES = {"log.segment.delete.delay.ms": "100"}
STATS_MS = "100"  # librdkafka statistics interval: requests are counted from the last
PRODUCED = re.compile(r"delivered .* in \d+ms: (\d+) msgs/s and ([\d.]+) MB/s")
CONSUMED = re.compile(r"consumed in \d+ms: (\d+) msgs/s \(([\d.]+) MB/s\)")
CONSUMED_COUNT = re.compile(r"(\d+) messages \(\d+ bytes\) consumed in")
# rdkafka_performance -P's summary, when every record it sent was delivered
DELIVERED_ALL = re.compile(r"(\d+) messages produced \(\d+ bytes\), (\d+) delivered \(offset \d+, 0 failed\)")  # fmt: skip
JAVA_SENT = re.compile(r"\d+ records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")
JAVA_REQUESTS = re.compile(r"^(?:producer|consumer)-metrics:request-total:\{[^}]*\}\s*:\s*([\d.]+)", re.M)  # fmt: skip


Pids = tuple[int, ...]  # a broker's processes: one, or each broker's of a cluster


@dataclass(frozen=True)
class Result:
    messages: int
    rate: float  # msg/s
    mb_s: float
    requests: float | None  # sent by the client(s) over the timed part, estimated
    cpu_s: float  # the broker's, over the timed part
    p50_ms: float | None = None
    p99_ms: float | None = None
    rss_mb: tuple[float, float, float] | None = None  # the broker's: at the start, max, at the end
    load_cpu_s: float | None = None  # the load generator's (librdkafka's producer rows)
    round_trip_ms: float | None = None  # its average produce round trip (the same rows)
    max_ms: float | None = None  # the largest latency (the latency rows)

    @property
    def load_cpu_us_per_message(self) -> float | None:
        return None if self.load_cpu_s is None else self.load_cpu_s / self.messages * 1e6

    @property
    def cpu_us_per_message(self) -> float:
        return self.cpu_s / self.messages * 1e6

    @property
    def cpu_us_per_request(self) -> float | None:
        return self.cpu_s / self.requests * 1e6 if self.requests else None

    @property
    def cpu_s_per_gb(self) -> float:
        """Per GB of record payload, the client's MB/s over its msg/s giving bytes per record."""
        return self.cpu_s / (self.messages * self.mb_s * 1e6 / self.rate / 1e9)


class Peer(Protocol):
    name: str

    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> contextlib.AbstractContextManager[tuple[str, Pids]]:
        """For one run: ``topic`` exists with ``partitions`` partitions, each with a
        leader, and the topic ``configs``; (bootstrap, the broker's pids)."""
        ...


def run(command: Sequence[str], timeout_s: float = RUN_TIMEOUT_S) -> str:
    """Run a load generator; its stdout. It dies with this process."""
    done = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=die_with_parent,
        check=False,
    )
    if done.returncode != 0 and not delivered_all(done.stdout):
        raise SystemExit(f"{command[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def delivered_all(output: str) -> bool:
    """Whether ``rdkafka_performance -P`` delivered all it sent, none failing. It exits
    with 1 when it counts fewer records produced than delivered: it takes those still
    queued from those sent just as the last delivery report arrives, and may count
    that record as queued (a race of the program's, not a failure)."""
    found = DELIVERED_ALL.findall(output)
    return bool(found) and int(found[-1][1]) >= int(found[-1][0])


def children_cpu_seconds() -> float:
    """CPU seconds of this process's children that have ended (a load generator, once
    run() has waited for it; the brokers run on)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def on_broker(pids: Pids, command: Sequence[str]) -> tuple[str, float]:
    """Run a load generator; its stdout and the CPU seconds the broker's processes
    ``pids`` used meanwhile."""
    before = cpu_seconds(*pids)
    output = run(command)
    return output, cpu_seconds(*pids) - before


def last_match(pattern: re.Pattern[str], output: str, program: str) -> tuple[str, ...]:
    """The groups of the last match of ``pattern`` in ``program``'s output (its summary)."""
    found = pattern.findall(output)
    if not found:
        raise SystemExit(f"{program} printed no figures:\n{output[-2000:]}")
    return tuple(found[-1]) if isinstance(found[-1], tuple) else (found[-1],)


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


class AdminPeer:
    """A broker (or a cluster) serving CreateTopics and DeleteTopics (wirekafka,
    Apache Kafka); ``data_dir``: its ``log.dirs``, where it is one wirekafka;
    ``replication_factor``: of the topics it serves; ``log_dir``: where its
    partitions' directories are, where it is one broker (wirekafka or Kafka).

    A run's topic is deleted after it, and the next run begins once the broker
    has removed its files (both brokers are started with
    :data:`DELETE_DELAY_OVERRIDES`): a deletion left for later (Kafka's and
    wirekafka's default wait a minute) would unlink a run's gigabyte in the
    middle of another run, on the CPU measured there."""

    def __init__(
        self,
        name: str,
        bootstrap: str,
        pids: Pids,
        data_dir: Path | None = None,
        replication_factor: int = 1,
        log_dir: Path | None = None,
    ) -> None:
        self.name, self.bootstrap, self.pids, self.data_dir = name, bootstrap, pids, data_dir
        self.replication_factor = replication_factor
        self.log_dir = log_dir if log_dir is not None else data_dir

    def removed(self, topic: str) -> bool:
        """Whether no directory of ``topic``'s partitions is left in the log dir (none
        to look at: True)."""
        if self.log_dir is None:
            return True
        pattern = re.compile(rf"{re.escape(topic)}-\d+($|[.-])")
        return not any(pattern.match(entry.name) for entry in self.log_dir.iterdir())

    def ready(self, admin: AdminClient, topic: str, partitions: int) -> bool:
        """Whether each of the ``partitions`` of ``topic`` has a leader and every
        replica in its ISR, as the broker ``admin`` asks says."""
        found = admin.list_topics(topic, timeout=10).topics.get(topic)
        return (
            found is not None
            and found.error is None
            and len(found.partitions) == partitions
            and all(
                p.leader >= 0 and len(p.isrs) == self.replication_factor
                for p in found.partitions.values()
            )
        )

    def create(
        self,
        topic: str,
        partitions: int = 1,
        configs: Mapping[str, str] | None = None,
        timeout_s: float = TOPIC_TIMEOUT_S,
    ) -> AdminClient:
        """Create ``topic`` and wait until it is :meth:`ready`; the admin client that did."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})
        new = NewTopic(topic, partitions, self.replication_factor, config=dict(configs or {}))
        for future in admin.create_topics([new], request_timeout=timeout_s).values():
            future.result(timeout_s)
        wait_for(
            lambda: self.ready(admin, topic, partitions),
            f"a leader and a full ISR for each partition of {topic}",
            timeout_s,
        )
        return admin

    @contextlib.contextmanager
    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> Iterator[tuple[str, Pids]]:
        admin = self.create(topic, partitions, configs)
        try:
            yield self.bootstrap, self.pids
        finally:
            for future in admin.delete_topics([topic]).values():
                future.result(TOPIC_TIMEOUT_S)
            wait_for(lambda: self.removed(topic), f"{topic}'s files to go", TOPIC_TIMEOUT_S)


@contextlib.contextmanager
def wirekafka_peer(
    tree: Path = ROOT, name: str = "wirekafka", overrides: Mapping[str, str] | None = None
) -> Iterator[AdminPeer]:
    """wirekafka from the checkout ``tree`` (this one, or a baseline to compare with),
    with more broker keys ``overrides`` (its first listener must be PLAINTEXT)."""
    with tempfile.TemporaryDirectory(prefix="wirekafka-bench-") as data_dir:
        process, port = start_wirekafka(
            tree, Path(data_dir), {**DELETE_DELAY_OVERRIDES, **(overrides or {})}
        )
        try:
            yield AdminPeer(name, f"127.0.0.1:{port}", (process.pid,), Path(data_dir))
        finally:
            stop_wirekafka(process)


@contextlib.contextmanager
def apache_kafka_peer(kafka: ApacheKafka | None = None) -> Iterator[AdminPeer]:
    """``kafka`` (by default one node of Kafka's defaults), started and stopped."""
    with kafka or ApacheKafka(DELETE_DELAY_OVERRIDES) as running:
        assert running.directory is not None
        log_dir = running.directory / ApacheKafka.DATA
        yield AdminPeer("Apache Kafka", running.bootstrap, (running.pid,), log_dir=log_dir)


@contextlib.contextmanager
def _one_process(command: Sequence[str], what: str) -> Iterator[tuple[str, Pids]]:
    """A peer's process for one run: started with ``command``, which prints its
    bootstrap address first, and stopped after the run."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,
    )
    try:
        assert process.stdout is not None
        bootstrap = process.stdout.readline().strip()
        if not bootstrap:
            raise SystemExit(f"{what} did not start ({process.wait()})")
        yield bootstrap, (process.pid,)
    finally:
        process.terminate()
        process.wait(30)


class MockPeer:
    """librdkafka's mock cluster, a new process for every run."""

    name = "mock"

    @contextlib.contextmanager
    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> Iterator[tuple[str, Pids]]:
        if configs:
            raise ValueError("the mock cluster takes no topic configs")
        command = [str(mock_cluster()), f"{topic}:{partitions}"]
        with _one_process(command, "the mock cluster") as found:
            yield found


class FloorPeer:
    """The producer rows' limit, ``tools/produce_floor.py`` (a plain socket→file
    loop in Python), a new process for every run, its files in a directory of
    its own (``directory`` during the run) on the disk wirekafka's log.dirs are on.
    ``loop``: ``trio`` (the peer ``socket→file``) or ``epoll`` (``socket→file epoll``)."""

    def __init__(self, loop: str = "trio") -> None:
        self.loop = loop
        self.name = FLOOR if loop == "trio" else EPOLL_FLOOR
        self.directory: Path | None = None

    @contextlib.contextmanager
    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> Iterator[tuple[str, Pids]]:
        if configs:
            raise ValueError("the socket→file loop takes no topic configs")
        with tempfile.TemporaryDirectory(prefix="produce-floor-") as directory:
            command = [
                sys.executable, "-m", "tools.produce_floor", "--loop", self.loop,
                f"{topic}:{partitions}", directory,
            ]  # fmt: skip
            self.directory = Path(directory)
            try:
                with _one_process(command, "the socket→file loop") as found:
                    yield found
            finally:
                self.directory = None


# -- librdkafka's load generator


def rdkafka_requests(output: str, messages: int, counted: str) -> float | None:
    """Requests for ``messages`` from the last statistics: the requests sent (each
    broker's counts by API; its ``tx`` counts every TLS write) per ``counted`` message."""
    stats = [line for line in output.splitlines() if line.startswith("{")]
    if not stats:
        return None
    last = json.loads(stats[-1])
    sent = sum(sum(broker["req"].values()) for broker in last["brokers"].values())
    return sent / last[counted] * messages if last[counted] else None


def rdkafka_round_trip_ms(output: str) -> float | None:
    """The producer's average round trip to the brokers it produced to, over all its
    statistics (librdkafka's ``rtt`` windows, from a request's send to its answer):
    long when it waits for the broker, short when it is itself the limit."""
    total_us = count = 0
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        for broker in json.loads(line)["brokers"].values():
            if broker["req"].get("Produce"):
                total_us += broker["rtt"]["sum"]
                count += broker["rtt"]["cnt"]
    return total_us / count / 1000 if count else None


def rdkafka_produce(bootstrap: str, topic: str, size: int, count: int, *options: str) -> list[str]:
    return [
        str(rdkafka_performance()), "-P", "-t", topic, "-b", bootstrap,
        "-s", str(size), "-c", str(count), "-q", "-T", STATS_MS, *LIBRDKAFKA_DEFAULT_LINGER,
        *options,
    ]  # fmt: skip


def produce_row(size: int, count: int, options: Sequence[str]) -> Callable[..., Result]:
    def measure(bootstrap: str, pids: Pids, topic: str) -> Result:
        load_before = children_cpu_seconds()
        output, cpu = on_broker(pids, rdkafka_produce(bootstrap, topic, size, count, *options))
        load_cpu_s = children_cpu_seconds() - load_before
        rate, mb_s = last_match(PRODUCED, output, "rdkafka_performance")
        requests = rdkafka_requests(output, count, "txmsgs")
        return Result(
            count,
            float(rate),
            float(mb_s),
            requests,
            cpu,
            load_cpu_s=load_cpu_s,
            round_trip_ms=rdkafka_round_trip_ms(output),
        )

    return measure


def consume_row(count: int, options: Sequence[str] = ()) -> Callable[..., Result]:
    """``count`` records of 1 KiB written (not timed), then read from offset 0;
    ``options``: the client's (``-X security.protocol=...``), writing and reading."""

    def measure(bootstrap: str, pids: Pids, topic: str) -> Result:
        run(rdkafka_produce(bootstrap, topic, 1024, count, "-a", "1", *options))
        output, cpu = on_broker(
            pids,
            [
                str(rdkafka_performance()), "-C", "-t", topic, "-p", "0", "-o", "0",
                "-b", bootstrap, "-c", str(count), "-q", "-T", STATS_MS, *options,
            ],
        )  # fmt: skip
        rate, mb_s = last_match(CONSUMED, output, "rdkafka_performance")
        requests = rdkafka_requests(output, count, "rxmsgs")
        return Result(count, float(rate), float(mb_s), requests, cpu)

    return measure


@contextlib.contextmanager
def consumer_at_end(
    bootstrap: str, topic: str, count: int, scratch: Path, *options: str
) -> Iterator[subprocess.Popen[bytes]]:
    """``rdkafka_performance -C`` reading ``count`` records of ``topic`` in the
    background, its output in ``scratch/consumer``; yielded once it has reached
    the end of the topic, killed when the block ends."""
    consumer_out = scratch / "consumer"
    with consumer_out.open("w") as out:
        consumer = subprocess.Popen(
            [
                "stdbuf", "-oL", str(rdkafka_performance()), "-C", *options, "-t", topic,
                "-p", "0", "-o", "0", "-b", bootstrap, "-c", str(count), "-T", STATS_MS,
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )  # fmt: skip
    try:
        wait_for(
            lambda: "reached end" in consumer_out.read_text(),
            "the consumer to reach the end of the topic",
            TOPIC_TIMEOUT_S,
        )
        yield consumer
    finally:
        consumer.kill()
        consumer.wait()


def latency_row(
    count: int, size: int, options: Sequence[str], rate: int = LATENCY_RATE
) -> Callable[..., Result]:
    """End-to-end latency: ``count`` records of ``size`` bytes produced at ``rate``
    msg/s with the producer ``options`` (acks, linger.ms), while a consumer reads
    them; p50 and p99 of the consumer's latencies."""

    def measure(bootstrap: str, pids: Pids, topic: str) -> Result:
        with tempfile.TemporaryDirectory(prefix="wirekafka-bench-latency-") as scratch:
            latencies = Path(scratch) / "latencies"
            reading = ("-l", "-A", str(latencies))
            with consumer_at_end(bootstrap, topic, count, Path(scratch), *reading) as consumer:
                before = cpu_seconds(*pids)
                produced = run(
                    rdkafka_produce(bootstrap, topic, size, count, "-l", "-r", str(rate), *options)
                )
                consumer.wait(RUN_TIMEOUT_S)
                cpu = cpu_seconds(*pids) - before
            consumed = (Path(scratch) / "consumer").read_text()
            samples = [int(line) / 1000 for line in latencies.read_text().split()]
        if len(samples) != count:
            raise SystemExit(f"{len(samples)} latencies for {count} records:\n{consumed[-2000:]}")
        quantiles = statistics.quantiles(samples, n=100)
        produced_rate = float(last_match(PRODUCED, produced, "rdkafka_performance")[0])
        producer, reader = (
            rdkafka_requests(produced, count, "txmsgs"),
            rdkafka_requests(consumed, count, "rxmsgs"),
        )
        requests = producer + reader if producer and reader else None
        return Result(
            count, produced_rate, produced_rate * size / 1e6, requests, cpu,
            quantiles[49], quantiles[98], max_ms=max(samples),
        )  # fmt: skip

    return measure


def rss_row(size: int, count: int) -> Callable[..., Result]:
    """``count`` records of ``size`` bytes produced while a consumer reads them;
    the broker's RSS sampled every ``RSS_EVERY_S`` meanwhile."""

    def measure(bootstrap: str, pids: Pids, topic: str) -> Result:
        samples: list[float] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(RSS_EVERY_S):
                samples.append(rss_mb(*pids))

        with tempfile.TemporaryDirectory(prefix="wirekafka-bench-rss-") as scratch:
            sampler = threading.Thread(target=sample, daemon=True)
            with consumer_at_end(bootstrap, topic, count, Path(scratch)) as consumer:
                start = rss_mb(*pids)
                before = cpu_seconds(*pids)
                sampler.start()
                try:
                    produced = run(rdkafka_produce(bootstrap, topic, size, count, "-a", "1"))
                    consumer.wait(RUN_TIMEOUT_S)
                    cpu = cpu_seconds(*pids) - before
                finally:
                    sampling.set()
                    sampler.join()
            end = rss_mb(*pids)
            consumed = (Path(scratch) / "consumer").read_text()
        if int(last_match(CONSUMED_COUNT, consumed, "rdkafka_performance -C")[0]) != count:
            raise SystemExit(f"the consumer did not read {count} records:\n{consumed[-2000:]}")
        rate, mb_s = last_match(PRODUCED, produced, "rdkafka_performance")
        producer, reader = (
            rdkafka_requests(produced, count, "txmsgs"),
            rdkafka_requests(consumed, count, "rxmsgs"),
        )
        requests = producer + reader if producer and reader else None
        peak = max([start, *samples, end])
        return Result(count, float(rate), float(mb_s), requests, cpu, rss_mb=(start, peak, end))

    return measure


def rss_mb(*pids: int) -> float:
    """The resident sets of the processes ``pids`` now, summed, in MB (``VmRSS``)."""
    return sum(vm_rss_kib(pid) for pid in pids) * 1024 / 1e6


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit(f"no VmRSS for process {pid}")


# -- the limit of the consume rows: plain sendfile


def batches_end(segment: Path) -> int:
    """Where the record batches of a segment file end: before the zeros
    wirekafka preallocates past the last batch of its active segment."""
    with segment.open("rb") as file:
        size, end = os.fstat(file.fileno()).st_size, 0
        while end + 12 <= size:  # a batch: base offset (8 bytes), length (4), the rest
            length = int.from_bytes(os.pread(file.fileno(), 4, end + 8), "big")
            if length == 0:
                break
            end += 12 + length
    return end


def sendfile_limit(record_bytes: int) -> Callable[[Path, int], Result]:
    """The bytes wirekafka served, moved by plain ``os.sendfile``: its partition's
    segment files (the batches, warm in the page cache) into a loopback socket
    that ``tools/rdkafka/sink.c`` drains. Timed from the first sendfile to the
    sink's count of the bytes; msg/s and MB/s are of the same records as the
    consumer's (payload bytes, as ``rdkafka_performance`` counts them); the CPU
    is the sending thread's."""

    def measure(directory: Path, messages: int) -> Result:
        with contextlib.ExitStack() as stack:
            spans = [
                (stack.enter_context(path.open("rb")).fileno(), batches_end(path))
                for path in sorted(directory.glob("*.log"))
            ]
            total = sum(length for _, length in spans)
            reader = subprocess.Popen(
                [str(sink())], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                preexec_fn=die_with_parent,
            )  # fmt: skip
            stack.enter_context(reader)
            stack.callback(reader.kill)
            assert reader.stdout is not None
            port = int(reader.stdout.readline())
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port)))
            before = resource.getrusage(resource.RUSAGE_THREAD)
            start = time.perf_counter()
            for fd, length in spans:
                sent = 0
                while sent < length:
                    sent += os.sendfile(sock.fileno(), fd, sent, length - sent)
            sock.shutdown(socket.SHUT_WR)
            received = int(reader.stdout.readline())
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_THREAD)
        if received != total:
            raise SystemExit(f"the sink read {received} bytes of {total}")
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        payload = messages * record_bytes
        return Result(messages, messages / elapsed, payload / elapsed / 1e6, None, cpu)

    return measure


# -- Kafka's perf tools


def java_tool(main: str, *arguments: str) -> list[str]:
    return [java(), LOAD_HEAP, "-cp", classpath(KAFKA), f"org.apache.kafka.tools.{main}", *arguments]  # fmt: skip


def java_requests(output: str) -> float | None:
    found = JAVA_REQUESTS.search(output)
    return float(found[1]) if found else None


def java_produce_row(size: int, count: int) -> Callable[..., Result]:
    def measure(bootstrap: str, pids: Pids, topic: str) -> Result:
        command = java_tool(
            "ProducerPerformance", "--topic", topic, "--num-records", str(count),
            "--record-size", str(size), "--throughput", "-1", "--bootstrap-server", bootstrap,
            "--command-property", "acks=1", "--print-metrics",
        )  # fmt: skip
        output, cpu = on_broker(pids, command)
        rate, mb_s = last_match(JAVA_SENT, output, "ProducerPerformance")
        return Result(count, float(rate), float(mb_s), java_requests(output), cpu)

    return measure


def java_consume_row(count: int) -> Callable[..., Result]:
    def measure(bootstrap: str, pids: Pids, topic: str) -> Result:
        run(rdkafka_produce(bootstrap, topic, 1024, count, "-a", "1"))
        command = java_tool(
            "ConsumerPerformance", "--topic", topic, "--num-records", str(count),
            "--bootstrap-server", bootstrap, "--timeout", "120000", "--print-metrics",
        )  # fmt: skip
        output, cpu = on_broker(pids, command)
        lines = output.splitlines()
        header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
        if header is None:
            raise SystemExit(f"ConsumerPerformance printed no figures:\n{output[-2000:]}")
        fields = dict(zip(lines[header].split(", "), lines[header + 1].split(", "), strict=True))
        if int(fields["data.consumed.in.nMsg"]) != count:
            raise SystemExit(
                f"ConsumerPerformance read {fields['data.consumed.in.nMsg']} of {count}"
            )
        rate, mb_s = float(fields["fetch.nMsg.sec"]), float(fields["fetch.MB.sec"])
        return Result(count, rate, mb_s, java_requests(output), cpu)

    return measure


@dataclass(frozen=True)
class Row:
    measure: Callable[[str, Pids, str], Result]
    # what the table shows: "msg/s", "MB/s", "msg/s, MB/s", "ms" (p50/p99 latency) or "RSS"
    unit: str
    mock: bool = True  # also run against the mock
    floor: bool = False  # also run against the socket→file loop (librdkafka's producer rows)
    kafka: bool = True  # also run against Apache Kafka
    partitions: int = 1  # of the topic
    configs: Mapping[str, str] = field(default_factory=dict)  # of the topic
    # the same work done by something simpler, after each wirekafka run: given the
    # partition's directory in wirekafka's log.dirs and the run's record count
    limit: Callable[[Path, int], Result] | None = None


def rows(scale: float) -> dict[str, Row]:
    def n(count: int) -> int:
        return max(1, int(count * scale))

    produce = {
        name: Row(produce_row(row.record_bytes, n(count), row.options), "msg/s", floor=True)
        for name, count in (("default-batching", 2_000_000), ("batch-1", 100_000), ("batch-50", 1_000_000))
        for row in [PRODUCE_ROWS[name]]
    }  # fmt: skip
    partitions = {
        f"partitions-{count}": Row(
            produce_row(100, n(2_000_000), PARTITIONS_OPTIONS),
            "msg/s",
            partitions=count,
            floor=True,
        )
        for count in (1, 1000)
    }
    return {
        **produce,
        **partitions,
        "produce-10k": Row(
            produce_row(100, n(100_000), ("-a", "1", "-X", "linger.ms=0", "-r", str(LATENCY_RATE))),
            "msg/s",
            floor=True,
        ),
        "consume-1k": Row(consume_row(n(300_000)), "MB/s", mock=False, limit=sendfile_limit(1024)),
        "latency-10k": Row(latency_row(n(100_000), 100, ("-a", "1", "-X", "linger.ms=5")), "ms"),
        "latency-10k-linger-0": Row(
            latency_row(n(100_000), 100, ("-a", "1", "-X", "linger.ms=0")), "ms"
        ),
        "rss-10g": Row(
            rss_row(10_000, n(1_000_000)),
            "RSS",
            mock=False,
            kafka=False,
            configs=RSS_TOPIC_CONFIGS,
        ),
        "java-produce": Row(java_produce_row(100, n(1_000_000)), "msg/s", mock=False),
        "java-consume": Row(
            java_consume_row(n(300_000)), "MB/s", mock=False, limit=sendfile_limit(1024)
        ),
    }


# -- the run


def figure(result: Result, unit: str) -> str:
    if unit == "msg/s, MB/s":
        return f"{result.rate:,.0f} msg/s, {result.mb_s:,.1f} MB/s"
    if unit == "ms":
        largest = "" if result.max_ms is None else f" (max {result.max_ms:.1f})"
        return f"{result.p50_ms:.1f}/{result.p99_ms:.1f} ms{largest}"
    if unit == "RSS":
        assert result.rss_mb is not None
        start, peak, end = result.rss_mb
        return f"{start:.0f}/{peak:.0f}/{end:.0f} MB at {result.mb_s:,.0f} MB/s"
    if unit == "MB/s":
        return f"{result.mb_s:,.1f} MB/s"
    return f"{result.rate:,.0f} msg/s"


def headline(result: Result, unit: str) -> float:
    """The figure ratios are taken of: a rate, the p99 latency or the largest RSS."""
    if unit == "ms":
        assert result.p99_ms is not None
        return result.p99_ms
    if unit == "RSS":
        assert result.rss_mb is not None
        return result.rss_mb[1]
    return result.mb_s if unit == "MB/s" else result.rate


def cpu_text(result: Result) -> str:
    per_request = result.cpu_us_per_request
    return (
        f"{result.cpu_us_per_message:.2f} µs/msg, "
        + (f"{per_request:.0f} µs/request" if per_request is not None else "? µs/request")
        + f", {result.cpu_s_per_gb:.2f} s/GB"
    )


def median_result(results: Sequence[Result]) -> Result:
    def med(values: Sequence[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    rss = [r.rss_mb for r in results if r.rss_mb is not None]
    load = med([r.load_cpu_s for r in results])
    return Result(
        results[0].messages,
        statistics.median(r.rate for r in results),
        statistics.median(r.mb_s for r in results),
        med([r.requests for r in results]),
        statistics.median(r.cpu_s for r in results),
        med([r.p50_ms for r in results]),
        med([r.p99_ms for r in results]),
        (
            (
                statistics.median(r[0] for r in rss),
                statistics.median(r[1] for r in rss),
                statistics.median(r[2] for r in rss),
            )
            if rss
            else None
        ),
        load,
        med([r.round_trip_ms for r in results]),
        max((r.max_ms for r in results if r.max_ms is not None), default=None),
    )


def add_idle_partitions(peer: AdminPeer, count: int) -> None:
    """A topic of ``count`` partitions that nothing writes to (``idle``), kept for the
    whole run, so that every row runs on a broker holding that many more
    partitions: what the broker does for each of them in the background shows."""
    peer.create(IDLE_TOPIC, count, timeout_s=IDLE_TOPIC_TIMEOUT_S)
    os.sync()  # their files written out now, not by the kernel's writeback during the rows


def warm_up(peer: AdminPeer) -> None:
    """Write 250 MB and read them back, so the JVM has compiled its hot paths."""
    with peer.serving("warm-up") as (bootstrap, pids):
        consume_row(WARM_UP_RECORDS)(bootstrap, pids, "warm-up")


def print_table(
    medians: dict[str, dict[str, Result]],
    units: dict[str, str],
    measured: str = "wirekafka",
    others: Sequence[str] = (BASELINE, "Apache Kafka", "mock", *FLOORS, SENDFILE),
) -> None:
    """A Markdown table of the medians: each row's figure for ``measured`` and the
    ``others`` found, the ratios measured/other, the CPU of each but the mock's
    and sendfile's."""
    peers = [p for p in others if any(p in found for found in medians.values())]
    with_cpu = [measured, *(p for p in peers if p not in ("mock", SENDFILE))]
    header = [
        "row", measured, *peers, *(f"{measured}/{p}" for p in peers),
        *(f"{p} CPU" for p in with_cpu),
    ]  # fmt: skip
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, found in medians.items():
        unit, ours = units[name], found[measured]
        cells = [
            name,
            *(figure(found[p], unit) if p in found else "-" for p in (measured, *peers)),
            *(
                f"{headline(ours, unit) / headline(found[p], unit):.2f}" if p in found else "-"
                for p in peers
            ),
            *(cpu_text(found[p]) if p in found else "-" for p in with_cpu),
        ]
        print("| " + " | ".join(cells) + " |")


def print_partition_cost(medians: dict[str, dict[str, Result]]) -> None:
    """Each peer's CPU per message at 1,000 partitions against 1 (issue 16: at most 2x)."""
    one, many = medians.get("partitions-1", {}), medians.get("partitions-1000", {})
    shared = [peer for peer in one if peer in many]
    if shared:
        print()
    for peer in shared:
        at_many, at_one = many[peer].cpu_us_per_message, one[peer].cpu_us_per_message
        print(
            f"{peer}: CPU per message at 1,000 partitions / at 1 partition: "
            f"{at_many:.2f} / {at_one:.2f} µs = {at_many / at_one:.1f}x"
        )


def print_load_cost(medians: dict[str, dict[str, Result]]) -> None:
    """The load generator's CPU per message against each peer: on these 2 cores it
    shares the machine with the broker, so what it spends bounds the rate too; and
    its average round trip, which says which of the two the other waits for."""
    for name, found in medians.items():
        costs = _by_peer(found, lambda result: result.load_cpu_us_per_message)
        if costs:
            print(f"{name}: the load generator's CPU per message (µs) against {costs}")
        trips = _by_peer(found, lambda result: result.round_trip_ms)
        if trips:
            print(f"{name}: the producer's average round trip (ms) to {trips}")


def _by_peer(found: dict[str, Result], figure: Callable[[Result], float | None]) -> str:
    """``figure`` of each peer's result that has it, listed: "mock 0.95, ..."."""
    return ", ".join(
        f"{peer} {value:.2f}"
        for peer, result in found.items()
        if (value := figure(result)) is not None
    )


def run_limit(row: Row, peer: Peer, topic: str, messages: int) -> Result | None:
    """The row's limit, if it has one, after a run of wirekafka from this
    checkout (not ``--baseline``'s), on the directory of the topic's partition."""
    if row.limit is None or not isinstance(peer, AdminPeer) or peer.name != "wirekafka":
        return None
    assert peer.data_dir is not None
    return row.limit(peer.data_dir / f"{topic}-0", messages)


def run_row(name: str, row: Row, peers: Sequence[Peer], reps: int) -> dict[str, Result]:
    """``row`` ``reps`` times on each of ``peers``, taking turns (the first peer
    of each rep rotates), each run on a topic of its own and printed as it ends;
    the medians, by peer (and the row's limit, ``sendfile``)."""
    results: dict[str, list[Result]] = {}
    for rep in range(reps):
        first = rep % len(peers)
        for peer in [*peers[first:], *peers[:first]]:
            topic = f"bench-{name}-{next(RUNS)}"
            found: dict[str, Result] = {}
            with peer.serving(topic, row.partitions, row.configs) as (bootstrap, pids):
                found[peer.name] = row.measure(bootstrap, pids, topic)
                limit = run_limit(row, peer, topic, found[peer.name].messages)
                if limit is not None:
                    found[SENDFILE] = limit
            for who, result in found.items():
                results.setdefault(who, []).append(result)
                load, trip = result.load_cpu_us_per_message, result.round_trip_ms
                print(
                    f"{name} rep {rep + 1} {who:>12}: {figure(result, row.unit):>18}, "
                    f"{'sender' if who == SENDFILE else 'broker'} {cpu_text(result)}"
                    + (f", load generator {load:.2f} µs/msg" if load is not None else "")
                    + (f", round trip {trip:.2f} ms" if trip is not None else ""),
                    flush=True,
                )
    return {peer: median_result(found) for peer, found in results.items()}


def raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds, so every broker and load generator is stopped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    table = rows(1.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--row", action="append", choices=list(table), dest="rows")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the record counts")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="also run wirekafka from this checkout (say a worktree of the last release), "
        "as the peer 'baseline': a before/after comparison in one run",
    )
    parser.add_argument(
        "--without-kafka", action="store_true", help="leave Apache Kafka out (no JVM, no warm-up)"
    )
    parser.add_argument(
        "--idle-partitions",
        type=int,
        default=0,
        metavar="N",
        help="first give each long-running broker a topic of N partitions nothing writes to",
    )
    parser.add_argument(
        "--epoll-floor",
        action="store_true",
        help=f"also run the producer rows against '{EPOLL_FLOOR}': their limit on a bare "
        "epoll loop instead of trio",
    )
    args = parser.parse_args()
    table = rows(args.scale)
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    rdkafka_performance(), mock_cluster(), sink()  # built before any broker starts
    with contextlib.ExitStack() as stack:
        started = [stack.enter_context(wirekafka_peer())]
        if args.baseline is not None:
            started.append(stack.enter_context(wirekafka_peer(args.baseline.resolve(), BASELINE)))
        if not args.without_kafka:
            started.append(stack.enter_context(apache_kafka_peer()))
        for admin_peer in started:
            warm_up(admin_peer)
            if args.idle_partitions:
                add_idle_partitions(admin_peer, args.idle_partitions)
        peers: list[Peer] = [*started, MockPeer(), FloorPeer()]
        if args.epoll_floor:
            peers.append(FloorPeer("epoll"))
        medians: dict[str, dict[str, Result]] = {}
        for name in args.rows or list(table):
            row = table[name]
            turn = [
                p
                for p in peers
                if (row.mock or p.name != "mock")
                and (row.kafka or p.name != "Apache Kafka")
                and (row.floor or p.name not in FLOORS)
            ]
            medians[name] = run_row(name, row, turn, args.reps)
        print_table(medians, {name: table[name].unit for name in medians})
        print_partition_cost(medians)
        print_load_cost(medians)
    print(f"\npython -m tools.bench_peers {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
