"""Replicated partitions on three brokers and a real ZooKeeper (issue 17).

Followers fetch from their leader and end with the same bytes in their segment
files; acks=all answers once the ISR has the records; a follower that stops
fetching (SIGSTOP) leaves the ISR within ``replica.lag.time.max.ms`` and comes
back when it has caught up; acks=all refuses with NOT_ENOUGH_REPLICAS while
the ISR is below ``min.insync.replicas``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import confluent_kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import NotEnoughReplicasError

from interop_tests import test_metrics
from interop_tests.broker import Broker
from interop_tests.protocol_client import ProtocolClient
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from interop_tests.test_zk_cluster import Cluster, metadata, wait_for
from interop_tests.zookeeper import ZooKeeper
from wirekafka.protocol.errors import ErrorCode

BROKERS = 3
TIMEOUT_S = 60.0
LAG_MS = 2000
# Longer than a follower is stopped for: the ISR shrinks because it stops
# fetching, not because its ZooKeeper session ends.
SESSION_TIMEOUT_MS = 30_000


class ReplicatedCluster(Cluster):
    """Three brokers on a ZooKeeper of their own, followers lagging after LAG_MS."""

    def __init__(
        self,
        root: Path,
        settings: dict[str, str] | None = None,
        *,
        zookeeper: ZooKeeper | None = None,
        make_broker: Callable[[int, Path, dict[str, str]], Broker] | None = None,
    ) -> None:
        """``settings``: more broker keys, or other values for these; ``zookeeper``
        (started; closed with the cluster), ``make_broker``: as :class:`Cluster`'s."""
        super().__init__(
            zookeeper or ZooKeeper(root / "zookeeper").start(),
            root,
            {
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                "replica.lag.time.max.ms": str(LAG_MS),
                "min.insync.replicas": "2",
                "default.replication.factor": "3",
                "offsets.topic.replication.factor": "1",
                "metrics.listener": "http://127.0.0.1:0",
                **(settings or {}),
            },
            make_broker,
        )

    def close(self) -> None:
        for broker in self.brokers.values():  # stopped ones go on, to be killed
            if broker.process is not None and broker.process.poll() is None:
                os.kill(broker.process.pid, signal.SIGCONT)
        super().close()
        self.zookeeper.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def state(self, topic: str, partition: int) -> dict:  # type: ignore[type-arg]
        return self.json(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def replicas(self, topic: str, partition: int) -> list[int]:
        return list(self.json(f"/brokers/topics/{topic}")["partitions"][str(partition)])

    def stop_all(self) -> None:
        """SIGTERM to every broker at once (the active segments lose their preallocated
        tails), each expected to exit cleanly."""
        with ThreadPoolExecutor(BROKERS) as pool:
            list(pool.map(Broker.stop, self.brokers.values()))

    def leaders_isr(self, topic: str, partition: int) -> set[int]:
        """The ISR as the partition's leader answers Metadata: in ZooKeeper (the state
        znode) and in the leader's own cache."""
        state = self.state(topic, partition)
        leader = self.brokers[state["leader"]]
        (answer,) = [
            p
            for t in metadata(leader, topic).topics
            for p in t.partitions
            if p.partition_index == partition
        ]
        in_zookeeper = set(state["isr"])
        return set(answer.isr_nodes) if set(answer.isr_nodes) == in_zookeeper else set()

    def segment_bytes(self, node: int, topic: str, partition: int) -> bytes:
        directory = self.brokers[node].data_dir / f"{topic}-{partition}"
        return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))

    def logs_identical(self, topic: str, partition: int) -> bool:
        contents = {
            self.segment_bytes(node, topic, partition) for node in self.replicas(topic, partition)
        }
        return len(contents) == 1

    def signal(self, node: int, sig: signal.Signals) -> None:
        process = self.brokers[node].process
        assert process is not None
        os.kill(process.pid, sig)


def replica_manager_gauge(broker: Broker, name: str) -> float:
    samples = test_metrics.scrape(broker)
    return test_metrics.value(samples, f"kafka_server_replicamanager_{name}")


