"""A produce's latency stays low while the broker does something slow: its p99 within
50 ms of a broker's beside it that does nothing slow.

A client produces one small batch every :data:`INTERVAL_S` (acks=1, one
request at a time, the project's own protocol client on a socket of its own).
A produce's latency counts from the moment it was due, not from when it could
be sent, so a stall of the broker shows in every produce that should have gone
out during it, as a client producing at that rate sees it (no coordinated
omission). Two slow things, each in a broker process of its own:

* a compaction pass over a ~200 MB segment of a compacted topic, while the
  client produces to that same partition (to its active segment): the pass
  rewrites the segment into a ~100 MB copy, rebuilds its indexes and swaps it
  in;
* ZooKeeper stopped (SIGSTOP) for a few seconds, less than the session
  timeout, while a second client creates topics (which waits for ZooKeeper)
  and the first one produces to a topic that exists.

A second client of the same kind produces over the same window to a broker
of its own that does nothing slow (the control): the machine's load alone
gives that broker's latency, and a loaded machine (the suite's other workers run JVMs
and brokers beside it) can take a p99 past 30 ms with no stall of either
broker. A produce's p99 may exceed the control's by :data:`P99_ADDED_LIMIT_S`
at most; a broker that blocked its event loop on the slow thing (the
compaction pass, a ZooKeeper call) exceeded 150 ms, and by seconds with
ZooKeeper stopped.

A produce's latency is taken less the time the broker's event loop spent
waiting for a CPU from when the produce was due to its answer: the run-queue
wait of the broker's main thread (``/proc/PID/task/PID/schedstat``), read as
each produce is answered. That wait is the machine's doing, not the broker's: in a
full run of the suite the load average reaches 6 on the two cores, and a
broker's loop, woken with nothing to do but answer, was seen to wait up to
135 ms for a CPU, the control's as often as the tested broker's, at random. One
such wait of the tested broker alone took a CI run's p99 to 76 ms against the
control's 14. A loop that is blocked is not waiting for a CPU: a call that
blocks it (an fsync, a ZooKeeper call, a wait for the GIL, a pass run on the
loop) sleeps or runs, and its time stays in the latency, as does a broker
stopped by a signal.

Each test prints its figures (p50, p99, max, samples) and the control's, with
and without the CPU waits, for the record.
"""

from __future__ import annotations

import bisect
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interop_tests.broker import Broker
from interop_tests.conftest import HEAVY, BrokerFactory
from interop_tests.polling import wait_for
from interop_tests.protocol_client import ProtocolClient
from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.storage.checkpoint import read_checkpoint
from wirekafka.storage.cluster_metadata import (
    CLUSTER_METADATA_FILE,
    ClusterMetadata,
    TopicDefinition,
)
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log_manager import LogManager

# Latency is measured against a p99 limit: with the tests that push a broker to a
# resource's edge (interop_tests/conftest.py, HEAVY), one at a time on one xdist worker.
pytestmark = [HEAVY, pytest.mark.slow]

INTERVAL_S = 0.01  # one produce every 10 ms
P99_ADDED_LIMIT_S = 0.050  # over the control's p99
TIMEOUT_S = 60.0

# the compacted segment: 1-record batches of VALUE_BYTES, each key written twice
SEGMENT_TARGET_BYTES = 200 * 1024 * 1024
VALUE_BYTES = 2000
COMPACTED_TOPIC = "compacted"
COMPACTED_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(256 * 1024 * 1024)}

ZK_SESSION_TIMEOUT_MS = 15_000
ZK_STOPPED_S = 4.0


# -- measuring


@dataclass(frozen=True, slots=True)
class Figures:
    samples: int
    p50_s: float
    p99_s: float
    max_s: float

    def __str__(self) -> str:
        return (
            f"p50 {self.p50_s * 1000:.1f} ms, p99 {self.p99_s * 1000:.1f} ms, "
            f"max {self.max_s * 1000:.1f} ms over {self.samples} produces"
        )

    @classmethod
    def of(cls, latencies: list[float]) -> Figures:
        assert latencies, "no produce was due in the window"
        return cls(
            len(latencies),
            percentile(latencies, 0.50),
            percentile(latencies, 0.99),
            max(latencies),
        )


def cpu_wait_s(pid: int) -> float:
    """How long the process's main thread (a broker's event loop) has waited on a run
    queue for a CPU since it started: the second field of its schedstat."""
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[1]) / 1e9


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value at least ``fraction`` of
    the values are at or below."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[int(rank) - 1]


