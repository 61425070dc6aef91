"""Topics of the embedded default: names, partition counts, configs, creation
and deletion, all recorded in :class:`ClusterMetadata` and the log dirs.

The internal topics (``__consumer_offsets``, ``__transaction_state``) belong to
the broker: clients cannot create or delete them; the broker creates
``__consumer_offsets`` itself, compacted, when a group first needs it.

A topic is recorded before its partition directories are made; a partition
whose directory cannot be made then is made on first use, so a topic is never
left half there. A change the metadata store cannot record changes nothing and
is answered with KAFKA_STORAGE_ERROR, which clients may retry.

Lookups never block and run on the event loop. Changes (creation, deletion,
partitions, configs) write to the metadata store and the log dirs: they are
``blocking``, run in worker threads, one at a time (a change's checks and its
record are one step), and so is the creation of a log on first use
(:meth:`TopicManager.partition_log` goes through the seam for it).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, TypeVar

from wirekafka.broker.cluster import ClusterView, TopicStore
from wirekafka.config import BrokerConfig
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.cluster_metadata import MetadataSaveError, TopicDefinition
from wirekafka.storage.config import ConfigError, LogConfig, check_topic_keys, topic_properties
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.log_manager import LogManager
from wirekafka.worker_threads import LOG_DIRS, blocking, run_blocking
from wirekafka.zk.assignment import InvalidReplicationFactor, replication_factor_error
from wirekafka.zk.cluster import TopicAlreadyExists

log = logging.getLogger("wirekafka.topics")

MAX_TOPIC_NAME_CHARS = 249
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})
# What the broker gives __consumer_offsets, as Kafka's groupMetadataTopicConfigs:
# compacted, in offsets.topic.segment.bytes segments.
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}
_INTERNAL_TOPIC_CONFIGS = {OFFSETS_TOPIC: OFFSETS_TOPIC_CONFIGS}
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")

P = ParamSpec("P")
R = TypeVar("R")


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


def adopted_topic(name: str, partitions: int, replication_factor: int = 1) -> TopicDefinition:
    """A topic found only as partition dirs, as it is recorded when adopted: an
    internal topic gets the configs the broker creates it with."""
    configs = dict(_INTERNAL_TOPIC_CONFIGS.get(name, {}))
    return TopicDefinition(name, partitions, configs, replication_factor)


@blocking
def restore_offsets_topic_configs(store: TopicStore) -> None:
    """Give a stored ``__consumer_offsets`` without compaction its compaction back.

    Clients could create the topic before the broker refused them (with the
    broker's defaults: no compaction). Its partition count stays, as Kafka keeps
    it: groups are placed by it. Raises MetadataSaveError when the fix cannot be
    recorded."""
    topic = store.topic(OFFSETS_TOPIC)
    if topic is None or topic.configs.get("cleanup.policy") == "compact":
        return
    configs = {**OFFSETS_TOPIC_CONFIGS, **topic.configs, "cleanup.policy": "compact"}
    log.warning(
        "%s has cleanup.policy=%s, not compact (it was created by a client); "
        "restoring compaction, keeping its %d partitions",
        OFFSETS_TOPIC,
        topic.configs.get("cleanup.policy", "(the broker default)"),
        topic.partitions,
    )
    store.set_topic_configs(OFFSETS_TOPIC, configs)


def _one_change_at_a_time(
    change: Callable[Concatenate[TopicManager, P], R],
) -> Callable[Concatenate[TopicManager, P], R]:
    """A change to the topics, made holding the manager's lock from its checks
    to its record: changes run in worker threads, possibly several at once."""

    @functools.wraps(change)
    def locked(manager: TopicManager, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with manager._changes:
            return change(manager, *args, **kwargs)

    return locked


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
        self._changes = threading.RLock()  # see _one_change_at_a_time
        # each topic's log settings as last made (log_config): the broker's, the
        # topic's own keys, and what came of them
        self._log_configs: dict[str, tuple[LogConfig, dict[str, str], LogConfig]] = {}

    @blocking
    @_one_change_at_a_time
    def adopt_partition_dirs(self) -> None:
        """Record topics found as partition dirs but missing from the metadata file."""
        found: dict[str, int] = {}
        for partition_log in self.logs.all_logs():
            count = found.get(partition_log.topic, 0)
            found[partition_log.topic] = max(count, partition_log.partition + 1)
        missing = [
            adopted_topic(name, count)
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
        """A topic's log settings: the broker's, with the topic's own keys. The same
        object while neither changes, so that a log's settings are checked
        against it by identity (:meth:`apply_log_configs`, for each partition, in
        ZooKeeper mode after each change of the cluster cache)."""
        topic = self.metadata.topic(name)
        base = self.config.log
        kept = self._log_configs.get(name)
        if kept is not None and topic is not None and kept[0] is base and kept[1] == topic.configs:
            return kept[2]
        config = topic_log_config(base, topic)
        if topic is None:
            self._log_configs.pop(name, None)
        else:
            self._log_configs[name] = (base, dict(topic.configs), config)
        return config

    def local_log(self, name: str, partition: int) -> PartitionLog | ErrorCode | None:
        """The partition's log if it is open here; an error for unknown partitions
        and those led elsewhere; None when it is led here but its log is not made
        yet (:meth:`open_log` makes it). Never blocks."""
        topic = self.metadata.topic(name)
        if topic is None or not 0 <= partition < topic.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if self.cluster.leader(name, partition) != self.broker_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return self.logs.get_log(name, partition)

    # replicas (ZooKeeper clusters, :mod:`wirekafka.broker.replication`)

    def replica_assignments(self, broker_id: int) -> Iterator[tuple[str, int, tuple[int, ...]]]:
        """(topic, partition, replicas) of every partition with a replica on ``broker_id``."""
        replicas_of = self.cluster.replicas
        for name, topic in self.metadata.topics().items():
            for partition in range(topic.partitions):
                replicas = tuple(replicas_of(name, partition))
                if broker_id in replicas:
                    yield name, partition, replicas

    def replica_log(self, name: str, partition: int) -> PartitionLog | None:
        """The local replica's log if it is open, whoever leads."""
        return self.logs.get_log(name, partition)

    @blocking
    def open_replica_log(self, name: str, partition: int) -> PartitionLog | None:
        """The local replica's log, created on first use; None when it cannot be made."""
        try:
            return self._get_or_create_log(name, partition)
        except OSError as exc:
            log.error("cannot create the log of %s-%d: %s", name, partition, exc)
            return None

    @blocking
    def _get_or_create_log(self, name: str, partition: int) -> PartitionLog:
        """The log, made with the topic's configs; given them again should they have
        changed while it was made (:meth:`apply_log_configs` may have gone through
        the logs before this one was among them)."""
        partition_log = self.logs.get_or_create_log(name, partition, self.log_config(name))
        config = self.log_config(name)
        if partition_log.config is not config:
            partition_log.reconfigure(config)
        return partition_log

    @blocking
    def open_log(self, name: str, partition: int) -> PartitionLog | ErrorCode:
        """The partition's log, created on first use; an error for unknown
        partitions, and KAFKA_STORAGE_ERROR when its directory cannot be made."""
        existing = self.local_log(name, partition)
        if existing is not None:
            return existing
        try:
            return self._get_or_create_log(name, partition)
        except OSError as exc:
            log.error("cannot create the log of %s-%d: %s", name, partition, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR

    async def partition_log(self, name: str, partition: int) -> PartitionLog | ErrorCode:
        """:meth:`open_log` from the event loop: a log not made yet is made in a
        worker thread."""
        found = self.local_log(name, partition)
        if found is None:
            return await run_blocking(LOG_DIRS, self.open_log, name, partition)
        return found

    def check_new_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        assignment: tuple[tuple[int, ...], ...] = (),
    ) -> TopicError | None:
        """Whether a client may create this topic (CreateTopics, auto-creation)."""
        invalid = topic_name_error(name)
        if invalid is not None:
            return invalid
        if name in INTERNAL_TOPICS:  # Kafka's words for its own __cluster_metadata
            return TopicError(
                ErrorCode.INVALID_REQUEST,
                f"Creation of internal topic {name} is prohibited: the broker creates it",
            )
        if self.metadata.topic(name) is not None:
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if partitions < 1:
            return TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"number of partitions {partitions} must be at least 1",
            )
        refused = self._assignment_error(
            partitions, replication_factor, [list(r) for r in assignment] if assignment else None
        )
        if refused is not None:
            return refused
        try:
            check_topic_keys(configs)
            self.config.log.with_overrides(configs)
        except ConfigError as exc:
            return TopicError(ErrorCode.INVALID_CONFIG, str(exc))
        return self._partition_limit_error(name, partitions, replication_factor)

    def live_brokers(self) -> int:
        """How many brokers are live (this one at least: a ZooKeeper cache that has
        not seen its own registration yet still counts it)."""
        return max(1, len(self.cluster.brokers()))

    def offsets_topic_replication_factor(self) -> int:
        """``offsets.topic.replication.factor``, at most the live brokers. Kafka
        refuses to create ``__consumer_offsets`` until that many brokers are live;
        here a small cluster (or a test's single broker) is not stuck without
        consumer groups: the topic gets the replicas the live brokers can hold."""
        return min(self.config.offsets_topic_replication_factor, self.live_brokers())

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

    def _share(self, partitions: int, replication_factor: int = 1) -> int:
        """How many of a new topic's partitions this broker would host at most:
        ZooKeeper mode spreads their replicas evenly over the live brokers."""
        return -(-partitions * replication_factor // self.live_brokers())

    def _partition_limit_error(
        self, name: str, partitions: int, replication_factor: int = 1
    ) -> TopicError | None:
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
        adding = self._share(partitions, replication_factor)
        if name == OFFSETS_TOPIC:
            if hosted + adding > limit:
                log.warning(
                    "creating %s takes this broker to %d partitions, past "
                    "max.broker.partitions=%d: created all the same, consumer groups need it",
                    name, hosted + adding, limit,
                )  # fmt: skip
            return None
        reserved = 0
        if self.metadata.topic(OFFSETS_TOPIC) is None:
            reserved = self._share(
                self.config.offsets_topic_num_partitions, self.offsets_topic_replication_factor()
            )
        if hosted + adding + reserved <= limit:
            return None
        kept = (
            f", with {reserved} kept for {OFFSETS_TOPIC} (offsets.topic.num.partitions)"
            if reserved
            else ""
        )
        message = (
            f"topic {name!r} would bring this broker to {hosted + adding} partitions{kept}, "
            f"more than max.broker.partitions={limit} (it hosts {hosted} now)"
        )
        log.warning("refused: %s", message)
        return TopicError(ErrorCode.POLICY_VIOLATION, message)

    @blocking
    @_one_change_at_a_time
    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        assignment: tuple[tuple[int, ...], ...] = (),
    ) -> TopicError | None:
        """A client's topic (CreateTopics, auto-creation); ``assignment``: each
        partition's replicas, as CreateTopics may give them (empty: placed here)."""
        error = self.check_new_topic(name, partitions, replication_factor, configs, assignment)
        if error is not None:
            return error
        return self._create(
            TopicDefinition(name, partitions, dict(configs), replication_factor, assignment)
        )

    @blocking
    @_one_change_at_a_time
    def create_internal_topic(self, name: str, partitions: int) -> TopicError | None:
        """The broker's own creation of an internal topic, with the broker's configs."""
        if name not in INTERNAL_TOPICS:
            raise ValueError(f"{name} is not an internal topic")
        if self.metadata.topic(name) is not None:
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        replication_factor = self.offsets_topic_replication_factor()
        # for __consumer_offsets: a warning
        error = self._partition_limit_error(name, partitions, replication_factor)
        if error is not None:
            return error
        return self._create(adopted_topic(name, partitions, replication_factor))

    @blocking
    def _create(self, topic: TopicDefinition) -> TopicError | None:
        name = topic.name
        try:
            self.metadata.put_topics([topic])
        except TopicAlreadyExists:  # another broker created it meanwhile
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        except InvalidReplicationFactor as exc:  # brokers went away since the check
            return TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))
        except MetadataSaveError as exc:
            log.error("creating topic %s failed: %s", name, exc)
            return TopicError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"topic {name!r} could not be recorded: {exc}"
            )
        self._create_local_logs(name, range(topic.partitions))
        log.info(
            "created topic %s with %d partitions, replication factor %d",
            name, topic.partitions, topic.replication_factor,
        )  # fmt: skip
        return None

    @blocking
    def _create_local_logs(self, name: str, partitions: range) -> None:
        """The logs of a topic's new partitions led here; one that cannot be made
        now is made on first use (the partitions are recorded)."""
        config = self.log_config(name)
        for partition in partitions:
            if self.cluster.leader(name, partition) != self.broker_id:
                continue
            try:
                self.logs.get_or_create_log(name, partition, config)
            except OSError as exc:
                log.warning(
                    "topic %s: the log of partition %d could not be created now (%s); "
                    "it is created on first use",
                    name, partition, exc,
                )  # fmt: skip

    @blocking
    @_one_change_at_a_time
    def set_topic_configs(
        self, name: str, configs: dict[str, str], *, validate_only: bool = False
    ) -> TopicError | None:
        """Replace a topic's config overrides (AlterConfigs, IncrementalAlterConfigs):
        checked as at creation, recorded, and taken by its open logs at once."""
        topic = self.metadata.topic(name)
        if topic is None:
            return TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            )
        try:
            check_topic_keys(configs)
            self.config.log.with_overrides(configs)
        except ConfigError as exc:
            return TopicError(
                ErrorCode.INVALID_CONFIG, f"Invalid config value for topic {name}: {exc}"
            )
        required = _INTERNAL_TOPIC_CONFIGS.get(name, {}).get("cleanup.policy")
        if required is not None and configs.get("cleanup.policy", required) != required:
            return TopicError(
                ErrorCode.POLICY_VIOLATION,
                f"{name} belongs to the broker: its cleanup.policy stays {required}",
            )
        if validate_only or configs == topic.configs:
            return None
        try:
            self.metadata.set_topic_configs(name, configs)
        except MetadataSaveError as exc:
            log.error("changing the configs of topic %s failed: %s", name, exc)
            return TopicError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"the configs of {name!r} could not be recorded: {exc}",
            )
        log.info("topic %s: configs are now %s", name, configs)
        self.apply_log_configs(name)
        return None

    @blocking
    @_one_change_at_a_time
    def alter_topic_configs(
        self,
        name: str,
        change: Callable[[dict[str, str], dict[str, str]], dict[str, str] | TopicError],
        *,
        validate_only: bool = False,
    ) -> TopicError | None:
        """Replace a topic's config overrides by what ``change`` makes of its current
        ones and its effective configs (or the error it gives), in one step."""
        topic = self.metadata.topic(name)
        if topic is None:
            return TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            )
        changed = change(dict(topic.configs), topic_properties(self.log_config(name)))
        if isinstance(changed, TopicError):
            return changed
        return self.set_topic_configs(name, changed, validate_only=validate_only)

    def apply_log_configs(self, name: str | None = None) -> None:
        """Give the open logs of a topic (None: of every topic) its configs as recorded
        (in ZooKeeper mode, also those changed through another broker)."""
        configs: dict[str, LogConfig] = {}
        for partition_log in self.logs.all_logs():
            topic = partition_log.topic
            if name is not None and topic != name:
                continue
            if topic not in configs:
                configs[topic] = self.log_config(topic)
            if partition_log.config is not configs[topic]:  # changed, or equal but made apart
                partition_log.reconfigure(configs[topic])

    @blocking
    @_one_change_at_a_time
    def add_partitions(
        self,
        name: str,
        count: int,
        assignments: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicError | None:
        """Raise a topic's partition count to ``count`` (CreatePartitions); each new
        partition's replicas are given by ``assignments`` (as many as the topic's
        replication factor, live brokers, no broker twice), or placed as Kafka
        places added partitions, with the topic's replication factor."""
        if name in INTERNAL_TOPICS:
            return TopicError(
                ErrorCode.INVALID_REQUEST,
                f"{name} belongs to the broker: its partitions are not changed by clients",
            )
        topic = self.metadata.topic(name)
        if topic is None:
            return TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            )
        if count < topic.partitions:
            return TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {topic.partitions} partitions, which is higher than "
                f"the requested {count}.",
            )
        if count == topic.partitions:
            return TopicError(
                ErrorCode.INVALID_PARTITIONS, f"Topic already has {topic.partitions} partitions."
            )
        refused = self._assignment_error(
            count - topic.partitions, topic.replication_factor, assignments
        )
        refused = refused or self._partition_limit_error(
            name, count - topic.partitions, topic.replication_factor
        )
        if refused is not None or validate_only:
            return refused
        try:
            self.metadata.add_partitions(name, count, [list(a) for a in assignments or []])
        except InvalidReplicationFactor as exc:
            return TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))
        except MetadataSaveError as exc:
            log.error("adding partitions to topic %s failed: %s", name, exc)
            return TopicError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"the new partitions of {name!r} could not be recorded: {exc}",
            )
        self._create_local_logs(name, range(topic.partitions, count))
        log.info("topic %s: %d partitions, was %d", name, count, topic.partitions)
        return None

    def _assignment_error(
        self, adding: int, replication_factor: int, assignments: list[list[int]] | None
    ) -> TopicError | None:
        """Kafka's checks of the assignments of ``adding`` partitions (CreateTopics,
        CreatePartitions; ``AdminZkClient``); without them, whether the live
        brokers can hold the topic's replication factor."""
        if assignments is None:
            refused = replication_factor_error(replication_factor, self.live_brokers())
            return (
                None
                if refused is None
                else TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, refused)
            )
        if len(assignments) != adding:
            return TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {adding} but {len(assignments)} "
                "assignments provided.",
            )
        live = {broker.node_id for broker in self.cluster.brokers()}
        for replicas in assignments:
            if len(replicas) != replication_factor:
                return TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Inconsistent replication factor between partitions, partition 0 has "
                    f"{replication_factor} while the new assignment {replicas} has "
                    f"{len(replicas)}.",
                )
            if len(set(replicas)) != len(replicas):
                return TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Duplicate brokers not allowed in replica assignment: "
                    f"{', '.join(map(str, replicas))}.",
                )
            unknown = [r for r in replicas if r not in live]
            if unknown:
                return TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
                )
        return None

    @blocking
    def auto_create(self, name: str) -> TopicError | None:
        return self.create_topic(
            name, self.config.num_partitions, self.config.default_replication_factor, {}
        )

    @blocking
    @_one_change_at_a_time
    def delete_topic(self, name: str) -> TopicError | None:
        """A client's deletion (DeleteTopics)."""
        if name in INTERNAL_TOPICS:
            return TopicError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Cannot delete internal topic {name}: it belongs to the broker",
            )
        topic = self.metadata.topic(name)
        if topic is None:
            return TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
            )
        try:
            self.metadata.remove_topic(name)
        except MetadataSaveError as exc:
            log.error("deleting topic %s failed: %s", name, exc)
            return TopicError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"the deletion of {name!r} could not be recorded: {exc}",
            )
        self.drop_local_logs(name)
        log.info("deleted topic %s", name)
        return None

    @blocking
    def drop_local_logs(self, name: str) -> None:
        for partition_log in self.logs.all_logs():
            if partition_log.topic != name:
                continue
            try:
                self.logs.delete_log(name, partition_log.partition)
            except OSError as exc:  # the topic is gone; its directory stays
                log.error(
                    "topic %s is deleted, but moving the directory of partition %d aside "
                    "failed (%s); remove it by hand, or the next start adopts it again",
                    name, partition_log.partition, exc,
                )  # fmt: skip

    @blocking
    @_one_change_at_a_time
    def drop_logs_of_deleted_topics(self) -> list[str]:
        """Remove local partitions of topics the cluster no longer has (deleted
        through another broker); the names of those topics."""
        known = self.metadata.topics()
        gone = sorted({pl.topic for pl in self.logs.all_logs()} - set(known))
        for name in gone:
            log.info("topic %s is gone from the cluster; removing its local partitions", name)
            self.drop_local_logs(name)
        return gone