def under_replicated(broker: Broker) -> float:
    return replica_manager_gauge(broker, "underreplicatedpartitions")


def under_min_isr(broker: Broker) -> float:
    return replica_manager_gauge(broker, "underminisrpartitioncount")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(tmp_path)
    with made.running():
        yield made


def create_topic(cluster: ReplicatedCluster, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 3)])
    finally:
        admin.close()
    for partition in range(partitions):
        wait_for(
            lambda partition=partition: len(cluster.state(topic, partition)["isr"]) == BROKERS,
            f"{topic}-{partition} to have its three replicas in the ISR",
        )
    # Each broker's cache follows ZooKeeper within a moment: until then a leader can
    # answer NOT_LEADER_OR_FOLLOWER, which a producer without retries would not retry.
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: all(
                p.leader_id >= 0 and len(p.isr_nodes) == BROKERS
                for t in metadata(broker, topic).topics
                for p in t.partitions
            ),
            f"broker {broker.data_dir} to know every leader of {topic}",
        )


def produce_idempotent(cluster: ReplicatedCluster, topic: str, values: list[bytes]) -> None:
    """confluent-kafka, idempotent, acks=all: every record acknowledged."""
    failures: list[str] = []

    def delivered(error: confluent_kafka.KafkaError | None, _: object) -> None:
        if error is not None:
            failures.append(error.name())

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all"}
    )
    for value in values:
        producer.produce(topic, value=value, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    assert failures == []


def read_topic(cluster: ReplicatedCluster, topic: str, partitions: int) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS
    )
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    values = [record.value for record in read_to_end(consumer)]
    consumer.close()
    return values


@pytest.mark.slow
def test_followers_copy_the_leaders_log_byte_for_byte(cluster: ReplicatedCluster) -> None:
    create_topic(cluster, "copied", 3)
    values = [b"record-%05d" % i for i in range(3000)]
    produce_idempotent(cluster, "copied", values)
    assert sorted(read_topic(cluster, "copied", 3)) == values  # each once
    cluster.stop_all()
    written = [p for p in range(3) if cluster.segment_bytes(0, "copied", p)]
    assert written  # the records are somewhere, not in three empty logs
    for partition in range(3):
        assert cluster.logs_identical("copied", partition)
    for partition in written:  # all written at leader epoch 0, from offset 0
        for node in range(BROKERS):
            directory = cluster.brokers[node].data_dir / f"copied-{partition}"
            assert (directory / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"


@pytest.mark.slow
def test_a_stopped_follower_leaves_the_isr_and_acks_all_needs_min_insync_replicas(
    cluster: ReplicatedCluster,
) -> None:
    create_topic(cluster, "guarded", 1)
    leader = cluster.state("guarded", 0)["leader"]
    first, second = (n for n in cluster.replicas("guarded", 0) if n != leader)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, acks="all", retries=0, request_timeout_ms=30_000
    )

    def send(value: bytes) -> int:
        return producer.send("guarded", value=value, partition=0).get(timeout=TIMEOUT_S).offset

    assert send(b"all three") == 0
    cluster.signal(first, signal.SIGSTOP)
    wait_for(
        lambda: cluster.leaders_isr("guarded", 0) == {leader, second},
        "the stopped follower to leave the ISR",
        timeout_s=LAG_MS / 1000 * 5,
    )
    assert send(b"two of three") == 1  # min.insync.replicas=2 holds
    assert under_replicated(cluster.brokers[leader]) == 1  # as /metrics shows it
    cluster.signal(second, signal.SIGSTOP)
    wait_for(
        lambda: cluster.leaders_isr("guarded", 0) == {leader},
        "the second stopped follower to leave the ISR",
        timeout_s=LAG_MS / 1000 * 5,
    )
    # the leader takes the ISR it wrote once its write returns, which may be a
    # moment after ZooKeeper shows it; a produce before that is appended first
    # and answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, as Kafka answers it
    wait_for(lambda: under_min_isr(cluster.brokers[leader]) == 1, "the leader to count one")
    with pytest.raises(NotEnoughReplicasError):
        send(b"one of three")
    cluster.signal(first, signal.SIGCONT)
    cluster.signal(second, signal.SIGCONT)
    wait_for(
        lambda: len(cluster.state("guarded", 0)["isr"]) == BROKERS,
        "the followers to catch up and rejoin the ISR",
    )
    assert send(b"all three again") == 2
    wait_for(
        lambda: under_replicated(cluster.brokers[leader]) == 0, "no partition under-replicated"
    )
    assert under_min_isr(cluster.brokers[leader]) == 0
    producer.close()
    assert read_topic(cluster, "guarded", 1) == [b"all three", b"two of three", b"all three again"]
    cluster.stop_all()
    assert cluster.logs_identical("guarded", 0)


