"""ZooKeeper failures while topics and producer ids are written: the cache stays as
it was, and the topic store raises MetadataSaveError, as the embedded file does."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent

from wirekafka import worker_threads
from wirekafka.broker.cluster import ZkTopicStore
from wirekafka.storage.cluster_metadata import MetadataSaveError, TopicDefinition
from wirekafka.zk.assignment import InvalidReplicationFactor, assign_replicas
from wirekafka.zk.cluster import (
    FULL_READ_SECONDS,
    BrokerNotAvailable,
    NotController,
    ShutdownTarget,
    StaleBrokerEpoch,
    ZkCluster,
    ZkTopic,
    _Snapshot,
)
from wirekafka.zk.session import ZooKeeperError
from wirekafka.zk.watch_rounds import REFRESH_SECONDS, RETRY_SECONDS
from wirekafka.zk.znodes import (
    BrokerIdZNode,
    BrokerRegistration,
    ControllerZNode,
    EndPoint,
    PartitionState,
    TopicPartitionStateZNode,
)


class FailingClient:
    """A kazoo client whose writes fail with ``error`` while it is set."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.nodes: dict[str, bytes] = {}

    def _maybe_fail(self) -> None:
        if self.error is not None:
            raise self.error

    def exists(self, path: str, **_: Any) -> bool:
        return path in self.nodes

    def ensure_path(self, path: str) -> None:
        self._maybe_fail()

    def create(self, path: str, value: bytes = b"", **_: Any) -> None:
        self._maybe_fail()
        self.nodes[path] = value

    def set(self, path: str, value: bytes, version: int = -1) -> None:
        self._maybe_fail()
        if path not in self.nodes:
            raise NoNodeError(path)
        self.nodes[path] = value

    def get(self, path: str, **_: Any) -> tuple[bytes, Any]:
        self._maybe_fail()
        raise NoNodeError(path)


class FakeSession:
    def __init__(self, client: FailingClient) -> None:
        self.client = client


@pytest.fixture
def client() -> FailingClient:
    return FailingClient()


@pytest.fixture
def store(client: FailingClient) -> ZkTopicStore:
    return ZkTopicStore(ZkCluster(FakeSession(client), broker_id=0))  # type: ignore[arg-type]


@pytest.mark.parametrize("error", [ConnectionLoss(), KazooTimeoutError("no answer")])
def test_a_topic_zookeeper_does_not_take_is_not_created(store, client, error):
    client.error = error
    with pytest.raises(MetadataSaveError, match="creating topic t: ZooKeeper failed"):
        store.put_topics([TopicDefinition("t", 2, {"retention.ms": "5"})])
    assert store.topic("t") is None
    assert store.topics() == {}
    client.error = None
    store.put_topics([TopicDefinition("t", 2, {"retention.ms": "5"})])
    assert store.topic("t") == TopicDefinition("t", 2, {"retention.ms": "5"})


def test_a_deletion_or_config_change_zookeeper_does_not_take_changes_nothing(store, client):
    store.put_topics([TopicDefinition("t", 1, {})])
    client.error = ConnectionLoss()
    with pytest.raises(MetadataSaveError, match="deleting topic t"):
        store.remove_topic("t")
    with pytest.raises(MetadataSaveError, match="writing the configs of topic t"):
        store.set_topic_configs("t", {"cleanup.policy": "compact"})
    assert store.topic("t") == TopicDefinition("t", 1, {})
    client.error = None
    store.set_topic_configs("t", {"cleanup.policy": "compact"})
    assert store.topic("t") == TopicDefinition("t", 1, {"cleanup.policy": "compact"})
    assert store.remove_topic("t") is True
    assert store.topic("t") is None


def test_producer_ids_zookeeper_does_not_give_are_an_error(store, client):
    client.error = ConnectionLoss()
    with pytest.raises(MetadataSaveError, match="allocating producer ids"):
        store.allocate_producer_ids(1000)
    with pytest.raises(ZooKeeperError):
        store.cluster.allocate_producer_ids(1000)


