"""Topics of the embedded default: names, partition counts, configs, creation
and deletion, all recorded in :class:`ClusterMetadata` and the log dirs."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from wirekafka.config import BrokerConfig
from wirekafka.handlers.cluster import ClusterView, TopicStore
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.cluster_metadata import TopicDefinition
from wirekafka.storage.config import ConfigError, LogConfig, check_topic_keys
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.log_manager import LogManager
from wirekafka.zk.cluster import TopicAlreadyExists

log = logging.getLogger("wirekafka.topics")

MAX_TOPIC_NAME_CHARS = 249
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, "__transaction_state"})
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True, slots=True)
class TopicError:
    code: ErrorCode
    message: str


def topic_name_error(name: str | None) -> TopicError | None:
    """Kafka's rules: ASCII letters, digits, ``.``, ``_``, ``-``; at most 249; not ``.``/``..``."""
    if not name:
        return TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is empty")
    if name in (".", ".."):
        return TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is not allowed")
    if len(name) > MAX_TOPIC_NAME_CHARS:
        return TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name is {len(name)} characters long, more than {MAX_TOPIC_NAME_CHARS}",
        )
    if not _LEGAL_NAME.match(name):
        return TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_', '-'",
        )
    return None


def topic_log_config(broker_config: LogConfig, topic: TopicDefinition | None) -> LogConfig:
    """A topic's log settings: the broker's, with the topic's own keys applied."""
    return broker_config.with_overrides(topic.configs) if topic and topic.configs else broker_config


