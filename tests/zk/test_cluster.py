"""ZooKeeper failures while topics and producer ids are written: the cache stays as
it was, and the topic store raises MetadataSaveError, as the embedded file does."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from wirekafka.broker.cluster import ZkTopicStore
from wirekafka.storage.cluster_metadata import MetadataSaveError, TopicDefinition
from wirekafka.zk.cluster import ZkCluster, ZkTopic, _Snapshot
from wirekafka.zk.session import ZooKeeperError


class FailingClient:
    """A kazoo client whose writes fail with ``error`` while it is set."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.nodes: dict[str, bytes] = {}

    def _maybe_fail(self) -> None:
        if self.error is not None:
            raise self.error

    def exists(self, path: str) -> bool:
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

    def get(self, path: str) -> tuple[bytes, Any]:
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