class TreeClient:
    """Znodes as a dict, with ZooKeeper's rule that a znode's parent must exist."""

    def __init__(self, *paths: str) -> None:
        self.nodes: dict[str, bytes] = dict.fromkeys(paths, b"")

    def _parent(self, path: str) -> str:
        return path.rsplit("/", 1)[0] or "/"

    def create(self, path: str, value: bytes = b"", makepath: bool = False, **_: Any) -> None:
        if path in self.nodes:
            raise NodeExistsError(path)
        parent = self._parent(path)
        if parent != "/" and parent not in self.nodes:
            if not makepath:
                raise NoNodeError(parent)
            self.create(parent, makepath=True)
        self.nodes[path] = value

    def get(self, path: str, **_: Any) -> tuple[bytes, Any]:
        if path not in self.nodes:
            raise NoNodeError(path)
        return self.nodes[path], None

    def get_children(self, path: str, **_: Any) -> list[str]:
        return [p.rsplit("/", 1)[1] for p in self.nodes if self._parent(p) == path]

    def delete(self, path: str, recursive: bool = False) -> None:
        if path not in self.nodes:
            raise NoNodeError(path)
        for node in [p for p in self.nodes if p == path or p.startswith(path + "/")]:
            del self.nodes[node]


def test_the_controller_does_not_bring_back_a_topic_it_deleted_from_a_stale_snapshot() -> None:
    client = TreeClient(
        "/admin", "/admin/delete_topics", "/admin/delete_topics/doomed",
        "/brokers", "/brokers/topics", "/brokers/topics/doomed", "/brokers/topics/kept",
        "/brokers/ids", "/brokers/ids/0",
    )  # fmt: skip
    cluster = ZkCluster(FakeSession(client), broker_id=0)  # type: ignore[arg-type]
    topics = {
        name: ZkTopic(name, 1, {}, {0: (0,)}) for name in ("doomed", "kept")
    }  # the snapshot read before the deletion was asked for
    cluster._snapshot = _Snapshot({0: ("127.0.0.1", 9092)}, topics, {}, 0)
    cluster._control()
    assert not [p for p in client.nodes if p.startswith("/brokers/topics/doomed")]
    assert "/admin/delete_topics/doomed" not in client.nodes
    assert "/brokers/topics/kept/partitions/0/state" in client.nodes


class Stat:
    def __init__(self, version: int, czxid: int = 0) -> None:
        self.version = version
        self.czxid = czxid  # the zxid of the znode's creation (a broker's epoch)


class VersionedClient(TreeClient):
    """A TreeClient whose znodes have versions, checked on set as ZooKeeper does."""

    def __init__(self, *paths: str) -> None:
        super().__init__(*paths)
        self.versions: dict[str, int] = dict.fromkeys(paths, 0)
        self.czxids: dict[str, int] = dict.fromkeys(paths, 0)
        self.zxid = 0
        self.before_set: Callable[[str], None] | None = None  # a write racing ours
        self.connected = True

    def exists(self, path: str, **_: Any) -> bool:
        return path in self.nodes

    def ensure_path(self, path: str) -> None:
        if path not in self.nodes:
            self.create(path, makepath=True)

    def create(self, path: str, value: bytes = b"", makepath: bool = False, **_: Any) -> None:
        super().create(path, value, makepath)
        self.versions[path] = 0
        self.zxid += 1
        self.czxids[path] = self.zxid

    def get(self, path: str, **_: Any) -> tuple[bytes, Any]:
        data, _ = super().get(path)
        return data, Stat(self.versions[path], self.czxids.get(path, 0))

    def set(self, path: str, value: bytes, version: int = -1) -> Stat:
        if self.before_set is not None:
            hook, self.before_set = self.before_set, None
            hook(path)
        if path not in self.nodes:
            raise NoNodeError(path)
        if version != -1 and version != self.versions[path]:
            raise BadVersionError(path)
        self.nodes[path] = value
        self.versions[path] += 1
        return Stat(self.versions[path])


def cluster_of(client: VersionedClient, live: list[int], **options: Any) -> ZkCluster:
    cluster = ZkCluster(FakeSession(client), broker_id=0, **options)  # type: ignore[arg-type]
    brokers = {b: ("127.0.0.1", 9092 + b) for b in live}
    cluster._snapshot = _Snapshot(brokers, {}, {}, 0)
    cluster._controller_epoch = 2
    return cluster


def topic_client() -> VersionedClient:
    return VersionedClient(
        "/admin", "/admin/delete_topics", "/brokers", "/brokers/topics", "/config", "/config/topics"
    )


STATE = "/brokers/topics/t/partitions/0/state"


