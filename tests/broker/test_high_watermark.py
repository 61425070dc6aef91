"""The leader's side of replication (broker.replication.ReplicaManager) over a real
partition log and a cluster cache the test writes: the high watermark from the
followers' fetches (over the old ISR and the new one while a change is written),
and what an acks=all wait answers when leadership moves."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from tests.storage.helpers import make_batch
from tests.storage.test_replicated_log import open_log
from wirekafka.broker.appends import AppendWatch
from wirekafka.broker.replication import Led, ReplicaManager
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.log import PartitionLog
from wirekafka.zk.znodes import PartitionState

ME, OTHER = 0, 1


class Cache:
    """A cluster cache holding one partition's state."""

    def __init__(self, state: PartitionState) -> None:
        self.state, self.version = state, 0
        self.generation = 0

    def partition_state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None:
        return self.state, self.version

    def update_isr(
        self, topic: str, partition: int, isr: tuple[int, ...], expected_version: int
    ) -> int | None:
        return None

    def move(self, state: PartitionState) -> None:
        self.put(state, self.version + 1)

    def put(self, state: PartitionState, version: int) -> None:
        """The cache holds ``state`` at ``version`` now (a new generation)."""
        self.state, self.version = state, version
        self.generation += 1


class Logs:
    def __init__(self, log: PartitionLog, replicas: tuple[int, ...]) -> None:
        self.log, self.replicas = log, replicas

    def replica_assignments(self, broker_id: int) -> Iterator[tuple[str, int, tuple[int, ...]]]:
        yield "t", 0, self.replicas

    def replica_log(self, name: str, partition: int) -> PartitionLog | None:
        return self.log

    def open_replica_log(self, name: str, partition: int) -> PartitionLog | None:
        return self.log


def manager(  # type: ignore[no-untyped-def]
    tmp_path, assigned: tuple[int, ...] = (ME, OTHER)
) -> tuple[ReplicaManager, Cache, PartitionLog]:
    log = open_log(tmp_path)
    cache = Cache(PartitionState(ME, 0, assigned, 1))
    replicas = ReplicaManager(
        ME, cache, Logs(log, assigned), AppendWatch(), replica_lag_time_max_ms=10_000
    )
    return replicas, cache, log


def test_the_high_watermark_is_the_smallest_log_end_in_the_isr(tmp_path) -> None:
    replicas, _, log = manager(tmp_path)

    async def main() -> None:
        await replicas.reconcile()
        led = replicas.leading("t", 0)
        assert led is not None
        for index in range(3):
            log.append(bytearray(make_batch(index)), leader_epoch=0)
        replicas.appended(led)
        assert log.high_watermark == 0  # the follower has nothing yet
        replicas.follower_fetched(led, OTHER, 3)
        assert log.high_watermark == led.high_watermark == 3

    trio.run(main)