@pytest.mark.slow
def test_replicas_go_where_createtopics_puts_them_and_a_stopped_leader_stalls_only_its_own(
    cluster: ReplicatedCluster,
) -> None:
    """Broker 1 follows partition 0 on broker 0 and partition 1 on broker 2. While
    broker 0 is stopped for three times ``replica.lag.time.max.ms``, broker 1 keeps
    fetching partition 1: it stays in that ISR and acks=all (min.insync.replicas=2)
    goes on succeeding there."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics(
            [NewTopic("placed", -1, -1, replica_assignments={0: [0, 1], 1: [2, 1]})]
        )
    finally:
        admin.close()
    assert cluster.json("/brokers/topics/placed")["partitions"] == {"0": [0, 1], "1": [2, 1]}
    wait_for(
        lambda: [set(cluster.state("placed", p)["isr"]) for p in (0, 1)] == [{0, 1}, {1, 2}],
        "both partitions to have their two replicas in the ISR",
    )
    assert [cluster.state("placed", p)["leader"] for p in (0, 1)] == [0, 2]
    wait_for(lambda: cluster.leaders_isr("placed", 1) == {1, 2}, "broker 2 to know its ISR")
    producer = KafkaProducer(bootstrap_servers=cluster.brokers[2].bootstrap, acks="all", retries=0)
    cluster.signal(0, signal.SIGSTOP)
    try:
        stopped_until = time.monotonic() + 3 * LAG_MS / 1000
        sent = 0
        while time.monotonic() < stopped_until:
            producer.send("placed", value=b"%d" % sent, partition=1).get(timeout=TIMEOUT_S)
            sent += 1
            assert set(cluster.state("placed", 1)["isr"]) == {1, 2}
            time.sleep(0.05)
    finally:
        cluster.signal(0, signal.SIGCONT)
    producer.close()
    assert sent > 0
    assert read_topic(cluster, "placed", 2) == [b"%d" % i for i in range(sent)]


def list_offsets(
    broker: Broker, topic: str, timestamp: int, current_leader_epoch: int = -1
) -> tuple[int, int, int]:
    """ListOffsets v4 for partition 0: (error code, offset, leader epoch)."""
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        (answer,) = client.list_offsets(topic, timestamp, current_leader_epoch=current_leader_epoch)
    return answer.error_code, answer.offset, answer.leader_epoch


@pytest.mark.slow
def test_list_offsets_gives_the_leader_epoch_and_checks_the_clients(
    cluster: ReplicatedCluster,
) -> None:
    """KIP-320: ListOffsets answers with the epoch an offset was written in and
    fences a client that names another leader epoch; followers refer it to the leader."""
    create_topic(cluster, "epochs", 1)
    produce_idempotent(cluster, "epochs", [b"one", b"two"])
    state = cluster.state("epochs", 0)
    leader = cluster.brokers[state["leader"]]
    follower = next(b for n, b in cluster.brokers.items() if n != state["leader"])
    epoch = state["leader_epoch"]
    assert list_offsets(leader, "epochs", -1) == (ErrorCode.NONE, 2, epoch)
    assert list_offsets(leader, "epochs", -2) == (ErrorCode.NONE, 0, epoch)
    assert list_offsets(leader, "epochs", -1, epoch + 1)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert list_offsets(follower, "epochs", -1)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