class TopicManager:
    def __init__(
        self,
        config: BrokerConfig,
        metadata: TopicStore,
        logs: LogManager,
        cluster: ClusterView,
        broker_id: int,
        max_partitions: int | None = None,
    ) -> None:
        """``max_partitions``: max.broker.partitions as in force (``FdBudget.max_partitions``);
        None: no limit."""
        self.config = config
        self.metadata = metadata
        self.logs = logs
        self.cluster = cluster
        self.broker_id = broker_id
        self.max_partitions = max_partitions

    def adopt_partition_dirs(self) -> None:
        """Record topics found as partition dirs but missing from the metadata file."""
        found: dict[str, int] = {}
        for partition_log in self.logs.all_logs():
            count = found.get(partition_log.topic, 0)
            found[partition_log.topic] = max(count, partition_log.partition + 1)
        missing = [
            TopicDefinition(name, count)
            for name, count in found.items()
            if self.metadata.topic(name) is None
        ]
        for topic in missing:
            log.warning(
                "adopting topic %s with %d partitions from its log dirs",
                topic.name,
                topic.partitions,
            )
        self.metadata.put_topics(missing)

    def topic(self, name: str) -> TopicDefinition | None:
        return self.metadata.topic(name)

    def names(self) -> list[str]:
        return sorted(self.metadata.topics())

    def log_config(self, name: str) -> LogConfig:
        return topic_log_config(self.config.log, self.metadata.topic(name))

    def partition_log(self, name: str, partition: int) -> PartitionLog | ErrorCode:
        """The partition's log, created on first use; an error for unknown partitions."""
        topic = self.metadata.topic(name)
        if topic is None or not 0 <= partition < topic.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if self.cluster.leader(name, partition) != self.broker_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        existing = self.logs.get_log(name, partition)
        if existing is not None:
            return existing
        return self.logs.get_or_create_log(name, partition, self.log_config(name))

    def check_new_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> TopicError | None:
        invalid = topic_name_error(name)
        if invalid is not None:
            return invalid
        if self.metadata.topic(name) is not None:
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if partitions < 1:
            return TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"number of partitions {partitions} must be at least 1",
            )
        if replication_factor != 1:
            return TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor {replication_factor} is larger than the 1 available broker"
                if replication_factor > 1
                else f"replication factor {replication_factor} must be at least 1",
            )
        try:
            check_topic_keys(configs)
            self.config.log.with_overrides(configs)
        except ConfigError as exc:
            return TopicError(ErrorCode.INVALID_CONFIG, str(exc))
        return self._partition_limit_error(name, partitions)

    # max.broker.partitions

    def hosted_partitions(self) -> int:
        """The partitions this broker hosts: those with a replica here (in the
        embedded default, every partition of every topic)."""
        me = self.broker_id
        replicas = self.cluster.replicas
        return sum(
            1
            for name, topic in self.metadata.topics().items()
            for partition in range(topic.partitions)
            if me in replicas(name, partition)
        )

    def _share(self, partitions: int) -> int:
        """How many of a new topic's partitions this broker would host at most:
        ZooKeeper mode spreads them round robin over the live brokers."""
        brokers = max(1, len(self.cluster.brokers()))
        return -(-partitions // brokers)

    def _partition_limit_error(self, name: str, partitions: int) -> TopicError | None:
        """Refuse a topic that would take this broker past max.broker.partitions
        (KIP-578's key), which defaults to what its file descriptors allow.

        ``__consumer_offsets`` counts, but is never refused: the broker creates
        it for consumer groups, and room is kept for it (its share of
        ``offsets.topic.num.partitions``) until it exists. A broker already past
        the limit (restarted with fewer descriptors) serves what it has and
        refuses new topics. Each broker checks its own share only: in
        ZooKeeper mode the others' limits are not known here.
        """
        limit = self.max_partitions
        if limit is None:
            return None
        hosted = self.hosted_partitions()
        adding = self._share(partitions)
        if name == CONSUMER_OFFSETS_TOPIC:
            if hosted + adding > limit:
                log.warning(
                    "creating %s takes this broker to %d partitions, past "
                    "max.broker.partitions=%d: created all the same, consumer groups need it",
                    name, hosted + adding, limit,
                )  # fmt: skip
            return None
        reserved = 0
        if self.metadata.topic(CONSUMER_OFFSETS_TOPIC) is None:
            reserved = self._share(self.config.offsets_topic_num_partitions)
        if hosted + adding + reserved <= limit:
            return None
        kept = (
            f", with {reserved} kept for {CONSUMER_OFFSETS_TOPIC} (offsets.topic.num.partitions)"
            if reserved
            else ""
        )
        message = (
            f"topic {name!r} would bring this broker to {hosted + adding} partitions{kept}, "
            f"more than max.broker.partitions={limit} (it hosts {hosted} now)"
        )
        log.warning("refused: %s", message)
        return TopicError(ErrorCode.POLICY_VIOLATION, message)

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> TopicError | None:
        error = self.check_new_topic(name, partitions, replication_factor, configs)
        if error is not None:
            return error
        try:
            self.metadata.put_topics([TopicDefinition(name, partitions, dict(configs))])
        except TopicAlreadyExists:  # another broker created it meanwhile
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        config = self.log_config(name)
        for partition in range(partitions):
            if self.cluster.leader(name, partition) == self.broker_id:
                self.logs.get_or_create_log(name, partition, config)
        log.info("created topic %s with %d partitions", name, partitions)
        return None

    def auto_create(self, name: str) -> TopicError | None:
        return self.create_topic(
            name, self.config.num_partitions, self.config.default_replication_factor, {}
        )

    def delete_topic(self, name: str) -> TopicError | None:
        topic = self.metadata.topic(name)
        if topic is None:
            return TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
            )
        self.metadata.remove_topic(name)
        self.drop_local_logs(name)
        log.info("deleted topic %s", name)
        return None

    def drop_local_logs(self, name: str) -> None:
        for partition_log in self.logs.all_logs():
            if partition_log.topic == name:
                self.logs.delete_log(name, partition_log.partition)

    def drop_logs_of_deleted_topics(self) -> list[str]:
        """Remove local partitions of topics the cluster no longer has (deleted
        through another broker); the names of those topics."""
        known = self.metadata.topics()
        gone = sorted({pl.topic for pl in self.logs.all_logs()} - set(known))
        for name in gone:
            log.info("topic %s is gone from the cluster; removing its local partitions", name)
            self.drop_local_logs(name)
        return gone
