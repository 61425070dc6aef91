"""What every request handler reaches: the broker's config, logs, topics and producer ids."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wirekafka.broker.acl_changes import AclChanges
from wirekafka.broker.appends import AppendWatch
from wirekafka.broker.cluster import (
    BrokerEndpoint,
    ClusterView,
    LocalCluster,
    TopicStore,
    ZkClusterView,
    ZkTopicStore,
)
from wirekafka.broker.group_runtime import GroupRuntime
from wirekafka.broker.metrics import BrokerMetrics
from wirekafka.broker.offsets_log import OffsetsLog
from wirekafka.broker.producers import ProducerIds
from wirekafka.broker.replication import ReplicaManager
from wirekafka.broker.scram_users import ScramUsers
from wirekafka.broker.topics import (
    TopicManager,
    adopted_topic,
    restore_offsets_topic_configs,
    topic_log_config,
)
from wirekafka.config import BrokerConfig
from wirekafka.fd_budget import FdBudget, current_fd_limit, fd_budget
from wirekafka.groups.coordinator import CoordinatorConfig, GroupCoordinator
from wirekafka.groups.offset_store import OffsetStore
from wirekafka.security.authorizer import AclAuthorizer
from wirekafka.storage.cleaner_process import CleanerProcess
from wirekafka.storage.cluster_metadata import CLUSTER_METADATA_FILE, ClusterMetadata
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import Clock
from wirekafka.storage.log_manager import LogManager
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE, SecurityMetadata
from wirekafka.worker_threads import blocking
from wirekafka.zk.acl_store import ZkAclStore
from wirekafka.zk.cluster import ZkCluster
from wirekafka.zk.scram_credentials import ZkScramCredentials


class CloseConnection(Exception):
    """The request cannot be answered: the server closes the connection.

    Used where Kafka closes rather than answers (an error on an acks=0
    produce); the message is logged with the peer.
    """


@dataclass(slots=True)
class BrokerContext:
    config: BrokerConfig
    clock: Clock
    logs: LogManager
    topics: TopicManager
    producer_ids: ProducerIds
    cluster_id: str
    endpoint: BrokerEndpoint
    cluster: ClusterView
    groups: GroupRuntime
    fd_budget: FdBudget
    zookeeper: ZkCluster | None = None  # set with zookeeper.connect
    appends: AppendWatch = field(default_factory=AppendWatch)
    replicas: ReplicaManager | None = None  # set with zookeeper.connect: partitions replicate
    metrics: BrokerMetrics = field(default_factory=BrokerMetrics)  # counters for /metrics
    # SCRAM credentials: the embedded default's file, or ZooKeeper's /config/users
    scram_users: ScramUsers | None = None
    authorizer: AclAuthorizer | None = None  # set with authorizer.class.name: requests are checked
    acl_changes: AclChanges | None = None  # where CreateAcls and DeleteAcls write


@blocking
def open_broker_context(
    config: BrokerConfig,
    clock: Clock,
    endpoints: Mapping[str, BrokerEndpoint],
    zookeeper: ZkCluster | None = None,
    budget: FdBudget | None = None,
) -> BrokerContext:
    """Open the log dirs (recovering them if the last stop was not clean),
    the topics' metadata and, with an authorizer, the ACLs (the embedded files,
    or ZooKeeper), and build the state every handler shares. ``endpoints``: this broker on each advertised listener, the
    inter-broker one first. ``budget`` defaults to the split of this process's
    open file limit that the config asks for."""
    if budget is None:
        budget = broker_fd_budget(config)
    endpoint = next(iter(endpoints.values()))
    store: TopicStore
    cluster: ClusterView
    credentials: SecurityMetadata | ZkScramCredentials
    acl_store: SecurityMetadata | ZkAclStore
    if zookeeper is None:
        store = ClusterMetadata(config.log_dirs[0] / CLUSTER_METADATA_FILE)
        cluster = LocalCluster(endpoints)
        # one file holds the embedded default's users and ACLs
        credentials = acl_store = SecurityMetadata(config.log_dirs[0] / SECURITY_METADATA_FILE)
    else:
        acl_store = ZkAclStore(zookeeper.session)
        store, cluster = ZkTopicStore(zookeeper), ZkClusterView(zookeeper)
        credentials = ZkScramCredentials(zookeeper.session, zookeeper.trio_token)
        credentials.refresh()
        # a new session has none of the old one's watches: read them all again
        zookeeper.session.on_new_session(credentials.refresh)
    restore_offsets_topic_configs(store)  # before its logs open, so they open compacted
    topics_at_start = store.topics()

    def topic_config(name: str) -> LogConfig:
        # a topic only on disk is adopted below, an internal one with the broker's configs
        return topic_log_config(config.log, topics_at_start.get(name) or adopted_topic(name, 0))

    logs = LogManager(
        config.log_dirs,
        config.log,
        clock,
        broker_id=config.broker_id,
        topic_config=topic_config,
        producer_id_expiration_ms=config.producer_id_expiration_ms,
        open_files=budget.open_files,
        cleaner=CleanerProcess(),
    )
    logs.startup(config.cluster_id)
    topics = TopicManager(
        config, store, logs, cluster, endpoint.node_id, max_partitions=budget.max_partitions
    )
    if zookeeper is None:
        topics.adopt_partition_dirs()
    groups = GroupRuntime(
        GroupCoordinator(
            CoordinatorConfig(
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            )
        ),
        OffsetStore(),
        OffsetsLog(topics, config.offsets_topic_num_partitions, clock),
        clock,
        offsets_retention_ms=config.offsets_retention_ms,
        offset_metadata_max_bytes=config.offset_metadata_max_bytes,
    )
    groups.load()
    appends = AppendWatch()
    acl_changes = AclChanges(acl_store)
    authorizer = None
    if config.authorizer is not None:
        authorizer = AclAuthorizer(
            config.authorizer.super_users, config.authorizer.allow_everyone_if_no_acl_found
        )
        authorizer.add(acl_changes.load())
    replicas = None
    if zookeeper is not None:
        replicas = ReplicaManager(
            config.broker_id,
            zookeeper,
            topics,
            appends,
            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
        )
    return BrokerContext(
        config=config,
        clock=clock,
        logs=logs,
        topics=topics,
        producer_ids=ProducerIds(store),
        cluster_id=logs.cluster_id,
        endpoint=endpoint,
        cluster=cluster,
        groups=groups,
        fd_budget=budget,
        zookeeper=zookeeper,
        appends=appends,
        replicas=replicas,
        scram_users=ScramUsers(credentials),
        authorizer=authorizer,
        acl_changes=acl_changes,
    )


def broker_fd_budget(config: BrokerConfig, fd_limit: int | None = None) -> FdBudget:
    """The file descriptors of this process (or ``fd_limit``) split as the config asks."""
    return fd_budget(
        current_fd_limit() if fd_limit is None else fd_limit,
        max_connections=config.max_connections,
        max_connections_per_ip=config.max_connections_per_ip,
        max_partitions=config.max_broker_partitions,
    )
