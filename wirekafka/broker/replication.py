"""Replicated partitions on a ZooKeeper cluster: each local replica's role, what a
leader knows of its followers, the high watermark, ISR changes and acks=all.

Kafka's ``Partition`` and ``ReplicaManager`` in one place, fed by the cluster
cache (:mod:`wirekafka.zk.cluster`): a partition whose state names this broker
as leader is *led* here, one whose assignment lists this broker and names
another leader is *followed* (:mod:`wirekafka.server.replica_fetcher` fetches
it). Everything here runs on the event loop; ZooKeeper writes (ISR changes)
and truncations go to worker threads.

* A follower's fetch offset is its log end (Kafka's rule: a follower asks for
  what it lacks). A follower is caught up when it asks for the leader's log
  end, or for at least the end the leader had at its previous fetch.
* The high watermark is the smallest log end in the ISR (the leader's own
  included); consumers read below it, acks=all waits for it.
* The ISR shrinks by the followers that have not been caught up within
  ``replica.lag.time.max.ms`` and grows by those whose log end reached the
  high watermark, written by the leader to the partition's state znode with
  the znode version (a conflict means the controller changed it: the next
  cache refresh brings the new state). While a change is written, the high
  watermark counts over the old ISR and the new one together (Kafka's maximal
  ISR): a joining follower is in the ISR in ZooKeeper, and may be elected,
  before the leader knows the write went through, so the high watermark must
  not pass its log end meanwhile. A write ZooKeeper failed may have been made
  or not: the two ISRs stay counted together until the leader has written the
  ISR it knows again at the version it knows, or the cache brings the state.
* In a controlled shutdown (:meth:`ReplicaManager.begin_shutdown`) the broker
  follows no partition at a new leader or leader epoch: once the controller has
  moved a leadership away or taken the broker out of an ISR (both bump the
  epoch), it does not fetch that partition again, so no leader puts it back in
  the ISR (Kafka's controller sends StopReplica to the same end).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import trio

from wirekafka.broker.appends import AppendWatch
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.log import PartitionLog
from wirekafka.worker_threads import LOG_DIRS, METADATA, run_blocking
from wirekafka.zk.election import NO_LEADER
from wirekafka.zk.znodes import PartitionState

log = logging.getLogger("wirekafka.replication")

RECONCILE_SECONDS = 0.1  # how often the cluster cache is looked at for a change, at most
FOLLOWER_RETRY_S = 0.5  # a partition the leader refused is fetched again after this


class ReplicatedCluster(Protocol):
    """What replication needs of the cluster cache (:class:`~wirekafka.zk.cluster.ZkCluster`)."""

    generation: int  # moves whenever the cache changes

    def partition_state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None: ...

    def update_isr(
        self, topic: str, partition: int, isr: tuple[int, ...], expected_version: int
    ) -> int | None: ...


class ReplicaLogs(Protocol):
    """Where the local replicas' logs come from (:class:`~wirekafka.broker.topics.TopicManager`)."""

    def replica_assignments(self, broker_id: int) -> Iterator[tuple[str, int, tuple[int, ...]]]: ...

    def replica_log(self, name: str, partition: int) -> PartitionLog | None: ...

    def open_replica_log(self, name: str, partition: int) -> PartitionLog | None: ...


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower, from its fetches (trio clock seconds)."""

    end_offset: int = -1  # unknown until it fetches
    caught_up_s: float = 0.0
    last_fetch_s: float = 0.0
    leader_end_at_last_fetch: int = -1


@dataclass(slots=True)
class Led:
    """A partition this broker leads, at one leader epoch."""

    topic: str
    partition: int
    log: PartitionLog
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    followers: dict[int, FollowerProgress]
    # The high watermark this leader reached (the log's own goes on moving once the
    # replica follows another leader: an acks=all answer looks at this one).
    high_watermark: int = 0
    # The replicas the high watermark counts over: the ISR, but while a change of it
    # is written, or after a write whose outcome is unknown (ZooKeeper failed) until
    # the state is known again, the old ISR and the new one together (Kafka's
    # maximal ISR).
    counted_isr: tuple[int, ...] = ()
    isr_writing: bool = False
    waiters: list[tuple[int, trio.Event]] = field(default_factory=list)  # acks=all


@dataclass(slots=True)
class Followed:
    """A partition this broker follows, at one leader epoch."""

    topic: str
    partition: int
    log: PartitionLog
    leader_id: int
    leader_epoch: int
    truncated: bool = False  # checked against the leader's epochs since this epoch began
    retry_at_s: float = 0.0  # after a refusal (the leader has not seen its new state yet, ...)

    def retry_later(self) -> None:
        self.retry_at_s = trio.current_time() + FOLLOWER_RETRY_S


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        cluster: ReplicatedCluster,
        logs: ReplicaLogs,
        appends: AppendWatch,
        *,
        replica_lag_time_max_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self.logs = logs
        self.appends = appends
        self.lag_s = replica_lag_time_max_ms / 1000
        self.led: dict[tuple[str, int], Led] = {}
        self.followed: dict[tuple[str, int], Followed] = {}
        self.followers_changed = trio.Event()  # set when the followed partitions change
        self.shutting_down = False  # in a controlled shutdown: follow nothing anew
        self._wake = trio.Event()
        self._reconciling = trio.Lock()
        # The cache's generation the roles were last made from (None: the last look
        # left a replica as it was, its log not opened or its ISR being written, so the
        # next look goes through the cache again).
        self._reconciled_generation: int | None = None
        self._with_followers: list[Led] = []  # the led partitions with other replicas
        # Led partitions whose ISR may grow (a follower outside it fetched from the high
        # watermark on) or must be confirmed (a change whose outcome is unknown).
        self._isr_candidates: set[tuple[str, int]] = set()

    # roles

    async def run(self) -> None:
        """Keep the roles in line with the cluster cache and the ISRs with the
        followers' progress, until cancelled (a task of the broker's nursery)."""
        next_isr_check = trio.current_time()
        while True:
            await self.reconcile()
            now = trio.current_time()
            if now >= next_isr_check:
                await self._shrink_isrs(now)
                next_isr_check = now + max(self.lag_s / 2, RECONCILE_SECONDS)
            await self._expand_isrs(now)
            with trio.move_on_after(RECONCILE_SECONDS):
                await self._wake.wait()
            self._wake = trio.Event()

    async def reconcile(self, *, again: bool = False) -> None:
        """Lead, follow or drop each local replica as the cluster cache says. A cache
        unchanged since the last look, which every replica then took, is not gone
        through again, unless ``again`` (something besides the cache changed)."""
        async with self._reconciling:
            generation = self.cluster.generation
            if generation == self._reconciled_generation and not again:
                return
            complete = await self._reconcile()
            self._reconciled_generation = generation if complete else None

    async def _reconcile(self) -> bool:
        """Whether every local replica took the cache's state: False when a log could
        not be opened, or a led partition's ISR was being written (its new state is
        taken at the next look)."""
        me = self.broker_id
        complete = True
        led: dict[tuple[str, int], Led] = {}
        followed: dict[tuple[str, int], Followed] = {}
        for topic, partition, replicas in self.logs.replica_assignments(me):
            key = (topic, partition)
            found = self.cluster.partition_state(topic, partition)
            if found is None:
                continue
            state, version = found
            if state.leader == NO_LEADER:
                continue
            partition_log = self.logs.replica_log(topic, partition)
            if partition_log is None:
                partition_log = await run_blocking(
                    LOG_DIRS, self.logs.open_replica_log, topic, partition
                )
                if partition_log is None:
                    complete = False
                    continue
            if state.leader == me:
                leading = led[key] = self._lead(key, partition_log, state, version, replicas)
                if leading.zk_version < version:  # left as it was: its ISR is being written
                    complete = False
            elif (following := self._follow(key, partition_log, state)) is not None:
                followed[key] = following
        for key, old in self.led.items():
            if led.get(key) is not old:
                _release_waiters(old)
        if followed.keys() != self.followed.keys() or any(
            followed[key] is not self.followed[key] for key in followed
        ):
            self.followers_changed.set()
            self.followers_changed = trio.Event()
        self.led, self.followed = led, followed
        self._with_followers = [one for one in led.values() if one.followers]
        return complete

    def _lead(
        self,
        key: tuple[str, int],
        partition_log: PartitionLog,
        state: PartitionState,
        version: int,
        replicas: tuple[int, ...],
    ) -> Led:
        current = self.led.get(key)
        if current is not None and current.leader_epoch == state.leader_epoch:
            if version > current.zk_version and not current.isr_writing:
                current.isr, current.zk_version = state.isr, version
                current.counted_isr = state.isr
                self._advance_high_watermark(current)
            current.replicas = replicas
            return current
        now = trio.current_time()
        followers = {
            r: FollowerProgress(caught_up_s=now if r in state.isr else 0.0)
            for r in replicas
            if r != self.broker_id
        }
        partition_log.replicated = len(replicas) > 1
        log.info(
            "%s-%d: leader at epoch %d, ISR %s", key[0], key[1], state.leader_epoch, list(state.isr)
        )
        led = Led(
            key[0],
            key[1],
            partition_log,
            state.leader_epoch,
            state.isr,
            version,
            replicas,
            followers,
            partition_log.high_watermark,
            counted_isr=state.isr,
        )
        self._advance_high_watermark(led)
        return led

    def _follow(
        self, key: tuple[str, int], partition_log: PartitionLog, state: PartitionState
    ) -> Followed | None:
        """The partition followed at ``state``'s leader and epoch; None in a
        controlled shutdown when it was not followed so already."""
        current = self.followed.get(key)
        if (
            current is not None
            and current.leader_id == state.leader
            and current.leader_epoch == state.leader_epoch
        ):
            return current
        if self.shutting_down:
            if current is not None or key in self.led:
                log.info(
                    "%s-%d: not following broker %d at epoch %d: shutting down",
                    key[0], key[1], state.leader, state.leader_epoch,
                )  # fmt: skip
            return None
        partition_log.replicated = True
        log.info(
            "%s-%d: following broker %d at epoch %d",
            key[0],
            key[1],
            state.leader,
            state.leader_epoch,
        )
        return Followed(key[0], key[1], partition_log, state.leader, state.leader_epoch)

    async def begin_shutdown(self) -> None:
        """A controlled shutdown begins: from now on no partition is followed at a
        new leader or leader epoch."""
        self.shutting_down = True
        await self.reconcile(again=True)

    def movable_leaderships(self, live: Collection[int]) -> list[tuple[str, int]]:
        """The partitions led here whose ISR has another member among ``live``: those
        a controlled shutdown should have moved."""
        return [
            key
            for key, led in self.led.items()
            if any(r != self.broker_id and r in live for r in led.isr)
        ]

    def still_followed(self, followed: Followed) -> bool:
        """Whether ``followed`` is still how this broker follows its partition: not
        replaced at another leader or leader epoch, nor led or dropped here since.
        A fetcher's answer for one that is not must be dropped: it comes from a
        leader this broker no longer follows, maybe after the replica truncated
        for the new leader epoch (Kafka's fetcher checks its fetch state the same
        way before it appends)."""
        return self.followed.get((followed.topic, followed.partition)) is followed

    def followed_from(self, leader_id: int) -> list[Followed]:
        now = trio.current_time()
        return [
            f for f in self.followed.values() if f.leader_id == leader_id and f.retry_at_s <= now
        ]

    def leaders_followed(self) -> set[int]:
        return {f.leader_id for f in self.followed.values()}

    # the leader's side

    def leading(self, topic: str, partition: int) -> Led | None:
        return self.led.get((topic, partition))

    async def leading_now(self, topic: str, partition: int) -> Led | None:
        """:meth:`leading`, after a look at the cluster cache when this broker does not
        lead the partition yet (the cache may have just made it leader)."""
        led = self.led.get((topic, partition))
        if led is None:
            await self.reconcile()
            led = self.led.get((topic, partition))
        return led

    async def leading_at(
        self, topic: str, partition: int, current_leader_epoch: int
    ) -> Led | ErrorCode:
        """:meth:`leading_now` for a client's request naming ``current_leader_epoch``
        (-1: none): NOT_LEADER_OR_FOLLOWER when this broker does not lead (yet),
        or the error of :func:`leader_epoch_error`."""
        led = await self.leading_now(topic, partition)
        if led is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        error = leader_epoch_error(led, current_leader_epoch)
        return led if error is None else error

    def follower_fetched(self, led: Led, replica_id: int, fetch_offset: int) -> None:
        """A follower asked for ``fetch_offset``: it has everything below it."""
        progress = led.followers.get(replica_id)
        if progress is None:
            return  # not a replica of this partition
        now = trio.current_time()
        leader_end = led.log.log_end_offset
        if fetch_offset >= leader_end:
            progress.caught_up_s = now
        elif fetch_offset >= progress.leader_end_at_last_fetch >= 0:
            progress.caught_up_s = max(progress.caught_up_s, progress.last_fetch_s)
        progress.end_offset = fetch_offset
        progress.last_fetch_s = now
        progress.leader_end_at_last_fetch = leader_end
        if replica_id in led.counted_isr:
            self._advance_high_watermark(led)
        elif fetch_offset >= led.log.high_watermark:
            self._isr_candidates.add((led.topic, led.partition))
            self._wake.set()  # it may join the ISR

    def appended(self, led: Led) -> None:
        """The leader appended: with no follower in the ISR that moves the high watermark."""
        if len(led.counted_isr) == 1:
            self._advance_high_watermark(led)

    def _advance_high_watermark(self, led: Led) -> None:
        partition_log = led.log
        lowest = partition_log.log_end_offset
        followers = led.followers
        for replica in led.counted_isr:
            if replica != self.broker_id:
                progress = followers.get(replica)
                end = -1 if progress is None else progress.end_offset
                if end < lowest:
                    lowest = end
        if lowest <= led.high_watermark:
            return
        high_watermark = led.high_watermark = partition_log.set_high_watermark(lowest)
        waiters = led.waiters
        if waiters:
            done = [w for w in waiters if w[0] <= high_watermark]
            if done:
                led.waiters = [w for w in waiters if w[0] > high_watermark]
                for _, event in done:
                    event.set()
        self.appends.appended(led.topic, led.partition)  # consumers may read further

    async def wait_replicated(self, led: Led, end_offset: int, timeout_s: float) -> ErrorCode:
        """acks=all: wait until the high watermark reaches ``end_offset`` (the offset
        after the batch). NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR fell
        below ``min.insync.replicas`` meanwhile, REQUEST_TIMED_OUT at the timeout,
        NOT_LEADER_OR_FOLLOWER when leadership moved first.

        Only the high watermark this leader reached counts: once the replica
        follows another leader, its log's high watermark is that leader's, over
        records that may not be the ones appended here (they are truncated)."""
        if led.high_watermark < end_offset:
            event = trio.Event()
            led.waiters.append((end_offset, event))
            with trio.move_on_after(max(timeout_s, 0)):
                await event.wait()
            if not event.is_set():
                led.waiters = [w for w in led.waiters if w[1] is not event]
                return ErrorCode.REQUEST_TIMED_OUT
        if self.led.get((led.topic, led.partition)) is not led:
            if led.high_watermark >= end_offset:
                return ErrorCode.NONE  # replicated before leadership moved
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(led.isr) < led.log.config.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def enough_replicas(self, led: Led) -> bool:
        """acks=all may append: the ISR holds ``min.insync.replicas``."""
        return len(led.isr) >= led.log.config.min_insync_replicas

    # ISR changes

    async def _shrink_isrs(self, now: float) -> None:
        for led in self._with_followers:
            lagging = [
                r
                for r in led.isr
                if r != self.broker_id
                and (p := led.followers.get(r)) is not None
                and now - p.caught_up_s > self.lag_s
            ]
            if lagging and not led.isr_writing:
                isr = tuple(r for r in led.isr if r not in lagging)
                log.info(
                    "%s-%d: shrinking the ISR %s -> %s (replicas %s behind for more than %d ms)",
                    led.topic,
                    led.partition,
                    list(led.isr),
                    list(isr),
                    lagging,
                    self.lag_s * 1000,
                )
                await self._write_isr(led, isr)

    async def _expand_isrs(self, now: float) -> None:
        """Followers out of the ISR that have reached the high watermark and been
        caught up lately (a stopped one has not, however far its log reaches) join.

        A change whose outcome is unknown comes first: the ISR this leader knows is
        written again, at the version it knows. Either that succeeds (the change
        had not been made) or the version has moved, and the cache brings the
        state as it is (the change had been made, or another). Only the candidates are
        looked at; one whose ISR is being written is looked at again next time."""
        candidates, self._isr_candidates = self._isr_candidates, set()
        for key in candidates:
            led = self.led.get(key)
            if led is None:
                continue
            if led.isr_writing:
                self._isr_candidates.add(key)
                continue
            if led.counted_isr != led.isr:
                log.info(
                    "%s-%d: confirming the ISR %s after a change that may not have been made",
                    led.topic, led.partition, list(led.isr),
                )  # fmt: skip
                await self._write_isr(led, led.isr)
                continue
            high_watermark = led.log.high_watermark
            joining = [
                r
                for r, p in led.followers.items()
                if r not in led.isr
                and p.end_offset >= high_watermark
                and now - p.caught_up_s <= self.lag_s
            ]
            if joining:
                isr = tuple(r for r in led.replicas if r in led.isr or r in joining)
                log.info(
                    "%s-%d: expanding the ISR %s -> %s",
                    led.topic,
                    led.partition,
                    list(led.isr),
                    list(isr),
                )
                await self._write_isr(led, isr)

    async def _write_isr(self, led: Led, isr: tuple[int, ...]) -> None:
        led.isr_writing = True
        led.counted_isr = tuple(dict.fromkeys(led.counted_isr + isr))
        try:
            version = await run_blocking(
                METADATA, self.cluster.update_isr, led.topic, led.partition, isr, led.zk_version
            )
        except Exception as exc:  # ZooKeeper failed: confirmed or tried again at the next check
            log.warning("%s-%d: the ISR change failed: %s", led.topic, led.partition, exc)
            self._isr_candidates.add((led.topic, led.partition))
            return  # the ISRs counted stay together until the state is known
        finally:
            led.isr_writing = False
        if version is None:
            log.info(
                "%s-%d: the state changed meanwhile; ISR left as it is", led.topic, led.partition
            )
            self._isr_candidates.add((led.topic, led.partition))
            return
        led.isr, led.zk_version = isr, version
        led.counted_isr = isr
        self._advance_high_watermark(led)
        # waiters that can no longer be satisfied are answered by their own check
        if len(isr) < led.log.config.min_insync_replicas:
            _release_waiters(led)


def leader_epoch_error(led: Led, current_leader_epoch: int) -> ErrorCode | None:
    """Whether a request's ``current_leader_epoch`` (-1: none given) is this
    leader's: FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer."""
    if 0 <= current_leader_epoch < led.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current_leader_epoch > led.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return None


def _release_waiters(led: Led) -> None:
    """Answer every acks=all wait of ``led`` now (leadership moved, or the ISR fell
    below ``min.insync.replicas``): each looks at why itself."""
    waiters, led.waiters = led.waiters, []
    for _, event in waiters:
        event.set()
