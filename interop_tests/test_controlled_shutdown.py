"""Controlled shutdown on three brokers and a real ZooKeeper (issue 17).

A leader stopped with SIGTERM asks the controller to move its leaderships away
before it closes: once its process has exited, the state znodes already name
other leaders at a bumped leader epoch, and the idempotent acks=all producers
writing numbered records all along (:class:`interop_tests.numbered_writes.Workload`,
confluent-kafka's and kafka-python's) are told of no failure, lose nothing and
write nothing twice. Restarted, the broker catches up and, as the preferred
replica, gets its leaderships back (``auto.leader.rebalance.enable``); every
replica ends with the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interop_tests.numbered_writes import Workload
from interop_tests.test_replication import BROKERS, TIMEOUT_S, ReplicatedCluster, create_topic
from interop_tests.test_zk_cluster import wait_for

TOPIC = "moving"
PARTITIONS = 3
RECORDS = 300  # acknowledged by both acks=all producers before each step
BACKOFF_MS = 500  # controlled.shutdown.retry.backoff.ms: the last broker of stop_all retries


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(tmp_path, {"controlled.shutdown.retry.backoff.ms": str(BACKOFF_MS)})
    with made.running():
        yield made


def wait_for_progress(workload: Workload, records: int, what: str) -> None:
    before = workload.progress()
    wait_for(lambda: workload.progress() >= before + records, f"the producers to go on {what}")


@pytest.mark.slow
def test_a_stopped_leader_moves_its_leaderships_first_and_takes_them_back(
    cluster: ReplicatedCluster, request: pytest.FixtureRequest
) -> None:
    create_topic(cluster, TOPIC, PARTITIONS)
    states = {p: cluster.state(TOPIC, p) for p in range(PARTITIONS)}
    controller = cluster.controller()
    # a leader that is not the controller (the controller's own shutdown is stop_all's)
    victim = next(s["leader"] for s in states.values() if s["leader"] != controller)
    led = [p for p, s in states.items() if s["leader"] == victim]
    preferred = [p for p in range(PARTITIONS) if cluster.replicas(TOPIC, p)[0] == victim]
    assert led and preferred

    workload = Workload(cluster.bootstrap, TOPIC, PARTITIONS)
    request.addfinalizer(workload.abandon)
    workload.start()
    wait_for_progress(workload, RECORDS, "at first")
    cluster.brokers[victim].stop()  # SIGTERM, and the process has exited
    for partition in led:
        state = cluster.state(TOPIC, partition)
        assert state["leader"] not in (victim, -1), (partition, state)
        assert state["leader_epoch"] > states[partition]["leader_epoch"], (partition, state)
        assert victim not in state["isr"], (partition, state)
    log = cluster.brokers[victim].stderr_text()
    assert "controlled shutdown succeeded" in log
    assert log.index("controlled shutdown succeeded") < log.index("stopped cleanly")
    controller_log = cluster.brokers[controller].stderr_text()
    assert f"controlled shutdown of broker {victim}" in controller_log

    wait_for_progress(workload, RECORDS, f"without broker {victim}")
    cluster.brokers[victim].start()
    for partition in preferred:
        wait_for(
            lambda partition=partition: cluster.state(TOPIC, partition)["leader"] == victim,
            f"broker {victim} to lead {TOPIC}-{partition} again",
        )
    wait_for_progress(workload, RECORDS, f"with broker {victim} back")
    workload.stop()
    workload.check()  # nothing acknowledged lost, nothing twice, no failure told

    for partition in range(PARTITIONS):  # every follower has caught up
        wait_for(
            lambda partition=partition: len(cluster.state(TOPIC, partition)["isr"]) == BROKERS,
            f"{TOPIC}-{partition} to have its three replicas in the ISR",
        )
    started = time.monotonic()
    cluster.stop_all()  # every broker shuts down in a controlled way at once
    assert time.monotonic() - started < TIMEOUT_S / 2
    for partition in range(PARTITIONS):
        assert cluster.logs_identical(TOPIC, partition), f"{TOPIC}-{partition} differs"