def test_topics_get_their_replication_factor_with_kafkas_assignment():
    client = topic_client()
    cluster = cluster_of(client, [0, 1, 2], rng=random.Random(3))
    cluster.create_topic("t", 6, 3, {"min.insync.replicas": "2"})
    expected = assign_replicas([0, 1, 2], 6, 3, rng=random.Random(3))
    written = json.loads(client.nodes["/brokers/topics/t"])
    assert written["partitions"] == {str(p): list(r) for p, r in expected.items()}
    topic = cluster.topic("t")
    assert topic is not None and topic.replicas == expected and topic.replication_factor == 3
    with pytest.raises(InvalidReplicationFactor, match="Replication factor: 4 larger"):
        cluster.create_topic("u", 1, 4, {})
    # added partitions keep the replication factor, or take the replicas given
    cluster.add_partitions("t", 8, [])
    grown = json.loads(client.nodes["/brokers/topics/t"])["partitions"]
    assert [len(grown[str(p)]) for p in range(8)] == [3] * 8
    cluster.add_partitions("t", 9, [[2, 0, 1]])
    assert json.loads(client.nodes["/brokers/topics/t"])["partitions"]["8"] == [2, 0, 1]
    assert store_of(cluster).topic("t") == TopicDefinition("t", 9, {"min.insync.replicas": "2"}, 3)


def store_of(cluster: ZkCluster) -> ZkTopicStore:
    return ZkTopicStore(cluster)


def controlled(client: VersionedClient, cluster: ZkCluster) -> None:
    """A controller round: control, then read the cache as the run loop does."""
    cluster._control()
    cluster._snapshot = cluster._read()


def test_the_controller_writes_kafkas_state_and_moves_leaders_with_the_brokers(caplog):
    client = topic_client()
    cluster = cluster_of(client, [0, 1, 2])
    client.create("/brokers/ids", makepath=True)
    for broker in (0, 1, 2):
        client.create(f"/brokers/ids/{broker}", BrokerIdZNode.encode(registration(broker)))
    cluster.create_topic("t", 1, 3, {})
    client.nodes["/brokers/topics/t"] = b'{"version":1,"partitions":{"0":[1,2,0]}}'
    cluster._snapshot = cluster._read()
    controlled(client, cluster)
    assert json.loads(client.nodes[STATE]) == {
        "controller_epoch": 2, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2, 0],
    }  # fmt: skip
    assert cluster.partition_state("t", 0) == (PartitionState(1, 0, (1, 2, 0), 2), 0)
    # broker 1 goes: leader 2, ISR without 1, epoch 1
    del client.nodes["/brokers/ids/1"]
    cluster._snapshot = cluster._read()
    with caplog.at_level(logging.INFO, logger="wirekafka.zk"):
        controlled(client, cluster)
    assert cluster.partition_state("t", 0) == (PartitionState(2, 1, (2, 0), 2), 1)
    assert "t-0 leader 2, ISR [2, 0], leader epoch 1" in caplog.text
    # it returns, is put back in the ISR by the leader, and takes its leadership back
    client.create("/brokers/ids/1", BrokerIdZNode.encode(registration(1)))
    cluster._snapshot = cluster._read()
    controlled(client, cluster)
    assert cluster.partition_state("t", 0) == (PartitionState(2, 1, (2, 0), 2), 1)
    assert cluster.update_isr("t", 0, (2, 0, 1), 1) == 2
    controlled(client, cluster)
    assert cluster.partition_state("t", 0) == (PartitionState(1, 2, (2, 0, 1), 2), 3)


def registration(broker: int) -> BrokerRegistration:
    return BrokerRegistration((EndPoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092 + broker),))


def register(client: VersionedClient, *brokers: int) -> None:
    """The brokers' registrations, as the controller reads who is live."""
    for broker in brokers:
        client.create(
            f"/brokers/ids/{broker}", BrokerIdZNode.encode(registration(broker)), makepath=True
        )


def test_a_state_changed_under_the_controller_is_left_for_the_next_round():
    client = topic_client()
    cluster = cluster_of(client, [0, 1])
    register(client, 0, 1)
    cluster.create_topic("t", 1, 2, {})
    client.nodes["/brokers/topics/t"] = b'{"version":1,"partitions":{"0":[0,1]}}'
    cluster._snapshot = dataclasses.replace(cluster._read(), brokers=cluster._snapshot.brokers)
    cluster._control()
    assert TopicPartitionStateZNode.decode(client.nodes[STATE]).isr == (0, 1)
    del client.nodes["/brokers/ids/1"]  # broker 1 goes

    def leader_shrinks_the_isr(path: str) -> None:
        client.nodes[path] = TopicPartitionStateZNode.encode(PartitionState(0, 0, (0,), 2))
        client.versions[path] += 1

    client.before_set = leader_shrinks_the_isr
    cluster._control()  # its write fails on the version: nothing overwritten
    assert TopicPartitionStateZNode.decode(client.nodes[STATE]) == PartitionState(0, 0, (0,), 2)
    cluster._control()  # nothing left to do: broker 1 is out of the ISR already
    assert client.versions[STATE] == 1


