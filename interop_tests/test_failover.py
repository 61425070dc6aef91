"""Leader failover on three brokers with three replicas each (issue 17).

Numbered records are written (:class:`interop_tests.numbered_writes.Workload`:
idempotent acks=all producers of confluent-kafka and kafka-python, an acks=1
producer, a consumer reading along) while the leader of a partition is
SIGKILLed and restarted, again and again. At the end no acknowledged record is
lost, none is written twice, none a consumer saw has gone, and each
partition's segment files are the same bytes on every replica (the restarted
leaders truncated what the new leader did not have, by leader epoch).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from interop_tests.numbered_writes import Workload
from interop_tests.test_replication import BROKERS, LAG_MS, ReplicatedCluster, create_topic
from interop_tests.test_zk_cluster import wait_for

FAILOVERS = 10
PARTITIONS = 2
TOPIC = "failover"
# The killed leader's ZooKeeper session ends after this: then the controller elects.
SESSION_TIMEOUT_MS = 4000
RECORDS_BETWEEN_FAILOVERS = 200  # acknowledged by the new leaders before the old one returns
STALL_S = 0.5  # followers stopped before a kill, within replica.lag.time.max.ms
assert STALL_S * 1000 < LAG_MS / 2


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(tmp_path, {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)})
    with made.running():
        yield made


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
    cluster: ReplicatedCluster, request: pytest.FixtureRequest
) -> None:
    create_topic(cluster, TOPIC, PARTITIONS)
    workload = Workload(cluster.bootstrap, TOPIC, PARTITIONS)
    request.addfinalizer(workload.abandon)
    workload.start()
    wait_for(lambda: workload.progress() >= RECORDS_BETWEEN_FAILOVERS, "the producers to start")
    for failover in range(FAILOVERS):
        stall = failover % 4 < 2
        print(fail_over(cluster, failover % PARTITIONS, workload.progress, stall=stall))
    workload.stop()
    workload.check()
    cluster.stop_all()
    for partition in range(PARTITIONS):
        assert cluster.logs_identical(TOPIC, partition), f"{TOPIC}-{partition} differs"
