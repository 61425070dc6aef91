"""The cluster as ZooKeeper describes it, for a broker with ``zookeeper.connect``.

A cache of live brokers, topics (assignment and config) and partition states
is kept by :meth:`ZkCluster.run`, a task of the broker's nursery, refreshed on
ZooKeeper watches (every znode the cache holds is read with one, and a new
session, which loses them, reads them all again: :meth:`ZkCluster.refresh`)
and, should one be missed, every :data:`REFRESH_SECONDS`. A round reads again
only the znodes whose watch fired since they were read
(:class:`~wirekafka.zk.watched_znodes.WatchedZnodes`), and every znode at least
every :data:`FULL_READ_SECONDS`, after a lost connection (kazoo drops the
watches) and after a round that failed: at 9,000 partitions a round that read
every state took 5-8 s and ~1 s of CPU in the reading thread, twice that in
kazoo's. Rounds are still not run more often than something asks for them. The
ZooKeeper reads (and the controller's writes) run in worker threads
(:mod:`wirekafka.worker_threads`), the new cache is put in place on the event
loop. Handlers read the cache (reads never block); topic creation and
deletion write to ZooKeeper, from a worker thread, as Kafka's admin path does:
``/config/topics/<t>`` and ``/brokers/topics/<t>`` for a new topic,
``/admin/delete_topics/<t>`` to delete one, and hand the change of the cache
to the event loop. The broker that holds ``/controller`` elects partition
leaders and keeps their ISRs (:mod:`wirekafka.zk.election` decides, this module
reads and writes), writes each partition's ``state`` and carries out deletions.
A partition's leader changes its ISR itself (:meth:`ZkCluster.update_isr`), as
Kafka's leaders do in ZooKeeper mode; every write of a ``state`` is conditional
on the znode's version.

Controlled shutdown: a broker about to stop asks the controller (the
ControlledShutdown API) to move its leaderships away first
(:meth:`ZkCluster.controlled_shutdown`;
:func:`~wirekafka.zk.election.decide_controlled_shutdown` decides). The
controller remembers it as shutting down, as Kafka's ``shuttingDownBrokerIds``,
until its registration goes (or is made anew, with another broker epoch: the
registration's creation zxid, as in Kafka): meanwhile no election gives it a
leadership back.

Watches fire on kazoo's own thread: they only ask the event loop, through its
trio token, to refresh soon.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import trio
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from wirekafka.worker_threads import METADATA, blocking, run_blocking, run_on_loop
from wirekafka.zk.assignment import assign_replicas, replicas_for_new_partitions
from wirekafka.zk.election import NO_LEADER, decide, decide_controlled_shutdown
from wirekafka.zk.session import ZkSession, ZooKeeperError
from wirekafka.zk.watch_rounds import WatchRounds
from wirekafka.zk.watched_znodes import WatchedZnodes
from wirekafka.zk.znodes import (
    CONFIG_TYPE_TOPIC,
    BrokerIdsZNode,
    BrokerIdZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ConsumerOffset,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    PartitionState,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZnodeFormatError,
)

log = logging.getLogger("wirekafka.zk")

# A round reads every znode again at least this often, whatever the watches say
# (kazoo drops them all when the connection is lost, and such a round follows).
FULL_READ_SECONDS = 60.0
STATE_WRITE_TRIES = 10  # a controlled shutdown's write of one state, racing its leader's


class TopicAlreadyExists(Exception):
    """Another broker (or client) created the topic first."""


class NotController(Exception):
    """This broker does not hold ``/controller`` (NOT_CONTROLLER)."""


class BrokerNotAvailable(Exception):
    """The broker named is not registered (BROKER_NOT_AVAILABLE)."""


class StaleBrokerEpoch(Exception):
    """A request from an earlier registration of the broker (STALE_BROKER_EPOCH)."""


@dataclass(frozen=True, slots=True)
class ShutdownTarget:
    """Where a broker sends its ControlledShutdown request, as ZooKeeper has it."""

    controller_id: int
    host: str
    port: int
    broker_epoch: int  # the sender's: its registration's creation zxid


def _unavailable(action: str, exc: Exception) -> ZooKeeperError:
    return ZooKeeperError(f"{action}: ZooKeeper failed: {exc!r}")


@dataclass(frozen=True, slots=True)
class ZkTopic:
    name: str
    partitions: int
    configs: dict[str, str]
    replicas: dict[int, tuple[int, ...]]

    @property
    def replication_factor(self) -> int:
        """Partition 0's replica count, as Kafka takes a topic's (1 without partitions)."""
        first = self.replicas.get(0)
        return len(first) if first else 1


@dataclass(frozen=True, slots=True)
class _Snapshot:
    brokers: dict[int, tuple[str, int]]  # on the inter-broker listener
    topics: dict[str, ZkTopic]
    # (topic, partition) -> its state znode and that znode's version
    states: dict[tuple[str, int], tuple[PartitionState, int]]
    controller_id: int
    # every registered broker -> its broker epoch (its registration's creation zxid)
    broker_epochs: dict[int, int] = field(default_factory=dict)
    # every registered broker -> its listeners' names -> (host, port)
    listeners: dict[int, dict[str, tuple[str, int]]] = field(default_factory=dict)


def _flag(configs: dict[str, str], key: str, default: bool) -> bool:
    """A topic's boolean override (checked when it was set); ``default`` without one."""
    value = configs.get(key)
    return default if value is None else value.strip().lower() == "true"