def test_a_topics_unclean_election_setting_wins_over_the_brokers():
    client = topic_client()
    cluster = cluster_of(client, [0, 1], unclean_leader_election_enable=False)
    for name, configs in (("clean", {}), ("unclean", {"unclean.leader.election.enable": "true"})):
        cluster.create_topic(name, 1, 2, configs)
        client.nodes[f"/brokers/topics/{name}"] = b'{"partitions":{"0":[0,1]}}'
        client.create(f"/brokers/topics/{name}/partitions", makepath=True)
        client.create(f"/brokers/topics/{name}/partitions/0")
        client.create(
            f"/brokers/topics/{name}/partitions/0/state",
            TopicPartitionStateZNode.encode(PartitionState(0, 0, (0,), 1)),
        )
    register(client, 1)  # broker 0 is gone
    cluster._control()
    leaders = {
        name: TopicPartitionStateZNode.decode(
            client.nodes[f"/brokers/topics/{name}/partitions/0/state"]
        ).leader
        for name in ("clean", "unclean")
    }
    assert leaders == {"clean": -1, "unclean": 1}


def test_update_isr_writes_on_the_version_it_expects():
    client = topic_client()
    cluster = cluster_of(client, [0, 1, 2])
    client.create(
        STATE, TopicPartitionStateZNode.encode(PartitionState(0, 4, (0, 1, 2), 2)), makepath=True
    )
    cluster._read_partition_state("t", 0)
    assert cluster.partition_state("t", 0) == (PartitionState(0, 4, (0, 1, 2), 2), 0)
    assert cluster.update_isr("t", 0, (0, 1), 0) == 1
    # same leader and leader epoch, the new ISR, in the cache too
    assert json.loads(client.nodes[STATE]) == {
        "controller_epoch": 2, "leader": 0, "version": 1, "leader_epoch": 4, "isr": [0, 1],
    }  # fmt: skip
    assert cluster.partition_state("t", 0) == (PartitionState(0, 4, (0, 1), 2), 1)
    assert cluster.isr("t", 0) == (0, 1) and cluster.leader_epoch("t", 0) == 4
    # a stale version: nothing written, the cache refreshed from ZooKeeper
    client.nodes[STATE] = TopicPartitionStateZNode.encode(PartitionState(1, 5, (1,), 3))
    client.versions[STATE] = 7
    assert cluster.update_isr("t", 0, (0, 1, 2), 1) is None
    assert cluster.partition_state("t", 0) == (PartitionState(1, 5, (1,), 3), 7)
    assert TopicPartitionStateZNode.decode(client.nodes[STATE]).isr == (1,)
    # a version newer than the cache's is read first, and written if it matches
    client.nodes[STATE] = TopicPartitionStateZNode.encode(PartitionState(1, 6, (1, 2), 3))
    client.versions[STATE] = 8
    assert cluster.update_isr("t", 0, (1,), 8) == 9
    assert cluster.partition_state("t", 0) == (PartitionState(1, 6, (1,), 3), 9)
    with pytest.raises(ValueError, match="leaves out the leader 1"):
        cluster.update_isr("t", 0, (0, 2), 9)
    assert cluster.update_isr("u", 0, (0,), 0) is None  # no such partition


def test_update_isr_raises_zookeeper_errors():
    client = FailingClient()
    cluster = ZkCluster(FakeSession(client), broker_id=0)  # type: ignore[arg-type]
    client.error = ConnectionLoss()
    with pytest.raises(ZooKeeperError, match="updating the ISR of t-0"):
        cluster.update_isr("t", 0, (0,), 0)


