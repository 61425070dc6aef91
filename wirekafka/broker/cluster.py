"""Who is in the cluster and who leads what: one broker alone (the embedded
default), or what ZooKeeper says (:mod:`wirekafka.zk.cluster`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from wirekafka.storage.cluster_metadata import MetadataSaveError, TopicDefinition
from wirekafka.worker_threads import blocking
from wirekafka.zk.cluster import ZkCluster, ZkTopic
from wirekafka.zk.election import NO_LEADER
from wirekafka.zk.session import ZooKeeperError

__all__ = [
    "NO_LEADER",
    "BrokerEndpoint",
    "ClusterView",
    "LocalCluster",
    "TopicStore",
    "ZkClusterView",
    "ZkTopicStore",
]


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """How clients reach a broker (its advertised listener, port resolved)."""

    node_id: int
    host: str
    port: int


class ClusterView(Protocol):
    def brokers(self, listener_name: str | None = None) -> list[BrokerEndpoint]:
        """The live brokers, as reached on ``listener_name`` (None: the listener brokers
        reach each other on); a broker without that listener is left out."""
        ...

    def controller_id(self) -> int: ...

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader; NO_LEADER when it has none."""
        ...

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The partition's assigned replicas, preferred leader first."""
        ...

    def isr(self, topic: str, partition: int) -> list[int]:
        """The partition's in-sync replicas, as its state says."""
        ...

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch; -1 before it has a leader and ISR."""
        ...


class TopicStore(Protocol):
    """Where topic definitions and producer-id blocks are kept.

    A change that cannot be recorded raises MetadataSaveError and changes nothing."""

    def topic(self, name: str) -> TopicDefinition | None: ...

    def topics(self) -> dict[str, TopicDefinition]: ...

    def put_topics(self, topics: list[TopicDefinition]) -> None: ...

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None: ...

    def add_partitions(self, name: str, partitions: int, brokers: list[list[int]]) -> None:
        """Raise a topic's partition count; ``brokers``: each new partition's
        replicas (empty: the store chooses, with the topic's replication factor)."""
        ...

    def remove_topic(self, name: str) -> bool: ...

    def allocate_producer_ids(self, count: int) -> range: ...


class LocalCluster:
    """The embedded default: this broker is the cluster and leads everything."""

    def __init__(self, listeners: Mapping[str, BrokerEndpoint]) -> None:
        """``listeners``: this broker on each advertised listener, the inter-broker one
        first."""
        self.endpoint = next(iter(listeners.values()))
        self.listeners = listeners

    def brokers(self, listener_name: str | None = None) -> list[BrokerEndpoint]:
        if listener_name is None:
            return [self.endpoint]
        found = self.listeners.get(listener_name)
        return [found] if found is not None else []

    def controller_id(self) -> int:
        return self.endpoint.node_id

    def leader(self, topic: str, partition: int) -> int:
        return self.endpoint.node_id

    def replicas(self, topic: str, partition: int) -> list[int]:
        return [self.endpoint.node_id]

    def isr(self, topic: str, partition: int) -> list[int]:
        return [self.endpoint.node_id]

    def leader_epoch(self, topic: str, partition: int) -> int:
        return 0


class ZkClusterView:
    def __init__(self, cluster: ZkCluster) -> None:
        self.cluster = cluster

    def brokers(self, listener_name: str | None = None) -> list[BrokerEndpoint]:
        cluster = self.cluster
        found = cluster.brokers() if listener_name is None else cluster.brokers_on(listener_name)
        return [
            BrokerEndpoint(node_id, host, port) for node_id, (host, port) in sorted(found.items())
        ]

    def controller_id(self) -> int:
        return self.cluster.controller_id()

    def leader(self, topic: str, partition: int) -> int:
        return self.cluster.leader(topic, partition)

    def replicas(self, topic: str, partition: int) -> list[int]:
        found = self.cluster.topic(topic)
        return list(found.replicas.get(partition, ())) if found else []

    def isr(self, topic: str, partition: int) -> list[int]:
        return list(self.cluster.isr(topic, partition))

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self.cluster.leader_epoch(topic, partition)


class ZkTopicStore:
    """Topics in ZooKeeper; producer-id blocks in ``/latest_producer_id_block``."""

    def __init__(self, cluster: ZkCluster) -> None:
        self.cluster = cluster

    def topic(self, name: str) -> TopicDefinition | None:
        found = self.cluster.topic(name)
        return None if found is None else _definition(found)

    def topics(self) -> dict[str, TopicDefinition]:
        return {name: _definition(t) for name, t in self.cluster.topics().items()}

    @blocking
    def put_topics(self, topics: list[TopicDefinition]) -> None:
        """Create topics (TopicAlreadyExists when one exists, InvalidReplicationFactor
        when the live brokers are fewer than its replicas)."""
        with _recording():
            for topic in topics:
                self.cluster.create_topic(
                    topic.name,
                    topic.partitions,
                    topic.replication_factor,
                    topic.configs,
                    topic.assignment,
                )

    @blocking
    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        with _recording():
            self.cluster.set_topic_configs(name, configs)

    @blocking
    def add_partitions(self, name: str, partitions: int, brokers: list[list[int]]) -> None:
        with _recording():
            self.cluster.add_partitions(name, partitions, brokers)

    @blocking
    def remove_topic(self, name: str) -> bool:
        if self.cluster.topic(name) is None:
            return False
        with _recording():
            self.cluster.request_deletion(name)
        return True

    @blocking
    def allocate_producer_ids(self, count: int) -> range:
        with _recording():
            return self.cluster.allocate_producer_ids(count)


def _definition(topic: ZkTopic) -> TopicDefinition:
    return TopicDefinition(topic.name, topic.partitions, topic.configs, topic.replication_factor)


@contextlib.contextmanager
def _recording() -> Iterator[None]:
    """A ZooKeeper failure while a change is recorded is a MetadataSaveError, as the
    embedded file's are: the change did not happen."""
    try:
        yield
    except ZooKeeperError as exc:
        raise MetadataSaveError(str(exc)) from exc
