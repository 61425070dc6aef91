"""Leader failover on three brokers with three replicas each (issue 17).

Idempotent acks=all producers of two clients (confluent-kafka and kafka-python)
write numbered records while the leader of a partition is SIGKILLed and
restarted, again and again; a consumer reads along. At the end:

* every record a producer was told is written is in the log, at the offset it
  was told (no acknowledged record lost);
* no record is in the log twice (idempotence holds through each leader change:
  the producer state replicates with the log);
* every record the consumer saw is still in the log at the offset it saw it
  at (consumers read below the high watermark only, which every new leader has);
* each partition's segment files are the same bytes on every replica (the
  restarted leaders truncated what the new leader did not have, by leader epoch).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from interop_tests.test_replication import BROKERS, LAG_MS, ReplicatedCluster, create_topic
from interop_tests.test_zk_cluster import wait_for

FAILOVERS = 10
PARTITIONS = 2
TOPIC = "failover"
# The killed leader's ZooKeeper session ends after this: then the controller elects.
SESSION_TIMEOUT_MS = 4000
DELIVERY_TIMEOUT_MS = 180_000  # longer than the test: a producer retries, never gives up
RECORDS_BETWEEN_FAILOVERS = 200  # acknowledged by the new leaders before the old one returns
SEND_PAUSE_S = 0.002  # each producer writes about 400 records a second
STALL_S = 0.5  # followers stopped before a kill, within replica.lag.time.max.ms
assert STALL_S * 1000 < LAG_MS / 2


@dataclass
class Written:
    """What a producer was told: (partition, offset) per acknowledged value, and errors."""

    acknowledged: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acked(self, value: bytes, partition: int, offset: int) -> None:
        with self.lock:
            self.acknowledged[value] = (partition, offset)

    def failed(self, value: bytes, error: object) -> None:
        with self.lock:
            self.errors.append(f"{value!r}: {error}")

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)


IDEMPOTENT = {"enable.idempotence": True, "acks": "all"}
# Kafka's acks=1 as a contrast: records the leader acknowledged alone may go with it;
# no retries, so none is written twice.
LEADER_ONLY = {"enable.idempotence": False, "acks": "1", "message.send.max.retries": 0}


def write_confluent(
    bootstrap: str,
    stop: threading.Event,
    written: Written,
    *,
    settings: dict[str, object] = IDEMPOTENT,
    prefix: bytes = b"confluent",
) -> None:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            **settings,
        }
    )

    def delivered(
        error: confluent_kafka.KafkaError | None, message: confluent_kafka.Message
    ) -> None:
        value = message.value()
        assert value is not None
        if error is None:
            written.acked(value, message.partition(), message.offset())
        else:
            written.failed(value, error)

    number = 0
    while not stop.is_set():
        value = b"%s-%07d" % (prefix, number)
        producer.produce(TOPIC, value=value, partition=number % PARTITIONS, on_delivery=delivered)
        number += 1
        producer.poll(SEND_PAUSE_S)
    remaining = producer.flush(DELIVERY_TIMEOUT_MS / 1000)
    if remaining:
        written.failed(b"", f"{remaining} records still undelivered at the end")


def write_kafka_python(bootstrap: str, stop: threading.Event, written: Written) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
        request_timeout_ms=10_000,
    )
    number = 0
    while not stop.is_set():
        value = b"kafka-python-%07d" % number
        future = producer.send(TOPIC, value=value, partition=number % PARTITIONS)
        future.add_callback(lambda m, value=value: written.acked(value, m.partition, m.offset))
        future.add_errback(lambda e, value=value: written.failed(value, e))
        number += 1
        time.sleep(SEND_PAUSE_S)
    producer.flush(DELIVERY_TIMEOUT_MS / 1000)
    producer.close()


@dataclass
class Seen:
    """(partition, offset) -> value of every record a consumer read while the leaders
    changed, and what stopped it if anything did."""

    records: dict[tuple[int, int], bytes] = field(default_factory=dict)
    error: str = ""


def read_along(bootstrap: str, stop: threading.Event, seen: Seen) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    try:
        while not stop.is_set():
            for records in consumer.poll(timeout_ms=200).values():
                for record in records:
                    seen.records[(record.partition, record.offset)] = record.value
    except Exception as exc:
        seen.error = repr(exc)
    finally:
        consumer.close()


def in_background(*tasks: Callable[[], None]) -> list[threading.Thread]:
    threads = [threading.Thread(target=task, daemon=True) for task in tasks]
    for thread in threads:
        thread.start()
    return threads


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(tmp_path, {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    try:
        made.start()
        yield made
    finally:
        for node, broker in made.brokers.items():
            print(f"--- broker {node} stderr ---\n{broker.stderr_text()}")
        made.close()


def fail_over(
    cluster: ReplicatedCluster, partition: int, progress: Callable[[], int], *, stall: bool
) -> str:
    """SIGKILL the partition's leader, wait for the controller to elect another and
    the producers to go on through it, then start the old leader again and wait
    until it is back in every ISR. With ``stall`` the followers are stopped
    (SIGSTOP) for STALL_S first, well within ``replica.lag.time.max.ms``: the
    leader dies holding records no follower has, which its producers did not see
    acknowledged and send again to the new leader, and which it has to truncate
    when it returns. What happened, for the test's output."""
    state = cluster.state(TOPIC, partition)
    old_leader, old_epoch = state["leader"], state["leader_epoch"]
    followers = [n for n in cluster.replicas(TOPIC, partition) if n != old_leader]
    before = progress()
    if stall:
        for node in followers:
            cluster.signal(node, signal.SIGSTOP)
        time.sleep(STALL_S)
    cluster.brokers[old_leader].kill()
    killed_at = time.monotonic()
    if stall:
        for node in followers:
            cluster.signal(node, signal.SIGCONT)

    def elected() -> bool:
        now = cluster.state(TOPIC, partition)
        return now["leader"] not in (old_leader, -1) and now["leader_epoch"] > old_epoch

    wait_for(elected, f"a leader for {TOPIC}-{partition} other than broker {old_leader}")
    new_state = cluster.state(TOPIC, partition)
    elected_s = time.monotonic() - killed_at
    wait_for(
        lambda: progress() >= before + RECORDS_BETWEEN_FAILOVERS,
        f"the producers to go on past {before + RECORDS_BETWEEN_FAILOVERS} records",
    )
    cluster.brokers[old_leader].start()
    for p in range(PARTITIONS):
        wait_for(
            lambda p=p: len(cluster.state(TOPIC, p)["isr"]) == BROKERS,
            f"broker {old_leader} back in the ISR of {TOPIC}-{p}",
        )
    return (
        f"{TOPIC}-{partition}: leader {old_leader} killed"
        f"{' with its followers stopped' if stall else ''}; broker {new_state['leader']} "
        f"leads at epoch {new_state['leader_epoch']} after {elected_s:.1f} s"
    )


