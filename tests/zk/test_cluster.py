"""ZooKeeper failures while topics and producer ids are written: the cache stays as
it was, and the topic store raises MetadataSaveError, as the embedded file does."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from wirekafka.handlers.cluster import ZkTopicStore
from wirekafka.storage.cluster_metadata import MetadataSaveError, TopicDefinition
from wirekafka.zk.cluster import ZkCluster
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