class ZkCluster:
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        trio_token: trio.lowlevel.TrioToken | None = None,
        *,
        unclean_leader_election_enable: bool = False,
        auto_leader_rebalance_enable: bool = True,
        rng: random.Random | None = None,
        inter_broker_listener: str = "PLAINTEXT",
    ) -> None:
        """``trio_token``: the event loop that owns the cache (the broker's); without
        one (tools, tests) the cache is changed by whoever calls.
        ``unclean_leader_election_enable``, ``auto_leader_rebalance_enable``: the
        broker's settings, used while it is the controller (a topic's own
        ``unclean.leader.election.enable`` wins). ``rng``: where the replica
        assignment's random start and shift come from (seeded in tests).
        ``inter_broker_listener``: the listener brokers reach each other on."""
        self.session = session
        self.inter_broker_listener = inter_broker_listener
        self.broker_id = broker_id
        self.unclean_leader_election_enable = unclean_leader_election_enable
        self.auto_leader_rebalance_enable = auto_leader_rebalance_enable
        self.rng = rng or random.Random()
        self._snapshot = _Snapshot({}, {}, {}, NO_LEADER)
        self._token = trio_token
        self._rounds = WatchRounds(trio_token)
        self._watched = WatchedZnodes()
        self._full_read_at = 0.0  # time.monotonic() of the next round that reads every znode
        self._changes = 0  # changes of the cache made by this broker, counted on the loop
        # Moves (on the loop) whenever the cache's content changes: a reader that saw
        # the same generation sees the same cache, and need not look through it again.
        self.generation = 0
        self._controller_epoch = 0
        # Brokers in controlled shutdown, as this broker's controller knows them:
        # id -> (broker epoch, when marked: time.monotonic()). Worker threads replace
        # the mapping under the lock; readers take the mapping as it is.
        self._shutting_down: Mapping[int, tuple[int, float]] = {}
        self._shutting_down_lock = threading.Lock()
        self._controlled_shutdowns: trio.Lock | None = None  # one at a time, on the loop

    @property
    def trio_token(self) -> trio.lowlevel.TrioToken | None:
        """The event loop that owns the cache (None: whoever calls)."""
        return self._token

    # lifecycle

    async def run(self) -> None:
        """Refresh the cache, and control the cluster while this broker is the
        controller, at every watch, change of its own and :data:`REFRESH_SECONDS`, until
        cancelled (the broker's nursery runs this). A round that fails is
        logged and tried again after :data:`RETRY_SECONDS` (the watches it would
        have set again are gone)."""

        async def one_round() -> bool:  # the first at once: it elects a controller if none
            changes = self._changes
            snapshot = await run_blocking(METADATA, self._round)
            return self._take_round(snapshot, changes)

        await self._rounds.run(
            one_round,
            (KazooException, KazooTimeoutError, ZnodeFormatError, ZooKeeperError),
            "ZooKeeper refresh failed",
        )

    def _take_round(self, snapshot: _Snapshot, changes: int) -> bool:
        """On the loop: make a round's ``snapshot`` the cache, unless a change of this
        broker's landed since the round began (``changes`` counted then); then it is
        dropped, and the next round reads again what it read. The dropped round's
        reads set their watches afresh, so those znodes would count as read, and the
        next round would keep the cache's older content for them."""
        if self._changes != changes:
            self._watched.drop_round()
            return False
        if snapshot is not self._snapshot:
            self._snapshot = snapshot
            self.generation += 1
        return True

    @blocking
    def _round(self) -> _Snapshot:
        started = time.monotonic()
        full = started >= self._full_read_at
        self._watched.begin_round()
        try:
            self._elect()
            if self._snapshot.controller_id == self.broker_id:
                self._control()
            current = self._snapshot
            snapshot = self._read(full=full)
        except BaseException:
            self._watched.forget()  # the watches it would have set may be missing
            raise
        if full:
            self._full_read_at = started + FULL_READ_SECONDS
        self._forget_shutdowns(snapshot.broker_epochs, started)
        # the same content keeps the same cache (and generation): most rounds change nothing
        return current if snapshot == current else snapshot

    @blocking
    def stop(self) -> None:
        """Give up ``/controller`` if this broker holds it (after :meth:`run` ended)."""
        with contextlib.suppress(KazooException, KazooTimeoutError):
            self._resign()

    def _publish(self, change: Callable[[_Snapshot], _Snapshot]) -> None:
        """Change the cache on the event loop (:func:`run_on_loop`): a worker thread
        hands ``change`` over and waits for it."""

        def apply() -> None:
            self._snapshot = change(self._snapshot)
            self._changes += 1
            self.generation += 1
            self._rounds.ask_on_loop()

        run_on_loop(self._token, apply)

    # the cache

    def _watch(self, event: WatchedEvent) -> None:
        """Every watch the cache sets (kazoo's thread): the znode is read again, at the
        next round, which it asks for."""
        self._watched.fired(event)
        self._rounds.ask(event)

    @blocking
    def refresh(self) -> None:
        """Read the cache afresh from ZooKeeper, every znode."""
        snapshot = self._read()
        self._publish(lambda _: snapshot)

    @blocking
    def _read(self, *, full: bool = True) -> _Snapshot:
        """The cluster from ZooKeeper; without ``full``, the topics and states whose
        watches have not fired since they were read are the cache's own."""
        client = self.session.client
        current = self._snapshot
        if full:
            self._watched.forget()
        kept = self._watched.kept()
        brokers = {}
        broker_epochs = {}
        listeners = {}
        for child in client.get_children(BrokerIdsZNode.path, watch=self._watch):
            with contextlib.suppress(NoNodeError, ValueError):
                data, stat = client.get(BrokerIdZNode.path(int(child)))
                broker_epochs[int(child)] = stat.czxid
                registration = BrokerIdZNode.decode(data)
                listeners[int(child)] = {
                    e.listener_name: (e.host, e.port)
                    for e in registration.endpoints
                    if e.host is not None
                }
                endpoint = registration.endpoint(self.inter_broker_listener)
                if endpoint is not None and endpoint.host is not None:
                    brokers[int(child)] = (endpoint.host, endpoint.port)
        topics: dict[str, ZkTopic] = {}
        states: dict[tuple[str, int], tuple[PartitionState, int]] = {}
        for name in client.get_children(TopicsZNode.path, watch=self._watch):
            topic = current.topics.get(name)
            topic_path = TopicZNode.path(name)
            config_path = ConfigEntityZNode.path(CONFIG_TYPE_TOPIC, name)
            if topic is None or topic_path not in kept or config_path not in kept:
                topic = self._read_topic(name, topic_path, config_path)
                if topic is None:
                    continue
            topics[name] = topic
            for partition in topic.replicas:
                key = (name, partition)
                path = TopicPartitionStateZNode.path(name, partition)
                cached = current.states.get(key)
                if cached is not None and path in kept:
                    states[key] = cached
                    continue
                # a new topic's state appears after its znode: its creation is watched
                self._watched.watching(path)
                found = self._get_watched(path)
                if found is not None:
                    with contextlib.suppress(ZnodeFormatError):
                        data, stat = found
                        states[key] = (TopicPartitionStateZNode.decode(data), stat.version)
        controller = NO_LEADER
        found = self._get_watched(ControllerZNode.path)
        if found is not None:
            with contextlib.suppress(ZnodeFormatError):
                controller = ControllerZNode.decode(found[0])
        return _Snapshot(brokers, topics, states, controller, broker_epochs, listeners)

    @blocking
    def _read_topic(self, name: str, topic_path: str, config_path: str) -> ZkTopic | None:
        """A topic's assignment and config overrides, read with watches; None when its
        znode is gone or cannot be decoded."""
        self._watched.watching(topic_path, config_path)
        try:
            assignment = TopicZNode.decode(
                self.session.client.get(topic_path, watch=self._watch)[0]
            )
        except (NoNodeError, ZnodeFormatError):
            return None
        configs: dict[str, str] = {}
        found = self._get_watched(config_path)
        if found is not None:
            with contextlib.suppress(ZnodeFormatError):
                configs = ConfigEntityZNode.decode(found[0])
        replicas = {p: tuple(r) for p, r in assignment.partitions.items()}
        return ZkTopic(name, len(replicas), configs, replicas)

    @blocking
    def _get_watched(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        """The znode's data and stat, read with a watch; None when it is missing,
        and then a watch on its creation is set instead (a get sets none on a
        missing znode; one created between the two is read)."""
        client = self.session.client
        while True:
            try:
                data, stat = client.get(path, watch=self._watch)
            except NoNodeError:
                if not client.exists(path, watch=self._watch):
                    return None
                continue
            return data, stat

    def brokers(self) -> dict[int, tuple[str, int]]:
        """The live brokers on the inter-broker listener."""
        return self._snapshot.brokers

    def brokers_on(self, listener_name: str) -> dict[int, tuple[str, int]]:
        """The live brokers that have the listener ``listener_name``, on it."""
        return {
            node_id: endpoints[listener_name]
            for node_id, endpoints in self._snapshot.listeners.items()
            if listener_name in endpoints and node_id in self._snapshot.brokers
        }

    def controller_id(self) -> int:
        return self._snapshot.controller_id

    def broker_epochs(self) -> dict[int, int]:
        """Each registered broker's epoch (its registration's creation zxid)."""
        return self._snapshot.broker_epochs

    def shutting_down(self) -> set[int]:
        """The brokers in controlled shutdown, as this broker knows them from the
        requests it answered as the controller (Kafka's ``shuttingDownBrokerIds``)."""
        return set(self._shutting_down)

    def topic(self, name: str) -> ZkTopic | None:
        return self._snapshot.topics.get(name)

    def topics(self) -> dict[str, ZkTopic]:
        return self._snapshot.topics

    def partition_state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None:
        """The partition's state znode as last read or written, and its znode version
        (what :meth:`update_isr` expects); None before the controller wrote one."""
        return self._snapshot.states.get((topic, partition))

    def leader(self, topic: str, partition: int) -> int:
        found = self._snapshot.states.get((topic, partition))
        return NO_LEADER if found is None else found[0].leader

    def isr(self, topic: str, partition: int) -> tuple[int, ...]:
        found = self._snapshot.states.get((topic, partition))
        return () if found is None else found[0].isr

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch; -1 before it has a state (Kafka's unknown epoch)."""
        found = self._snapshot.states.get((topic, partition))
        return -1 if found is None else found[0].leader_epoch

    # admin writes (any broker)

    @blocking
    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        assignment: Sequence[Sequence[int]] = (),
    ) -> None:
        """Assign ``replication_factor`` replicas to each partition over the live
        brokers with Kafka's rack-unaware assignment (a random start and shift,
        from :attr:`rng`) unless ``assignment`` gives each partition's replicas,
        and write the topic's config and assignment znodes.
        Raises InvalidReplicationFactor when the live brokers are too few,
        TopicAlreadyExists when the topic exists, ZooKeeperError when ZooKeeper
        fails (the cache is left as it was; a config znode may be left without its
        topic, which the next creation overwrites)."""
        replicas = (
            {p: tuple(brokers) for p, brokers in enumerate(assignment)}
            if assignment
            else assign_replicas(self._live_ids(), partitions, replication_factor, rng=self.rng)
        )
        client = self.session.client
        try:
            if client.exists(TopicZNode.path(name)):
                raise TopicAlreadyExists(name)
            self._write_topic_config(name, configs)
            try:
                client.create(TopicZNode.path(name), TopicZNode.encode(TopicAssignment(replicas)))
            except NodeExistsError:
                raise TopicAlreadyExists(name) from None
        except (KazooException, KazooTimeoutError) as exc:
            raise _unavailable(f"creating topic {name}", exc) from exc
        self._cache_topic(ZkTopic(name, partitions, dict(configs), replicas))

    def _live_ids(self) -> list[int]:
        """The live brokers as cached (this one, before the cache has any)."""
        return sorted(self._snapshot.brokers) or [self.broker_id]

    @blocking
    def add_partitions(self, name: str, partitions: int, brokers: list[list[int]]) -> None:
        """Raise a topic's partition count in ``/brokers/topics/<topic>`` (with a
        version check); new partition i gets the replicas ``brokers[i]`` or,
        without them, the topic's replication factor placed as Kafka places added
        partitions (:func:`replicas_for_new_partitions`: InvalidReplicationFactor
        when the live brokers are too few). The controller then elects their
        leaders."""
        client = self.session.client
        try:
            while True:
                data, stat = client.get(TopicZNode.path(name))
                assignment = TopicZNode.decode(data)
                replicas = dict(assignment.partitions)
                first = len(replicas)
                if brokers:
                    replicas.update(
                        {p: tuple(brokers[p - first]) for p in range(first, partitions)}
                    )
                else:
                    replicas.update(
                        replicas_for_new_partitions(self._live_ids(), replicas, partitions)
                    )
                try:
                    client.set(
                        TopicZNode.path(name),
                        TopicZNode.encode(dataclasses.replace(assignment, partitions=replicas)),
                        version=stat.version,
                    )
                    break
                except BadVersionError:
                    continue  # changed meanwhile: read it again
        except (KazooException, KazooTimeoutError, ZnodeFormatError) as exc:
            raise _unavailable(f"adding partitions to topic {name}", exc) from exc
        found = self.topic(name)
        configs = dict(found.configs) if found else {}
        self._cache_topic(ZkTopic(name, len(replicas), configs, dict(replicas)))

    @blocking
    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a topic's config overrides (``/config/topics/<topic>``)."""
        found = self.topic(name)
        try:
            self._write_topic_config(name, configs)
        except (KazooException, KazooTimeoutError) as exc:
            raise _unavailable(f"writing the configs of topic {name}", exc) from exc
        if found is not None:
            self._cache_topic(ZkTopic(name, found.partitions, dict(configs), found.replicas))

    @blocking
    def _write_topic_config(self, name: str, configs: dict[str, str]) -> None:
        client = self.session.client
        client.ensure_path(ConfigEntityTypeZNode.path(CONFIG_TYPE_TOPIC))
        config_bytes = ConfigEntityZNode.encode(configs)
        try:
            client.create(ConfigEntityZNode.path(CONFIG_TYPE_TOPIC, name), config_bytes)
        except NodeExistsError:
            client.set(ConfigEntityZNode.path(CONFIG_TYPE_TOPIC, name), config_bytes)

    def _cache_topic(self, topic: ZkTopic) -> None:
        def change(snapshot: _Snapshot) -> _Snapshot:
            return dataclasses.replace(snapshot, topics={**snapshot.topics, topic.name: topic})

        self._publish(change)

    @blocking
    def request_deletion(self, name: str) -> None:
        try:
            with contextlib.suppress(NodeExistsError):
                self.session.client.create(DeleteTopicsTopicZNode.path(name), b"", makepath=True)
        except (KazooException, KazooTimeoutError) as exc:
            raise _unavailable(f"deleting topic {name}", exc) from exc

        def change(snapshot: _Snapshot) -> _Snapshot:
            topics = {k: v for k, v in snapshot.topics.items() if k != name}
            states = {k: v for k, v in snapshot.states.items() if k[0] != name}
            return dataclasses.replace(snapshot, topics=topics, states=states)

        self._publish(change)

    @blocking
    def allocate_producer_ids(self, count: int) -> range:
        """The next block of ``/latest_producer_id_block``, claimed with a version check."""
        try:
            return self._claim_producer_id_block(count)
        except (KazooException, KazooTimeoutError, ZnodeFormatError) as exc:
            raise _unavailable("allocating producer ids", exc) from exc

    @blocking
    def _claim_producer_id_block(self, count: int) -> range:
        client = self.session.client
        client.ensure_path(ProducerIdBlockZNode.path)
        while True:
            data, stat = client.get(ProducerIdBlockZNode.path)
            block = (
                ProducerIdBlock.first(self.broker_id, count)
                if not data
                else ProducerIdBlockZNode.decode(data).next_block(self.broker_id, count)
            )
            try:
                client.set(
                    ProducerIdBlockZNode.path,
                    ProducerIdBlockZNode.encode(block),
                    version=stat.version,
                )
            except BadVersionError:
                continue  # another broker took it first
            return range(block.block_start, block.block_end + 1)

    # the controller

    @blocking
    def _elect(self) -> None:
        """Claim ``/controller`` and bump ``/controller_epoch`` in one ZooKeeper multi.

        Done together, as Kafka does, so nobody sees the new controller with the
        old epoch; a lost race (another broker's claim, or its epoch bump) is
        looked at again.
        """
        client = self.session.client
        while not client.exists(ControllerZNode.path):
            epoch, version = self._controller_epoch_znode()
            claim = client.transaction()
            claim.create(
                ControllerZNode.path,
                ControllerZNode.encode(self.broker_id),
                ephemeral=True,
            )
            claim.set_data(
                ControllerEpochZNode.path, ControllerEpochZNode.encode(epoch + 1), version
            )
            if any(isinstance(result, Exception) for result in claim.commit()):
                continue
            self._controller_epoch = epoch + 1
            self.refresh()
            log.info("became the controller (epoch %d)", epoch + 1)
            return

    @blocking
    def _registered(self) -> set[int]:
        """The brokers registered in ``/brokers/ids`` now."""
        registered = set()
        for child in self.session.client.get_children(BrokerIdsZNode.path):
            with contextlib.suppress(ValueError):
                registered.add(int(child))
        return registered

    @blocking
    def _controller_epoch_znode(self) -> tuple[int, int]:
        """The epoch in ``/controller_epoch`` and its znode version; 0 for a new cluster."""
        client = self.session.client
        while True:
            try:
                data, stat = client.get(ControllerEpochZNode.path)
            except NoNodeError:
                with contextlib.suppress(NodeExistsError):
                    client.create(ControllerEpochZNode.path, ControllerEpochZNode.encode(0))
                continue
            return ControllerEpochZNode.decode(data), stat.version

    @blocking
    def _resign(self) -> None:
        client = self.session.client
        with contextlib.suppress(NoNodeError):
            data, _ = client.get(ControllerZNode.path)
            if ControllerZNode.decode(data) == self.broker_id:
                client.delete(ControllerZNode.path)

    @blocking
    def _control(self) -> None:
        """Delete topics asked for, and give every partition the leader and ISR that
        :func:`wirekafka.zk.election.decide` chooses for the live brokers.

        The states are the cache's, as Kafka's controller decides from its own
        context: each was read with a watch, so a change since brings another round,
        and a write is made only at the version read. A state that changed since it
        was read (its leader changed the ISR) is left for that round. Reading every
        state again here cost a ZooKeeper read per partition and round. Only those
        the cache lacks (a new partition's, or one it could not decode) are read.

        The live brokers are read afresh: the cache may be a round or two older
        (it is read again when this broker changed it meanwhile), and a broker that
        registered since, whom a leader has already put back in its ISR, would be
        taken out again as gone."""
        client = self.session.client
        deleted = set(client.get_children(DeleteTopicsZNode.path, watch=self._watch))
        for name in deleted:
            client.delete(TopicZNode.path(name), recursive=True)
            with contextlib.suppress(NoNodeError):
                client.delete(ConfigEntityZNode.path(CONFIG_TYPE_TOPIC, name))
            client.delete(DeleteTopicsTopicZNode.path(name))
            log.info("controller: deleted topic %s", name)
        snapshot = self._snapshot  # may still hold the topics just deleted
        live = self._registered()
        shutting_down = set(self._shutting_down)
        for name, topic in snapshot.topics.items():
            if name in deleted:
                continue
            unclean = _flag(
                topic.configs,
                "unclean.leader.election.enable",
                self.unclean_leader_election_enable,
            )
            for partition, replicas in topic.replicas.items():
                cached = snapshot.states.get((name, partition))
                self._control_partition(
                    name, partition, replicas, live, unclean, shutting_down, cached
                )

    @blocking
    def _control_partition(
        self,
        name: str,
        partition: int,
        replicas: tuple[int, ...],
        live: set[int],
        unclean: bool,
        shutting_down: set[int],
        cached: tuple[PartitionState, int] | None,
    ) -> None:
        """``cached``: the state and its znode version as the cache holds them (None,
        when the cache lacks it: read here)."""
        client = self.session.client
        path = TopicPartitionStateZNode.path(name, partition)
        current: PartitionState | None
        if cached is not None:
            current, version = cached
        else:
            try:
                data, stat = client.get(path)
                current = TopicPartitionStateZNode.decode(data)
                version = stat.version
            except NoNodeError:
                current, version = None, -1
            except ZnodeFormatError as exc:  # left alone, the other partitions are controlled
                log.warning("controller: %s-%d: %s", name, partition, exc)
                return
        decision = decide(
            replicas,
            current,
            live,
            controller_epoch=self._controller_epoch,
            unclean_leader_election=unclean,
            preferred_leader_election=self.auto_leader_rebalance_enable,
            shutting_down=shutting_down,
        )
        if decision is None:
            return
        if current is None:
            self._create_partition_state(name, partition, decision.state)
        else:
            try:
                client.set(path, TopicPartitionStateZNode.encode(decision.state), version=version)
            except (BadVersionError, NoNodeError):
                return  # changed (or deleted) meanwhile: the next round reads it again
        state = decision.state
        log.info(
            "controller: %s-%d leader %d, ISR %s, leader epoch %d: %s",
            name, partition, state.leader, list(state.isr), state.leader_epoch, decision.reason,
        )  # fmt: skip

    @blocking
    def update_isr(
        self, topic: str, partition: int, isr: tuple[int, ...], expected_version: int
    ) -> int | None:
        """The partition leader's change of its ISR (Kafka's ``AlterIsr`` in ZooKeeper
        mode): the state znode is rewritten with the same leader and leader epoch and
        ``isr``, if its version is still ``expected_version`` (from
        :meth:`partition_state`). Returns the znode's new version, the cache
        updated; None when the version no longer matches (the controller or the
        leader changed it, or it is gone), the cache refreshed from ZooKeeper. Raises
        ZooKeeperError when ZooKeeper fails, ValueError for an ISR without the
        leader."""
        path = TopicPartitionStateZNode.path(topic, partition)
        client = self.session.client
        try:
            cached = self.partition_state(topic, partition)
            if cached is None or cached[1] != expected_version:
                found = self._read_partition_state(topic, partition)
                if found is None or found[1] != expected_version:
                    return None
                cached = found
            base = cached[0]
            if base.leader not in isr:
                raise ValueError(
                    f"{topic}-{partition}: ISR {list(isr)} leaves out the leader {base.leader}"
                )
            state = dataclasses.replace(base, isr=tuple(isr))
            try:
                stat = client.set(
                    path, TopicPartitionStateZNode.encode(state), version=expected_version
                )
            except (BadVersionError, NoNodeError):
                self._read_partition_state(topic, partition)
                return None
        except (KazooException, KazooTimeoutError, ZnodeFormatError) as exc:
            raise _unavailable(f"updating the ISR of {topic}-{partition}", exc) from exc
        version: int = stat.version
        self._cache_partition_state(topic, partition, (state, version))
        log.info(
            "%s-%d: ISR %s -> %s (leader %d, leader epoch %d)",
            topic, partition, list(base.isr), list(state.isr), state.leader, state.leader_epoch,
        )  # fmt: skip
        return version

    @blocking
    def _read_partition_state(
        self, topic: str, partition: int
    ) -> tuple[PartitionState, int] | None:
        """Read one state znode into the cache (None, and out of the cache, when gone)."""
        read = self._get_watched(TopicPartitionStateZNode.path(topic, partition))
        found = (
            None if read is None else (TopicPartitionStateZNode.decode(read[0]), read[1].version)
        )
        self._cache_partition_state(topic, partition, found)
        return found

    def _cache_partition_state(
        self, topic: str, partition: int, found: tuple[PartitionState, int] | None
    ) -> None:
        def change(snapshot: _Snapshot) -> _Snapshot:
            states = dict(snapshot.states)
            if found is None:
                states.pop((topic, partition), None)
            else:
                states[(topic, partition)] = found
            return dataclasses.replace(snapshot, states=states)

        self._publish(change)

    @blocking
    def _create_partition_state(self, name: str, partition: int, state: PartitionState) -> None:
        """Write a partition's first state under its topic's znode, never creating the
        topic's own: a topic deleted since the snapshot was read stays deleted."""
        client = self.session.client
        with contextlib.suppress(NoNodeError):  # the topic's znode is gone
            for path in (
                TopicPartitionsZNode.path(name),
                TopicPartitionZNode.path(name, partition),
            ):
                with contextlib.suppress(NodeExistsError):
                    client.create(path)
            with contextlib.suppress(NodeExistsError):
                client.create(
                    TopicPartitionStateZNode.path(name, partition),
                    TopicPartitionStateZNode.encode(state),
                )

    # controlled shutdown

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        """The controller's side of ControlledShutdown (on the event loop; one
        request at a time, so two brokers stopping together never hand their
        leaderships to each other): :meth:`_controlled_shutdown` in a worker thread.
        Returns the partitions ``broker_id`` still leads."""
        if self._controlled_shutdowns is None:
            self._controlled_shutdowns = trio.Lock()
        async with self._controlled_shutdowns:
            return await run_blocking(METADATA, self._controlled_shutdown, broker_id, broker_epoch)

    @blocking
    def _controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        """Mark ``broker_id`` as shutting down and move its leaderships to other live
        ISR members, and it out of the ISRs it is in (Kafka's
        ``doControlledShutdown``): each state read afresh and written conditionally,
        read again when its leader changed it meanwhile. Returns the partitions of
        more than one replica it still leads (nobody else could take them).

        Raises NotController when this broker does not hold ``/controller``,
        BrokerNotAvailable when ``broker_id`` is not registered, StaleBrokerEpoch
        when ``broker_epoch`` (-1: unknown, not checked) is older than its
        registration's, ZooKeeperError when ZooKeeper fails."""
        client = self.session.client
        try:
            try:
                controller = ControllerZNode.decode(client.get(ControllerZNode.path)[0])
            except NoNodeError:
                controller = NO_LEADER
            if controller != self.broker_id:
                raise NotController(f"broker {self.broker_id} is not the controller")
            try:
                _, stat = client.get(BrokerIdZNode.path(broker_id))
            except NoNodeError:
                raise BrokerNotAvailable(f"broker {broker_id} is not registered") from None
            if 0 <= broker_epoch < stat.czxid:
                raise StaleBrokerEpoch(
                    f"broker {broker_id}'s epoch {broker_epoch} is older than its "
                    f"registration's, {stat.czxid}"
                )
            self._mark_shutting_down(broker_id, stat.czxid)
            live = self._registered()
            deleted = set(client.get_children(DeleteTopicsZNode.path))
            log.info(
                "controller: controlled shutdown of broker %d (shutting down: %s)",
                broker_id, sorted(self._shutting_down),
            )  # fmt: skip
            remaining = []
            for name, topic in self._snapshot.topics.items():
                if name in deleted:
                    continue
                for partition, replicas in topic.replicas.items():
                    if broker_id not in replicas or len(replicas) <= 1:
                        continue
                    state = self._move_for_shutdown(broker_id, name, partition, replicas, live)
                    if state is not None and state.leader == broker_id:
                        remaining.append((name, partition))
        except (KazooException, KazooTimeoutError, ZnodeFormatError) as exc:
            raise _unavailable(f"the controlled shutdown of broker {broker_id}", exc) from exc
        return remaining

    @blocking
    def _move_for_shutdown(
        self, broker_id: int, name: str, partition: int, replicas: tuple[int, ...], live: set[int]
    ) -> PartitionState | None:
        """One partition of a controlled shutdown; its state afterwards (None: none)."""
        client = self.session.client
        path = TopicPartitionStateZNode.path(name, partition)
        for _ in range(STATE_WRITE_TRIES):
            try:
                data, stat = client.get(path)
            except NoNodeError:
                return None
            current = TopicPartitionStateZNode.decode(data)
            decision = decide_controlled_shutdown(
                broker_id, replicas, current, live, set(self._shutting_down),
                controller_epoch=self._controller_epoch,
            )  # fmt: skip
            if decision is None:
                return current
            try:
                written = client.set(
                    path, TopicPartitionStateZNode.encode(decision.state), version=stat.version
                )
            except BadVersionError:
                continue  # its leader changed the ISR meanwhile: read it again
            except NoNodeError:
                return None
            state = decision.state
            self._cache_partition_state(name, partition, (state, written.version))
            log.info(
                "controller: %s-%d leader %d, ISR %s, leader epoch %d: %s",
                name, partition, state.leader, list(state.isr), state.leader_epoch,
                decision.reason,
            )  # fmt: skip
            return state
        log.warning(
            "controller: %s-%d changed under each of %d tries; left as it is",
            name, partition, STATE_WRITE_TRIES,
        )  # fmt: skip
        return current

    @blocking
    def _mark_shutting_down(self, broker_id: int, broker_epoch: int) -> None:
        with self._shutting_down_lock:
            self._shutting_down = {
                **self._shutting_down,
                broker_id: (broker_epoch, time.monotonic()),
            }

    @blocking
    def _forget_shutdowns(self, broker_epochs: dict[int, int], read_since: float) -> None:
        """Forget the brokers in controlled shutdown whose registration is gone or
        made anew, by ``broker_epochs`` (read after ``read_since``: a broker marked
        later is kept, the registrations read may be older than its mark)."""
        with self._shutting_down_lock:
            kept = {
                broker: (epoch, marked)
                for broker, (epoch, marked) in self._shutting_down.items()
                if marked >= read_since or broker_epochs.get(broker) == epoch
            }
            if len(kept) != len(self._shutting_down):
                gone = sorted(set(self._shutting_down) - set(kept))
                log.info("controller: brokers %s have finished their shutdown", gone)
                self._shutting_down = kept

    @blocking
    def shutdown_target(self) -> ShutdownTarget | None:
        """For this broker's own controlled shutdown: the controller and its address,
        and this broker's epoch, read from ZooKeeper now. None when there is no
        controller (or it has no PLAINTEXT endpoint), this broker is not registered,
        or the session is not connected (nothing would answer). Raises
        ZooKeeperError when ZooKeeper fails."""
        client = self.session.client
        if not client.connected:
            return None
        try:
            controller = ControllerZNode.decode(client.get(ControllerZNode.path)[0])
            _, own = client.get(BrokerIdZNode.path(self.broker_id))
            data, _ = client.get(BrokerIdZNode.path(controller))
        except NoNodeError:
            return None
        except (KazooException, KazooTimeoutError, ZnodeFormatError, ValueError) as exc:
            raise _unavailable("finding the controller", exc) from exc
        try:
            endpoint = BrokerIdZNode.decode(data).endpoint(self.inter_broker_listener)
        except ValueError:
            return None
        if endpoint is None or endpoint.host is None:
            return None
        return ShutdownTarget(controller, endpoint.host, endpoint.port, own.czxid)

    # OffsetCommit/OffsetFetch v0: offsets kept in ZooKeeper, as Kafka 0.8.1 kept them

    @blocking
    def commit_offsets_v0(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        client = self.session.client
        for (topic, partition), offset in offsets.items():
            path = ConsumerOffset.path(group, topic, partition)
            data = ConsumerOffset.encode(offset)
            try:
                client.set(path, data)
            except NoNodeError:
                with contextlib.suppress(NodeExistsError):
                    client.create(path, data, makepath=True)
                    continue
                client.set(path, data)

    @blocking
    def fetch_offsets_v0(
        self, group: str, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        client = self.session.client
        found = {}
        for topic, partition in partitions:
            with contextlib.suppress(NoNodeError, ZnodeFormatError):
                data, _ = client.get(ConsumerOffset.path(group, topic, partition))
                found[(topic, partition)] = ConsumerOffset.decode(data)
        return found