@pytest.mark.slow
def test_no_acknowledged_record_is_lost_or_duplicated_through_ten_leader_failovers(
    cluster: ReplicatedCluster,
) -> None:
    create_topic(cluster, TOPIC, PARTITIONS)
    stop_writing, stop_reading = threading.Event(), threading.Event()
    by_confluent, by_kafka_python, by_leader_only = Written(), Written(), Written()
    seen = Seen()
    bootstrap = cluster.bootstrap
    writers = in_background(
        lambda: write_confluent(bootstrap, stop_writing, by_confluent),
        lambda: write_kafka_python(bootstrap, stop_writing, by_kafka_python),
        lambda: write_confluent(
            bootstrap, stop_writing, by_leader_only, settings=LEADER_ONLY, prefix=b"acks-1"
        ),
    )
    readers = in_background(lambda: read_along(bootstrap, stop_reading, seen))

    def progress() -> int:
        return min(by_confluent.count, by_kafka_python.count)

    wait_for(lambda: progress() >= RECORDS_BETWEEN_FAILOVERS, "the producers to start")
    for failover in range(FAILOVERS):
        print(fail_over(cluster, failover % PARTITIONS, progress, stall=failover % 4 < 2))
    stop_writing.set()
    for thread in writers:
        thread.join(DELIVERY_TIMEOUT_MS / 1000)
        assert not thread.is_alive(), "a producer did not finish"
    stop_reading.set()
    for thread in readers:
        thread.join(60)
    assert seen.error == ""

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS)
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    log = {(r.partition, r.offset): r.value for r in read_to_end(consumer)}
    consumer.close()
    at = {value: position for position, value in log.items()}

    def lost(written: Written) -> dict[bytes, tuple[int, int]]:
        return {v: p for v, p in written.acknowledged.items() if at.get(v) != p}

    print(
        f"{len(log)} records in the log; acknowledged (lost): confluent-kafka "
        f"{by_confluent.count} ({len(lost(by_confluent))}), kafka-python "
        f"{by_kafka_python.count} ({len(lost(by_kafka_python))}), acks=1 "
        f"{by_leader_only.count} ({len(lost(by_leader_only))}); the consumer saw "
        f"{len(seen.records)}"
    )
    assert len(at) == len(log), "a record is in the log twice"
    for written in (by_confluent, by_kafka_python):
        assert written.errors == []
        assert lost(written) == {}, "acknowledged records are not where they were acknowledged"
    disappeared = {p: v for p, v in seen.records.items() if log.get(p) != v}
    assert disappeared == {}, f"{len(disappeared)} records a consumer saw are gone"

    cluster.stop_all()
    for partition in range(PARTITIONS):
        assert cluster.logs_identical(TOPIC, partition), f"{TOPIC}-{partition} differs"
