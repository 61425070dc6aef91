"""A leader cut off from ZooKeeper and the other brokers loses no acknowledged write
(issue 17; Jepsen's "lost write" case, which Kafka's ISR design answers).

Three brokers, each in a network namespace of its own on a bridge
(:mod:`interop_tests.netns`), ZooKeeper on the bridge in the test's namespace,
a topic of three replicas with ``min.insync.replicas=2``. While numbered
records are written (:class:`interop_tests.numbered_writes.Workload`), the
partition's leader is cut off from ZooKeeper and from the other brokers
(whatever it sends them is dropped) but not from the clients. It goes on
taking writes; for acks=all it cannot answer them, as no follower fetches
and only ZooKeeper could take them out of the ISR. Its ZooKeeper session
ends, the controller elects a follower, the clients move there. Then the
network heals: the old leader hears of the new epoch, truncates what only it
had, and follows. No acks=all record the clients were told is written is
lost; what the acks=1 producer lost is reported.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interop_tests.broker import Broker
from interop_tests.netns import TestNetwork
from interop_tests.numbered_writes import Workload
from interop_tests.test_replication import BROKERS, ReplicatedCluster, create_topic
from interop_tests.test_zk_cluster import wait_for
from interop_tests.zookeeper import ZooKeeper

TOPIC = "partitioned"
PORT = 9092  # each broker has a host, so a port, of its own
SESSION_TIMEOUT_MS = 6000
CUT_OFF_S = 15.0  # how long the leader stays cut off: past its session and the election
RECORDS_BEFORE = 300


class NamespacedBroker(Broker):
    """A broker on host ``host`` of ``network``."""

    def __init__(
        self, network: TestNetwork, host: int, data_dir: Path, keys: dict[str, str]
    ) -> None:
        listeners = f"PLAINTEXT://{network.addresses[host]}:{PORT}"
        super().__init__(data_dir, {**keys, "listeners": listeners})
        self.network, self.host_index = network, host

    def command(self) -> list[str]:
        return self.network.command_in(self.host_index, super().command())


@pytest.fixture
def network() -> Iterator[TestNetwork]:
    with TestNetwork(BROKERS) as made:
        yield made


@pytest.fixture
def cluster(tmp_path: Path, network: TestNetwork) -> Iterator[ReplicatedCluster]:
    zookeeper = ZooKeeper(tmp_path / "zookeeper", host=network.service_address).start()
    made = ReplicatedCluster(
        tmp_path,
        {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)},
        zookeeper=zookeeper,
        make_broker=lambda node, data_dir, keys: NamespacedBroker(network, node, data_dir, keys),
    )
    with made.running():
        yield made


@pytest.mark.slow
def test_a_leader_cut_off_from_zookeeper_and_its_followers_acknowledges_nothing_that_is_lost(
    cluster: ReplicatedCluster, network: TestNetwork, request: pytest.FixtureRequest
) -> None:
    create_topic(cluster, TOPIC, 1)
    state = cluster.state(TOPIC, 0)
    leader, epoch = state["leader"], state["leader_epoch"]
    others = [network.addresses[n] for n in range(BROKERS) if n != leader]
    workload = Workload(cluster.bootstrap, TOPIC, 1)
    request.addfinalizer(workload.abandon)
    workload.start()
    wait_for(lambda: workload.progress() >= RECORDS_BEFORE, "the producers to start")

    network.cut_off(leader, [network.service_address, *others])
    cut_at = time.monotonic()
    before = workload.counts()
    wait_for(
        lambda: cluster.state(TOPIC, 0)["leader"] not in (leader, -1),
        f"the controller to elect a leader other than broker {leader}",
    )
    elected_s = time.monotonic() - cut_at
    elected = cluster.state(TOPIC, 0)["leader"]
    # kafka-python's producer asks another broker for metadata after a timed-out
    # request; librdkafka's idempotent producer waits on the old leader, which goes on
    # naming itself leader until it hears from ZooKeeper again, as Kafka's would.
    wait_for(
        lambda: workload.by_kafka_python.count >= before[1] + RECORDS_BEFORE,
        "kafka-python's producer to go on through the new leader",
    )
    time.sleep(max(0.0, CUT_OFF_S - (time.monotonic() - cut_at)))
    during = [now - then for now, then in zip(workload.counts(), before, strict=True)]
    network.heal(leader, [network.service_address, *others])
    wait_for(
        lambda: len(cluster.state(TOPIC, 0)["isr"]) == BROKERS,
        f"broker {leader} to follow the new leader and rejoin the ISR",
    )
    new_state = cluster.state(TOPIC, 0)
    assert new_state["leader_epoch"] > epoch
    workload.stop()
    print(
        f"leader {leader} cut off for {CUT_OFF_S:.0f} s; broker {elected} led after "
        f"{elected_s:.1f} s; acknowledged meanwhile (confluent-kafka, kafka-python, "
        f"acks=1): {during}"
    )
    workload.check()
    cluster.stop_all()
    assert cluster.logs_identical(TOPIC, 0)