def shutdown_cluster() -> tuple[VersionedClient, ZkCluster]:
    """Brokers 0 (the controller), 1 and 2; topic t: p0 led by 0, p1 led by 1 with 0 and
    2 in sync, p2 led by 1 alone in its ISR, p3 of one replica on 1."""
    client = topic_client()
    client.create("/brokers/ids", makepath=True)
    for broker in (0, 1, 2):
        client.create(f"/brokers/ids/{broker}", BrokerIdZNode.encode(registration(broker)))
    client.create("/controller", ControllerZNode.encode(0))
    cluster = cluster_of(client, [0, 1, 2])
    client.create(
        "/brokers/topics/t", b'{"partitions":{"0":[0,1,2],"1":[1,0,2],"2":[1,2,0],"3":[1]}}'
    )
    for partition, state in enumerate([
        PartitionState(0, 0, (0, 1, 2), 1),
        PartitionState(1, 0, (1, 0, 2), 1),
        PartitionState(1, 0, (1,), 1),
        PartitionState(1, 0, (1,), 1),
    ]):  # fmt: skip
        client.create(
            f"/brokers/topics/t/partitions/{partition}/state",
            TopicPartitionStateZNode.encode(state),
            makepath=True,
        )
    cluster._snapshot = cluster._read()
    return client, cluster


def state_of(client: VersionedClient, partition: int) -> PartitionState:
    return TopicPartitionStateZNode.decode(
        client.nodes[f"/brokers/topics/t/partitions/{partition}/state"]
    )


def test_a_controlled_shutdown_moves_leaderships_and_leaves_the_isrs(caplog):
    client, cluster = shutdown_cluster()
    epoch = client.czxids["/brokers/ids/1"]
    with caplog.at_level(logging.INFO, logger="wirekafka.zk"):
        remaining = cluster._controlled_shutdown(1, epoch)
    assert remaining == [("t", 2)]  # nobody else in its ISR; p3 has one replica
    assert state_of(client, 0) == PartitionState(0, 1, (0, 2), 2)  # followed: out of the ISR
    assert state_of(client, 1) == PartitionState(0, 1, (0, 2), 2)  # led: moved, epoch bumped
    assert state_of(client, 2) == PartitionState(1, 0, (1,), 1)
    assert state_of(client, 3) == PartitionState(1, 0, (1,), 1)
    assert cluster.partition_state("t", 1) == (PartitionState(0, 1, (0, 2), 2), 1)  # cached
    assert cluster.shutting_down() == {1}
    assert "t-1 leader 0, ISR [0, 2], leader epoch 1: leader 1 -> 0" in caplog.text
    # asked again (a retry), nothing more to do: the same answer, nothing written
    assert cluster._controlled_shutdown(1, -1) == [("t", 2)]
    assert client.versions["/brokers/topics/t/partitions/1/state"] == 1
    # back in p1's ISR (say it caught up), it is still not the preferred leader's pick
    assert cluster.update_isr("t", 1, (0, 2, 1), 1) == 2
    controlled(client, cluster)
    assert state_of(client, 1).leader == 0
    # its registration goes: forgotten, and the next round gives it leadership back
    del client.nodes["/brokers/ids/1"]
    cluster._forget_shutdowns(cluster._read().broker_epochs, time.monotonic())
    assert cluster.shutting_down() == set()
    client.create("/brokers/ids/1", BrokerIdZNode.encode(registration(1)))
    cluster._snapshot = cluster._read()
    controlled(client, cluster)
    assert state_of(client, 1).leader == 1


def test_a_controlled_shutdown_is_forgotten_when_the_broker_registers_anew():
    client, cluster = shutdown_cluster()
    cluster._controlled_shutdown(2, -1)
    marked_before = time.monotonic()
    assert cluster.shutting_down() == {2}
    cluster._forget_shutdowns(cluster._read().broker_epochs, marked_before)
    assert cluster.shutting_down() == {2}  # same registration: still shutting down
    del client.nodes["/brokers/ids/2"]
    # a registration read before the mark proves nothing: kept
    cluster._forget_shutdowns({}, 0.0)
    assert cluster.shutting_down() == {2}
    client.create("/brokers/ids/2", BrokerIdZNode.encode(registration(2)))
    cluster._forget_shutdowns(cluster._read().broker_epochs, marked_before)
    assert cluster.shutting_down() == set()


def test_a_controlled_shutdown_races_the_leaders_isr_change():
    client, cluster = shutdown_cluster()
    path = "/brokers/topics/t/partitions/0/state"

    def leader_shrinks_the_isr(written: str) -> None:
        assert written == path
        client.nodes[path] = TopicPartitionStateZNode.encode(PartitionState(0, 0, (0, 2), 1))
        client.versions[path] += 1

    client.before_set = leader_shrinks_the_isr
    assert cluster._controlled_shutdown(2, -1) == []
    # read again and decided again: 2 out of what the leader wrote
    assert state_of(client, 0) == PartitionState(0, 1, (0,), 2)


