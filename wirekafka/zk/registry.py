"""The broker's place in ZooKeeper: Kafka's persistent paths, the cluster id,
and the ephemeral ``/brokers/ids/<broker.id>`` registration."""

from __future__ import annotations

import contextlib
import logging
import time

from kazoo.exceptions import NodeExistsError, NoNodeError

from wirekafka.worker_threads import blocking
from wirekafka.zk.session import ZkSession, ZooKeeperError
from wirekafka.zk.znodes import (
    PERSISTENT_ZK_PATHS,
    BrokerIdZNode,
    BrokerRegistration,
    ClusterIdZNode,
    ClusterZNode,
    EndPoint,
)

log = logging.getLogger("wirekafka.zk")

_POLL_SECONDS = 0.25


class BrokerRegistry:
    def __init__(self, session: ZkSession, broker_id: int, endpoints: tuple[EndPoint, ...]) -> None:
        """``endpoints``: the advertised listeners, the inter-broker one first."""
        self.session = session
        self.broker_id = broker_id
        self.endpoints = endpoints
        self.path = BrokerIdZNode.path(broker_id)

    @blocking
    def ensure_paths(self) -> None:
        """Kafka's persistent znodes (``/brokers/ids``, ``/brokers/topics``, ...)."""
        client = self.session.client
        for path in PERSISTENT_ZK_PATHS:
            client.ensure_path(path)  # with its parents

    @blocking
    def cluster_id(self, proposed: str) -> str:
        """The cluster's id from ``/cluster/id``; ``proposed`` becomes it if none is set."""
        client = self.session.client
        client.ensure_path(ClusterZNode.path)
        with contextlib.suppress(NodeExistsError):
            client.create(ClusterIdZNode.path, ClusterIdZNode.encode(proposed))
        data, _ = client.get(ClusterIdZNode.path)
        return ClusterIdZNode.decode(data)

    def _registration(self) -> bytes:
        return BrokerIdZNode.encode(BrokerRegistration(endpoints=self.endpoints))

    @blocking
    def register(self) -> None:
        """Create the ephemeral broker znode.

        A node left by this broker's previous (killed) process goes when that
        session expires, so a node owned by another session is waited out for
        up to ``zookeeper.session.timeout.ms``; if it is still there, another
        live broker has this id and startup stops.
        """
        client = self.session.client
        data = self._registration()
        deadline = time.monotonic() + self.session.session_timeout_ms / 1000 + 1
        while True:
            try:
                client.create(self.path, data, ephemeral=True, makepath=True)
                log.info(
                    "registered as %s at %s",
                    self.path,
                    ", ".join(e.connection_string for e in self.endpoints),
                )
                return
            except NodeExistsError:
                try:
                    _, stat = client.get(self.path)
                except NoNodeError:
                    continue
                if stat.owner_session_id == client.client_id[0]:
                    return  # ours already (a retried create)
                if time.monotonic() >= deadline:
                    raise ZooKeeperError(
                        f"broker.id {self.broker_id} is already registered in ZooKeeper "
                        f"({self.session.connect}{self.path}) by another live broker"
                    ) from None
                time.sleep(_POLL_SECONDS)

    @blocking
    def deregister(self) -> None:
        client = self.session.client
        try:
            _, stat = client.get(self.path)
            if stat.owner_session_id == client.client_id[0]:
                client.delete(self.path)
        except NoNodeError:
            pass


@blocking
def join_zookeeper(
    connect: str,
    *,
    session_timeout_ms: int,
    connection_timeout_ms: int,
    broker_id: int,
    endpoints: tuple[EndPoint, ...],
    proposed_cluster_id: str,
) -> tuple[BrokerRegistry, str]:
    """Connect, create Kafka's persistent paths, and agree on the cluster id.

    The broker registers (:meth:`BrokerRegistry.register`) once its logs are
    open, and again after every new session.
    """
    session = ZkSession(
        connect, session_timeout_ms=session_timeout_ms, connection_timeout_ms=connection_timeout_ms
    )
    session.start()
    try:
        registry = BrokerRegistry(session, broker_id, endpoints)
        registry.ensure_paths()
        cluster_id = registry.cluster_id(proposed_cluster_id)
    except BaseException:
        session.stop()
        raise
    session.on_new_session(registry.register)
    return registry, cluster_id


@blocking
def leave_zookeeper(registry: BrokerRegistry) -> None:
    try:
        registry.deregister()
    finally:
        registry.session.stop()