def test_acks_all_is_not_answered_from_a_high_watermark_reached_after_leadership_moved(
    tmp_path,
) -> None:
    """The replica follows another leader before its followers had the batch: the
    log's high watermark then comes from the new leader, over other records (the
    batch is truncated), and must not answer the wait."""

    replicas, cache, log = manager(tmp_path)

    async def main() -> None:
        await replicas.reconcile()
        led = replicas.leading("t", 0)
        assert led is not None
        log.append(bytearray(make_batch(0)), leader_epoch=0)
        end_offset = log.log_end_offset
        answers: list[ErrorCode] = []

        async def wait() -> None:
            answers.append(await replicas.wait_replicated(led, end_offset, 10.0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            cache.move(PartitionState(OTHER, 1, (OTHER,), 1))
            await replicas.reconcile()  # follows OTHER now: the wait is released
            log.set_high_watermark(end_offset)  # as a fetch from the new leader sets it
        assert answers == [ErrorCode.NOT_LEADER_OR_FOLLOWER]

    trio.run(main)


def test_acks_all_on_a_partition_of_one_replica_is_answered_at_once(tmp_path) -> None:
    replicas, _, log = manager(tmp_path, (ME,))

    async def main() -> None:
        await replicas.reconcile()
        led = replicas.leading("t", 0)
        assert led is not None
        log.append(bytearray(make_batch(0)), leader_epoch=0)
        replicas.appended(led)
        with trio.fail_after(1):
            answer = await replicas.wait_replicated(led, log.log_end_offset, 10.0)
            assert answer == ErrorCode.NONE

    trio.run(main)


THIRD = 2  # a replica out of the ISR, which joins it


def with_a_third_replica(tmp_path: Path, cache: Cache) -> tuple[ReplicaManager, PartitionLog]:
    """The leader of replicas ME, OTHER and THIRD, with the ISR ``cache`` gives."""
    log = open_log(tmp_path)
    replicas = ReplicaManager(
        ME, cache, Logs(log, (ME, OTHER, THIRD)), AppendWatch(), replica_lag_time_max_ms=10_000
    )
    return replicas, log


def append(log: PartitionLog, first: int, end: int) -> None:
    for index in range(first, end):
        log.append(bytearray(make_batch(index, records=1)), leader_epoch=0)


async def three_records_with_other(replicas: ReplicaManager, log: PartitionLog) -> Led:
    """Lead, append three records and have OTHER fetch them: the high watermark is 3."""
    await replicas.reconcile()
    led = replicas.leading("t", 0)
    assert led is not None
    append(log, 0, 3)
    replicas.follower_fetched(led, OTHER, 3)
    assert log.high_watermark == 3
    return led


class SlowCache(Cache):
    """A cluster cache whose ISR writes wait until the test lets them through."""

    def __init__(self, state: PartitionState) -> None:
        super().__init__(state)
        self.writing = threading.Event()
        self.write_may_end = threading.Event()

    def update_isr(
        self, topic: str, partition: int, isr: tuple[int, ...], expected_version: int
    ) -> int | None:
        self.writing.set()
        assert self.write_may_end.wait(10)
        self.move(PartitionState(self.state.leader, self.state.leader_epoch, isr, 1))
        return self.version


def test_while_a_follower_joins_the_isr_the_high_watermark_waits_for_it(tmp_path: Path) -> None:
    """The ISR with THIRD is in ZooKeeper once the write lands, and the controller
    may elect THIRD from it before the leader hears back: meanwhile the high
    watermark counts THIRD already (Kafka's maximal ISR), or it could pass THIRD's
    log end over records the new leader does not have."""
    cache = SlowCache(PartitionState(ME, 0, (ME, OTHER), 1))
    replicas, log = with_a_third_replica(tmp_path, cache)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            led = await three_records_with_other(replicas, log)
            nursery.start_soon(replicas.run)
            replicas.follower_fetched(led, THIRD, 3)  # caught up: it joins
            with trio.fail_after(10):
                while not cache.writing.is_set():
                    await trio.sleep(0.01)
            append(log, 3, 6)
            replicas.follower_fetched(led, OTHER, 6)
            assert log.high_watermark == 3  # THIRD has only 3
            cache.write_may_end.set()
            with trio.fail_after(10):
                while led.isr != (ME, OTHER, THIRD):
                    await trio.sleep(0.01)
            replicas.follower_fetched(led, THIRD, 6)
            assert log.high_watermark == 6
            nursery.cancel_scope.cancel()

    trio.run(main)


class FailingCache(Cache):
    """A cluster cache whose first ISR write fails in ZooKeeper: after making the
    change (``made``) or before. The writes after it are made; the cache learns of
    a change it made only when one of them finds the version moved, as a refresh
    would bring it."""

    def __init__(self, state: PartitionState, *, made: bool) -> None:
        super().__init__(state)
        self.made = made
        self.writes = 0
        self.zookeeper = (state, 0)  # what ZooKeeper holds

    def update_isr(
        self, topic: str, partition: int, isr: tuple[int, ...], expected_version: int
    ) -> int | None:
        self.writes += 1
        state, version = self.zookeeper
        changed = (PartitionState(state.leader, state.leader_epoch, isr, 1), version + 1)
        if self.writes == 1:
            if self.made:
                self.zookeeper = changed
            raise ConnectionError("ZooKeeper went away")
        if expected_version != version:
            self.put(*self.zookeeper)  # refreshed
            return None
        self.zookeeper = changed
        self.put(*changed)
        return self.version


@pytest.mark.parametrize("made", [True, False])
def test_after_an_isr_change_of_unknown_outcome_the_high_watermark_waits_for_the_state(
    tmp_path: Path, made: bool
) -> None:
    """ZooKeeper fails the write that adds THIRD: the change may have been made, and
    THIRD elected from it. Until the leader knows, the high watermark counts THIRD
    (it does not pass THIRD's log end); the next check writes the ISR the leader
    knows again, and from what that finds the ISR is as ZooKeeper has it. The
    checks of the replica manager's loop are made one by one here."""
    cache = FailingCache(PartitionState(ME, 0, (ME, OTHER), 1), made=made)
    replicas, log = with_a_third_replica(tmp_path, cache)

    async def main() -> None:
        led = await three_records_with_other(replicas, log)
        replicas.follower_fetched(led, THIRD, 3)  # caught up: it joins
        await replicas._expand_isrs(trio.current_time())  # and the write fails
        assert cache.writes == 1
        append(log, 3, 6)
        replicas.follower_fetched(led, OTHER, 6)
        assert log.high_watermark == 3  # THIRD may be in the ISR, with 3
        await replicas._expand_isrs(trio.current_time())  # the ISR known written again
        assert cache.writes == 2
        await replicas.reconcile()
        replicas.follower_fetched(led, OTHER, 6)
        if made:  # the version had moved: the cache brought THIRD in the ISR
            assert led.isr == led.counted_isr == (ME, OTHER, THIRD)
            assert log.high_watermark == 3
            replicas.follower_fetched(led, THIRD, 6)
        else:
            assert led.isr == led.counted_isr == (ME, OTHER)
        assert log.high_watermark == 6

    trio.run(main)


def test_a_state_that_comes_while_the_isr_is_written_is_taken_at_the_next_look(
    tmp_path: Path,
) -> None:
    """The cache brings a new state of a partition whose ISR this leader is writing:
    the look made meanwhile leaves the partition as it was (the write decides), so
    the next look goes through the cache again, though it has not changed since."""
    replicas, cache, _ = manager(tmp_path)

    async def main() -> None:
        await replicas.reconcile()
        led = replicas.leading("t", 0)
        assert led is not None
        led.isr_writing = True  # as _write_isr has it while ZooKeeper answers
        cache.move(PartitionState(ME, 0, (ME,), 1))  # the controller took OTHER out
        await replicas.reconcile()
        assert (led.isr, led.zk_version) == ((ME, OTHER), 0)
        led.isr_writing = False
        await replicas.reconcile()
        assert (led.isr, led.zk_version) == ((ME,), 1)

    trio.run(main)