def test_a_controlled_shutdown_is_refused_as_kafka_refuses_it():
    client, cluster = shutdown_cluster()
    with pytest.raises(BrokerNotAvailable, match="broker 7 is not registered"):
        cluster._controlled_shutdown(7, -1)
    with pytest.raises(StaleBrokerEpoch, match="older than its registration"):
        cluster._controlled_shutdown(1, client.czxids["/brokers/ids/1"] - 1)
    client.nodes["/controller"] = ControllerZNode.encode(2)
    with pytest.raises(NotController):
        cluster._controlled_shutdown(1, -1)
    del client.nodes["/controller"]
    with pytest.raises(NotController):
        cluster._controlled_shutdown(1, -1)
    assert cluster.shutting_down() == set()
    assert client.versions["/brokers/topics/t/partitions/1/state"] == 0


def test_the_shutdown_target_is_the_controller_and_this_brokers_epoch():
    client, _ = shutdown_cluster()
    broker = ZkCluster(FakeSession(client), broker_id=2)  # type: ignore[arg-type]
    assert broker.shutdown_target() == ShutdownTarget(
        0, "127.0.0.1", 9092, client.czxids["/brokers/ids/2"]
    )
    client.connected = False
    assert broker.shutdown_target() is None
    client.connected = True
    del client.nodes["/controller"]
    assert broker.shutdown_target() is None


def test_the_controller_reads_who_is_live_afresh():
    """A broker that registered after the cache was read, and that its leader has put
    back in the ISR already, is not taken out again as gone."""
    client = topic_client()
    cluster = cluster_of(client, [0, 2])  # the cache, from before broker 1 came back
    register(client, 0, 1, 2)
    client.create("/brokers/topics/t", b'{"partitions":{"0":[0,1,2]}}')
    client.create(STATE, TopicPartitionStateZNode.encode(PartitionState(0, 3, (0, 2, 1), 2)),
                  makepath=True)  # fmt: skip
    cluster._snapshot = dataclasses.replace(cluster._read(), brokers=cluster._snapshot.brokers)
    cluster._control()
    assert client.versions[STATE] == 0  # nothing written


def test_rounds_run_at_once_then_when_asked_and_as_a_safety_net(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A round reads every partition's state: the cache is refreshed when a watch
    fires or the broker changed it, and otherwise only every REFRESH_SECONDS; a
    round that failed is tried again after RETRY_SECONDS. (Rounds run here on the
    loop, not in a worker thread: the mock clock would jump while a thread works.)"""

    async def on_the_loop(_pool: object, function: Callable[[], Any]) -> Any:
        return function()

    monkeypatch.setattr("wirekafka.zk.cluster.run_blocking", on_the_loop)
    cluster = ZkCluster(FakeSession(VersionedClient()), broker_id=0)  # type: ignore[arg-type]
    rounds: list[float] = []
    failing = [False]

    def counted_round() -> _Snapshot:
        rounds.append(trio.current_time())
        if failing[0]:
            failing[0] = False
            raise ConnectionLoss("ZooKeeper went away")
        return _Snapshot({}, {}, {}, 0)

    cluster._round = counted_round  # type: ignore[method-assign]

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cluster.run)
            await trio.sleep(25)  # at once, then at 10 and 20 s
            cluster._rounds.ask_on_loop()  # a watch fired
            await trio.sleep(1)
            failing[0] = True
            cluster._rounds.ask_on_loop()
            await trio.sleep(1)
            nursery.cancel_scope.cancel()

    trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [round(t - rounds[0], 1) for t in rounds] == [
        0.0,
        REFRESH_SECONDS,
        2 * REFRESH_SECONDS,
        25.0,
        26.0,
        26.0 + RETRY_SECONDS,
    ]


def test_a_round_that_reads_nothing_new_keeps_the_cache_and_its_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Most rounds (every REFRESH_SECONDS, or a watch on a znode written back as it
    was) find the cluster as it was: the cache stays the same object and its
    generation does not move, so that readers need not go through it again (the
    replica manager's roles). A change read, or one the broker made, moves it."""

    async def on_the_loop(_pool: object, function: Callable[[], Any]) -> Any:
        return function()

    monkeypatch.setattr("wirekafka.zk.cluster.run_blocking", on_the_loop)
    client = topic_client()
    register(client, 0, 1)
    client.create("/controller", ControllerZNode.encode(1))  # another broker controls
    client.create("/brokers/topics/t", b'{"partitions":{"0":[0,1]}}')
    client.create(STATE, TopicPartitionStateZNode.encode(PartitionState(0, 0, (0, 1), 2)),
                  makepath=True)  # fmt: skip
    cluster = ZkCluster(FakeSession(client), broker_id=0)  # type: ignore[arg-type]
    seen: list[tuple[int, _Snapshot]] = []

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cluster.run)
            await trio.sleep(1)  # the first round
            seen.append((cluster.generation, cluster._snapshot))
            await trio.sleep(2 * REFRESH_SECONDS)  # two rounds that read the same
            seen.append((cluster.generation, cluster._snapshot))
            client.set(STATE, TopicPartitionStateZNode.encode(PartitionState(0, 0, (0,), 2)))
            cluster._watch(WatchedEvent(EventType.CHANGED, KeeperState.CONNECTED, STATE))
            await trio.sleep(1)
            seen.append((cluster.generation, cluster._snapshot))
            cluster.refresh()  # as the broker's own changes publish the cache
            seen.append((cluster.generation, cluster._snapshot))
            nursery.cancel_scope.cancel()

    # the rounds run on the loop here (the mock clock would jump while a thread reads)
    checked = worker_threads.blocking_check()
    worker_threads.set_blocking_check("off")
    try:
        trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        worker_threads.set_blocking_check(checked)
    (first, cache), (later, same), (changed, shrunk), (published, _) = seen
    assert cache.states[("t", 0)][0].isr == (0, 1)
    assert (later, same) == (first, cache) and same is cache
    assert changed == first + 1 and shrunk.states[("t", 0)][0].isr == (0,)
    assert published == changed + 1


