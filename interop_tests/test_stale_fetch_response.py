"""A follower drops what a Fetch in flight brings back from a leader it no longer follows.

Three brokers: V (0) and L (1) take turns leading ``stale-0``, W (2) follows it;
W also follows ``other-0`` from L, so W's fetcher for L goes on after ``stale-0``
moves to V, with a long-polling Fetch that names ``stale-0`` waiting at L. L is
paused (SIGSTOP, as a starved or swapped-out process would be) while the
partition moves, as a preferred leader election moves it, so L learns of the
move late and meanwhile takes an acks=1 write at its old epoch. That write
completes W's Fetch. W has already truncated for V's epoch by then: had it
appended the answer, its log would hold L's record where V and L hold V's
(the replicas' logs differing after ``stop_all``, as the controlled-shutdown
test once saw). As Kafka's fetcher does, W uses an answer only while the
partition is still followed as it was when asked for.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from interop_tests.protocol_client import ProtocolClient
from interop_tests.test_replication import ReplicatedCluster
from interop_tests.test_zk_cluster import metadata, wait_for
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.zk.znodes import PartitionState, TopicPartitionStateZNode

TOPIC = "stale"
OTHER = "other"  # led by L, followed by W only
V, L, W = 0, 1, 2


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(
        tmp_path,
        {
            "auto.leader.rebalance.enable": "false",
            "replica.lag.time.max.ms": "10000",
            "replica.fetch.wait.max.ms": "8000",  # W's long poll at L outlasts L's pause
        },
    )
    with made.running():
        yield made


def one_record(value: bytes) -> bytes:
    return bytes(encode_batch([Record(0, int(time.time() * 1000), None, value)]))


def produce(cluster: ReplicatedCluster, node: int, value: bytes, acks: int) -> tuple[int, int]:
    with ProtocolClient(*cluster.brokers[node].address, timeout_s=30) as client:
        return client.produce(TOPIC, one_record(value), acks=acks, partition=0)


def move(cluster: ReplicatedCluster, leader: int) -> int:
    path = TopicPartitionStateZNode.path(TOPIC, 0)
    data, stat = cluster.kazoo.get(path)
    current = TopicPartitionStateZNode.decode(data)
    state = PartitionState(leader, current.leader_epoch + 1, (0, 1, 2), current.controller_epoch)
    cluster.kazoo.set(path, TopicPartitionStateZNode.encode(state), version=stat.version)
    return state.leader_epoch


def logged(cluster: ReplicatedCluster, node: int, text: str) -> bool:
    return text in cluster.brokers[node].stderr_text()


@pytest.mark.slow
def test_a_follower_ignores_its_old_leaders_late_fetch_response(
    cluster: ReplicatedCluster,
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_topics(
            [
                NewTopic(TOPIC, -1, -1, replica_assignments={0: [V, L, W]}),
                NewTopic(OTHER, -1, -1, replica_assignments={0: [L, W]}),
            ]
        )
    finally:
        admin.close()
    for topic, size in ((TOPIC, 3), (OTHER, 2)):
        wait_for(lambda t=topic, n=size: len(cluster.state(t, 0)["isr"]) == n, "ISR")
    for broker in cluster.brokers.values():
        wait_for(
            lambda b=broker: all(
                p.leader_id >= 0
                for name in (TOPIC, OTHER)
                for t in metadata(b, name).topics
                for p in t.partitions
            ),
            "leaders known",
        )
    epoch = move(cluster, L)  # stale-0: V -> L
    wait_for(lambda: logged(cluster, L, f"{TOPIC}-0: leader at epoch {epoch}"), "L leads")
    wait_for(lambda: logged(cluster, W, f"{TOPIC}-0: following broker {L} at epoch {epoch}"), "W")
    wait_for(lambda: logged(cluster, V, f"{TOPIC}-0: following broker {L} at epoch {epoch}"), "V")
    for i in range(3):
        assert produce(cluster, L, b"first-%d" % i, acks=-1)[0] == 0
    wait_for(lambda: cluster.state(TOPIC, 0)["isr"] == [0, 1, 2], "ISR")
    time.sleep(1)  # W's next long-poll Fetch (stale-0 and other-0) now waits at L

    process = cluster.brokers[L].process
    assert process is not None
    late = threading.Thread(target=produce, args=(cluster, L, b"late", 1))
    os.kill(process.pid, signal.SIGSTOP)  # L: slow to learn that it lost stale-0
    try:
        epoch = move(cluster, V)  # stale-0: L -> V, as a preferred leader election would
        wait_for(lambda: logged(cluster, V, f"{TOPIC}-0: leader at epoch {epoch}"), "V leads")
        wait_for(
            lambda: logged(cluster, W, f"{TOPIC}-0: following broker {V} at epoch {epoch}"), "W"
        )
        time.sleep(1)  # W has asked V for its epoch's end (OffsetForLeaderEpoch): truncated
        late.start()  # an acks=1 write reaches L before it learns of the move
        time.sleep(0.5)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    late.join()
    time.sleep(2)
    for i in range(5):  # the new leader's own records, one per batch
        assert produce(cluster, V, b"new-%d" % i, acks=-1)[0] == 0
    time.sleep(2)
    cluster.stop_all()
    sizes = {n: len(cluster.segment_bytes(n, TOPIC, 0)) for n in (V, L, W)}
    assert cluster.logs_identical(TOPIC, 0), f"{TOPIC}-0 differs: {sizes}"
