"""Controlled shutdown on three brokers and a real ZooKeeper (issue 17).

A leader stopped with SIGTERM asks the controller to move its leaderships away
before it closes: once its process has exited, the state znodes already name
other leaders at a bumped leader epoch, and an idempotent acks=all producer
writing all along sees no failure and no record twice. Restarted, the broker
catches up and, as the preferred replica, gets its leaderships back
(``auto.leader.rebalance.enable``); every replica ends with the same bytes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from interop_tests.test_replication import (
    BROKERS,
    TIMEOUT_S,
    ReplicatedCluster,
    create_topic,
    read_topic,
)
from interop_tests.test_zk_cluster import wait_for

TOPIC = "moving"
PARTITIONS = 3
BACKOFF_MS = 500  # controlled.shutdown.retry.backoff.ms: the last broker of stop_all retries


class ShutdownCluster(ReplicatedCluster):
    """The replication tests' cluster, retrying a controlled shutdown sooner."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        for broker in self.brokers.values():
            broker.overrides["controlled.shutdown.retry.backoff.ms"] = str(BACKOFF_MS)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ShutdownCluster]:
    made = ShutdownCluster(tmp_path)
    try:
        made.start()
        yield made
    finally:
        for node, broker in made.brokers.items():
            print(f"--- broker {node} stderr ---\n{broker.stderr_text()}")
        made.close()


class NumberedProducer:
    """confluent-kafka, idempotent, acks=all, writing numbered records from a thread
    until stopped; what was acknowledged and what failed."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = confluent_kafka.Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"}
        )
        self.sent: list[bytes] = []
        self.acknowledged = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="numbered-producer", daemon=True)

    def _delivered(self, error: confluent_kafka.KafkaError | None, _: object) -> None:
        if error is None:
            self.acknowledged += 1
        else:
            self.failures.append(error.name())

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            value = b"record-%07d" % number
            self.producer.produce(TOPIC, key=value, value=value, on_delivery=self._delivered)
            self.sent.append(value)
            number += 1
            self.producer.poll(0.002)  # a few hundred records a second

    def start(self) -> NumberedProducer:
        self._thread.start()
        return self

    def wait_acknowledged(self, count: int) -> None:
        wait_for(lambda: self.acknowledged >= count, f"{count} records acknowledged")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        assert self.producer.flush(TIMEOUT_S) == 0, "records left undelivered"


@pytest.mark.slow
def test_a_stopped_leader_moves_its_leaderships_first_and_takes_them_back(
    cluster: ShutdownCluster,
) -> None:
    create_topic(cluster, TOPIC, PARTITIONS)
    states = {p: cluster.state(TOPIC, p) for p in range(PARTITIONS)}
    controller = cluster.controller()
    # a leader that is not the controller (the controller's own shutdown is stop_all's)
    victim = next(s["leader"] for s in states.values() if s["leader"] != controller)
    led = [p for p, s in states.items() if s["leader"] == victim]
    preferred = [p for p in range(PARTITIONS) if cluster.replicas(TOPIC, p)[0] == victim]
    assert led and preferred

    producer = NumberedProducer(cluster.bootstrap).start()
    try:
        producer.wait_acknowledged(300)
        cluster.brokers[victim].stop()  # SIGTERM, and the process has exited
        moved = {p: cluster.state(TOPIC, p) for p in led}
        for partition, state in moved.items():
            assert state["leader"] not in (victim, -1), (partition, state)
            assert state["leader_epoch"] > states[partition]["leader_epoch"], (partition, state)
            assert victim not in state["isr"], (partition, state)
        log = cluster.brokers[victim].stderr_text()
        assert "controlled shutdown succeeded" in log
        assert log.index("controlled shutdown succeeded") < log.index("stopped cleanly")
        controller_log = cluster.brokers[controller].stderr_text()
        assert f"controlled shutdown of broker {victim}" in controller_log

        acknowledged = producer.acknowledged
        producer.wait_acknowledged(acknowledged + 300)  # writes go on without it
        cluster.brokers[victim].start()
        for partition in preferred:
            wait_for(
                lambda partition=partition: cluster.state(TOPIC, partition)["leader"] == victim,
                f"broker {victim} to lead {TOPIC}-{partition} again",
            )
        acknowledged = producer.acknowledged
        producer.wait_acknowledged(acknowledged + 300)  # and go on at it again
    finally:
        producer.stop()
    assert producer.failures == []
    assert producer.acknowledged == len(producer.sent)

    values = read_topic(cluster, TOPIC, PARTITIONS)
    assert len(values) == len(set(values))  # none twice
    assert sorted(values) == sorted(producer.sent)  # none lost
    for partition in range(PARTITIONS):  # every follower has caught up
        wait_for(
            lambda partition=partition: len(cluster.state(TOPIC, partition)["isr"]) == BROKERS,
            f"{TOPIC}-{partition} to have its three replicas in the ISR",
        )
    started = time.monotonic()
    cluster.stop_all()  # every broker shuts down in a controlled way at once
    assert time.monotonic() - started < TIMEOUT_S / 2
    for partition in range(PARTITIONS):
        assert cluster.logs_identical(TOPIC, partition)