class CountingClient(VersionedClient):
    """A VersionedClient that records the znodes read."""

    def __init__(self, *paths: str) -> None:
        super().__init__(*paths)
        self.read: list[str] = []

    def get(self, path: str, **options: Any) -> tuple[bytes, Any]:
        self.read.append(path)
        return super().get(path, **options)


def test_the_controller_decides_from_the_cached_states_and_reads_only_those_missing():
    """A round's control pass costs no read per partition: the cache's states were
    read with watches. A stale one is written at its version only, so the write of
    a state changed since fails and is left for the next round."""
    client = CountingClient(*topic_client().nodes)
    cluster = cluster_of(client, [0, 1])
    register(client, 0, 1)
    cluster.create_topic("t", 2, 2, {})
    client.nodes["/brokers/topics/t"] = b'{"version":1,"partitions":{"0":[0,1],"1":[1,0]}}'
    controlled(client, cluster)  # the first states, read back into the cache
    del client.nodes["/brokers/ids/1"]  # broker 1 goes: t-1 moves to 0, both ISRs shrink
    other = "/brokers/topics/t/partitions/1/state"
    client.versions[other] += 1  # t-1's state changed since the cache read it
    client.read.clear()
    cluster._control()
    assert not [path for path in client.read if path.endswith("/state")]
    assert TopicPartitionStateZNode.decode(client.nodes[STATE]) == PartitionState(0, 1, (0,), 2)
    assert client.versions[other] == 1  # stale: not written
    cluster._snapshot = cluster._read()  # the next round reads it again, and writes it
    cluster._control()
    assert TopicPartitionStateZNode.decode(client.nodes[other]) == PartitionState(0, 1, (0,), 2)
    del client.nodes[other]  # gone from ZooKeeper and so from the cache: read, made anew
    cluster._snapshot = cluster._read()
    client.read.clear()
    cluster._control()
    assert [path for path in client.read if path.endswith("/state")] == [other]
    assert TopicPartitionStateZNode.decode(client.nodes[other]).leader == 0


def watched_cluster() -> tuple[CountingClient, ZkCluster]:
    """Broker 0 of two, broker 1 the controller; topic t of two partitions, their
    states written; the cache read in full once."""
    client = CountingClient(*topic_client().nodes)
    register(client, 0, 1)
    client.create("/controller", ControllerZNode.encode(1))
    client.create("/brokers/topics/t", b'{"partitions":{"0":[0,1],"1":[1,0]}}')
    for partition in (0, 1):
        state = PartitionState(partition, 0, (0, 1), 2)
        client.create(f"/brokers/topics/t/partitions/{partition}/state",
                      TopicPartitionStateZNode.encode(state), makepath=True)  # fmt: skip
    cluster = ZkCluster(FakeSession(client), broker_id=0)  # type: ignore[arg-type]
    cluster._snapshot = cluster._round()
    return client, cluster