@dataclass(slots=True)
class PacedProducer:
    """Produces one keyed batch every ``interval_s`` to partition 0 of ``topic`` on the
    broker at ``address``, whose process is ``pid``. Records, for each, when it
    was due and when it was answered; and, as each is answered, the time the
    broker's event loop has waited for a CPU so far."""

    address: tuple[str, int]
    pid: int
    topic: str
    interval_s: float = INTERVAL_S
    samples: list[tuple[float, float]] = field(default_factory=list)
    cpu_waits: list[tuple[float, float]] = field(default_factory=list)  # (when, waited so far)
    errors: list[int] = field(default_factory=list)
    failure: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="paced-producer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(TIMEOUT_S)
        if self.failure is not None:
            raise self.failure

    def _run(self) -> None:
        try:
            with ProtocolClient(*self.address, timeout_s=TIMEOUT_S) as client:
                due = time.monotonic()
                self.cpu_waits.append((due, cpu_wait_s(self.pid)))
                sequence = 0
                while not self._stop.is_set():
                    wait = due - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    record = Record(0, time.time_ns() // 1_000_000, b"live-%d" % sequence, b"v")
                    error, _ = client.produce(self.topic, encode_batch([record]), acks=1)
                    answered = time.monotonic()
                    self.cpu_waits.append((answered, cpu_wait_s(self.pid)))
                    self.samples.append((due, answered))
                    if error:
                        self.errors.append(error)
                    due += self.interval_s
                    sequence += 1
        except BaseException as exc:  # reported by stop()
            self.failure = exc

    def figures(self, start: float, end: float) -> tuple[Figures, Figures]:
        """Of the produces due from ``start`` to ``end`` (``time.monotonic()``): their
        latencies less the broker's waits for a CPU from when each was due (from
        the last answer before then) to its answer, and as the client saw them."""
        times = [when for when, _ in self.cpu_waits]

        def waited_by(when: float) -> float:
            return self.cpu_waits[max(bisect.bisect_right(times, when) - 1, 0)][1]

        window = [(due, answered) for due, answered in self.samples if start <= due <= end]
        return (
            Figures.of(
                [
                    max(answered - due - (waited_by(answered) - waited_by(due)), 0.0)
                    for due, answered in window
                ]
            ),
            Figures.of([answered - due for due, answered in window]),
        )


@pytest.fixture
def paced() -> Iterator[Callable[[Broker, str], PacedProducer]]:
    made: list[PacedProducer] = []

    def make(broker: Broker, topic: str) -> PacedProducer:
        assert broker.process is not None
        producer = PacedProducer(broker.address, broker.process.pid, topic)
        producer.start()
        made.append(producer)
        return producer

    yield make
    for producer in made:
        if producer._thread is not None and producer._thread.is_alive():
            producer.stop()


# -- while a compaction pass rewrites a ~200 MB segment


def write_compacted_partition(data_dir: Path) -> int:
    """A log dir holding topic ``compacted`` (one partition, compacted) whose first
    segment is ~200 MB of 1-record batches, every key written twice (so the pass
    keeps half of it, copied as it is), then an empty active segment; written by
    the broker's own storage code and shut down cleanly. Returns the log end."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ClusterMetadata(data_dir / CLUSTER_METADATA_FILE).put_topics(
        [TopicDefinition(COMPACTED_TOPIC, 1, dict(COMPACTED_CONFIGS))]
    )
    config = LogConfig().with_overrides(COMPACTED_CONFIGS)
    logs = LogManager([data_dir], LogConfig(), lambda: time.time_ns() // 1_000_000, broker_id=0)
    logs.startup()
    partition_log = logs.get_or_create_log(COMPACTED_TOPIC, 0, config)
    value = random.Random(7).randbytes(VALUE_BYTES)
    batch_bytes = len(encode_batch([Record(0, 0, b"key-00000000", value)]))
    keys = SEGMENT_TARGET_BYTES // batch_bytes // 2
    now_ms = time.time_ns() // 1_000_000
    for index in range(2 * keys):
        key = b"key-%08d" % (index % keys)
        partition_log.append(bytearray(encode_batch([Record(0, now_ms, key, value)])))
    partition_log.roll()
    log_end = partition_log.log_end_offset
    assert logs.shutdown()
    return log_end


def first_dirty_offset(broker: Broker) -> int:
    checkpoint = broker.data_dir / "cleaner-offset-checkpoint"
    if not checkpoint.exists():
        return 0
    return read_checkpoint(checkpoint).get((COMPACTED_TOPIC, 0), 0)


@pytest.fixture
def compacting_broker(tmp_path: Path) -> Iterator[tuple[Broker, int]]:
    """A broker over the prepared log dir, compacting a second after it starts;
    and the log end of its compacted partition."""
    log_end = write_compacted_partition(tmp_path / "data")
    broker = Broker(tmp_path / "data", {"log.cleaner.backoff.ms": "1000"})
    try:
        yield broker, log_end
    finally:
        broker.close()


def test_produce_latency_while_a_200_mb_segment_is_compacted(
    compacting_broker, broker_factory: BrokerFactory, paced
) -> None:
    broker, compacted_end = compacting_broker
    segment = broker.data_dir / f"{COMPACTED_TOPIC}-0" / f"{0:020d}.log"
    segment_bytes = segment.stat().st_size
    control = paced_control(broker_factory, paced)
    broker.start()
    start = time.monotonic()
    producer = paced(broker, COMPACTED_TOPIC)
    wait_for(
        lambda: first_dirty_offset(broker) >= compacted_end,
        "the compaction pass over the big segment",
        TIMEOUT_S,
        0.05,
    )
    end = time.monotonic()
    producer.stop()
    control.stop()
    (figures, seen), (beside, beside_seen) = (
        producer.figures(start, end),
        control.figures(start, end),
    )
    compacted_bytes = segment.stat().st_size
    print(
        f"\nproduce latency while compacting a {segment_bytes / 2**20:.0f} MB segment "
        f"into {compacted_bytes / 2**20:.0f} MB ({end - start:.1f} s), less CPU waits: {figures}; "
        f"the control: {beside}. As seen: {seen}; the control: {beside_seen}"
    )
    assert producer.errors == [] and control.errors == []
    assert compacted_bytes < segment_bytes * 0.6  # the pass did rewrite it
    assert figures.p99_s < beside.p99_s + P99_ADDED_LIMIT_S, (figures, beside)


# -- while ZooKeeper is stopped


def create_topic(address: tuple[str, int], name: str) -> int:
    with ProtocolClient(*address, timeout_s=TIMEOUT_S) as client:
        response = client.request(
            ApiKey.CREATE_TOPICS,
            5,
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(
                        name=name, num_partitions=1, replication_factor=1, assignments=[]
                    )
                ],
                timeout_ms=30_000,
            ),
        )
    return response.topics[0].error_code


def test_produce_latency_while_zookeeper_is_stopped(
    zookeeper: ZooKeeper,  # noqa: F811
    broker_factory: BrokerFactory,
    paced,
) -> None:
    broker = broker_factory(
        settings={
            "zookeeper.connect": zookeeper.connect_string,
            "zookeeper.session.timeout.ms": str(ZK_SESSION_TIMEOUT_MS),
        }
    )
    assert create_topic(broker.address, "steady") == ErrorCode.NONE
    wait_until_produced(broker.address, "steady")
    producer = paced(broker, "steady")
    control = paced_control(broker_factory, paced)
    time.sleep(1.0)
    assert zookeeper.process is not None
    created: list[int] = []
    creator = threading.Thread(
        target=lambda: created.append(create_topic(broker.address, "created-while-stopped")),
        daemon=True,
    )
    os.killpg(zookeeper.process.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        creator.start()  # its CreateTopics waits for ZooKeeper
        time.sleep(ZK_STOPPED_S)
    finally:
        os.killpg(zookeeper.process.pid, signal.SIGCONT)
    resumed = time.monotonic()
    creator.join(TIMEOUT_S)
    time.sleep(1.0)
    producer.stop()
    control.stop()
    (figures, seen), (beside, beside_seen) = (
        producer.figures(stopped, resumed),
        control.figures(stopped, resumed),
    )
    print(
        f"\nproduce latency while ZooKeeper was stopped for {ZK_STOPPED_S:.0f} s, "
        f"less CPU waits: {figures}; the control: {beside}. "
        f"As seen: {seen}; the control: {beside_seen}"
    )
    assert created, "the CreateTopics sent while ZooKeeper was stopped got no answer"
    assert producer.errors == [] and control.errors == []
    assert figures.p99_s < beside.p99_s + P99_ADDED_LIMIT_S, (figures, beside)


def steady_batch() -> bytes:
    return encode_batch([Record(0, time.time_ns() // 1_000_000, b"k", b"v")])


def wait_until_produced(address: tuple[str, int], topic: str) -> None:
    """Until a produce to the topic succeeds: it has a leader."""
    with ProtocolClient(*address) as client:
        wait_for(
            lambda: client.produce(topic, steady_batch())[0] == ErrorCode.NONE,
            f"a leader for {topic}",
            TIMEOUT_S,
            0.1,
        )


def paced_control(
    broker_factory: BrokerFactory, paced: Callable[[Broker, str], PacedProducer]
) -> PacedProducer:
    """The control: a broker of its own that does nothing slow (the embedded default),
    and a paced producer on it from now on."""
    broker = broker_factory()
    assert create_topic(broker.address, "steady") == ErrorCode.NONE
    wait_until_produced(broker.address, "steady")
    return paced(broker, "steady")