def topic_reads(client: CountingClient) -> list[str]:
    reads = sorted(p for p in client.read if p.startswith(("/brokers/topics/", "/config/")))
    client.read.clear()
    return reads


OTHER_STATE = "/brokers/topics/t/partitions/1/state"


def test_a_round_reads_again_only_the_znodes_whose_watch_fired() -> None:
    """Between full reads a round reads no topic or state whose watch has not fired:
    the cache's own stand. One that fired is read again; a lost connection (kazoo
    drops every watch, calling each without a path) has them all read again."""
    client, cluster = watched_cluster()
    assert topic_reads(client) == [
        "/brokers/topics/t", STATE, OTHER_STATE, "/config/topics/t",
    ]  # fmt: skip
    kept = cluster._snapshot
    cluster._snapshot = cluster._round()
    assert topic_reads(client) == []
    assert cluster._snapshot is kept  # the same content: the same cache
    client.set(OTHER_STATE, TopicPartitionStateZNode.encode(PartitionState(0, 1, (0,), 2)))
    cluster._watch(WatchedEvent(EventType.CHANGED, KeeperState.CONNECTED, OTHER_STATE))
    cluster._snapshot = cluster._round()
    assert topic_reads(client) == [OTHER_STATE]
    assert cluster.partition_state("t", 1) == (PartitionState(0, 1, (0,), 2), 1)
    assert cluster.partition_state("t", 0) == kept.states[("t", 0)]
    cluster._watch(WatchedEvent(EventType.NONE, KeeperState.CONNECTING, None))
    cluster._snapshot = cluster._round()
    assert len(topic_reads(client)) == 4


def test_every_znode_is_read_again_after_a_failed_round_and_every_full_read_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, cluster = watched_cluster()
    topic_reads(client)
    original = client.get

    def failing_get(path: str, **options: Any) -> tuple[bytes, Any]:
        if path == OTHER_STATE:
            raise ConnectionLoss("ZooKeeper went away")
        return original(path, **options)

    cluster._watch(WatchedEvent(EventType.CHANGED, KeeperState.CONNECTED, OTHER_STATE))
    client.get = failing_get  # type: ignore[method-assign]
    with pytest.raises(ConnectionLoss):
        cluster._round()
    client.get = original  # type: ignore[method-assign]
    topic_reads(client)
    cluster._snapshot = cluster._round()
    assert len(topic_reads(client)) == 4  # the watches of the failed round may be missing
    cluster._snapshot = cluster._round()
    assert topic_reads(client) == []
    later = time.monotonic() + FULL_READ_SECONDS
    monkeypatch.setattr("wirekafka.zk.cluster.time.monotonic", lambda: later)
    cluster._snapshot = cluster._round()
    assert len(topic_reads(client)) == 4


def test_what_a_round_dropped_for_a_change_of_this_brokers_read_is_read_again() -> None:
    """A round during which the broker changed the cache itself is dropped; what it
    read (a leader elected elsewhere, say) must not count as read: the next round
    reads it again, and the cache gets the new state. What the dropped round did not
    read stays as read."""
    client, cluster = watched_cluster()
    elected = PartitionState(1, 1, (1,), 2)
    client.set(OTHER_STATE, TopicPartitionStateZNode.encode(elected))
    cluster._watch(WatchedEvent(EventType.CHANGED, KeeperState.CONNECTED, OTHER_STATE))
    changes = cluster._changes
    dropped = cluster._round()
    assert dropped.states[("t", 1)] == (elected, 1)
    cluster._changes += 1  # as a publish of this broker's, while the round ran
    generation = cluster.generation
    assert not cluster._take_round(dropped, changes)
    assert cluster.generation == generation
    assert cluster.partition_state("t", 1) != (elected, 1)
    topic_reads(client)
    assert cluster._take_round(cluster._round(), cluster._changes)
    assert topic_reads(client) == [OTHER_STATE]
    assert cluster.partition_state("t", 1) == (elected, 1)
    assert cluster.generation == generation + 1
