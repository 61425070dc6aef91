"""The replica manager's roles in a controlled shutdown, with a fake cluster cache and
fake logs: it follows nothing anew, and knows which leaderships could still move."""

from __future__ import annotations

from collections.abc import Iterator

import trio

from wirekafka.broker.appends import AppendWatch
from wirekafka.broker.replication import ReplicaManager
from wirekafka.zk.znodes import PartitionState


class FakeLog:
    def __init__(self) -> None:
        self.replicated = False
        self.log_end_offset = 10
        self.high_watermark = 10

    def set_high_watermark(self, offset: int) -> int:
        self.high_watermark = max(self.high_watermark, offset)
        return self.high_watermark


class FakeCluster:
    """Partition states by partition of topic t, each at znode version 0."""

    def __init__(self, states: dict[int, PartitionState]) -> None:
        self.states = states
        self.generation = 0

    def move(self, partition: int, state: PartitionState) -> None:
        self.states[partition] = state
        self.generation += 1

    def partition_state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None:
        found = self.states.get(partition)
        return None if found is None else (found, 0)

    def update_isr(self, *_: object) -> int | None:
        raise AssertionError("no ISR change expected")


class FakeLogs:
    def __init__(self, partitions: int) -> None:
        self.logs = {("t", p): FakeLog() for p in range(partitions)}

    def replica_assignments(self, broker_id: int) -> Iterator[tuple[str, int, tuple[int, ...]]]:
        for topic, partition in self.logs:
            yield topic, partition, (0, 1, 2)

    def replica_log(self, name: str, partition: int) -> FakeLog | None:
        return self.logs.get((name, partition))

    def open_replica_log(self, name: str, partition: int) -> FakeLog | None:
        return self.replica_log(name, partition)


def test_in_a_controlled_shutdown_nothing_is_followed_anew() -> None:
    cluster = FakeCluster(
        {
            0: PartitionState(1, 0, (1, 0, 2), 1),  # followed from 1
            1: PartitionState(0, 0, (0, 1, 2), 1),  # led here
            2: PartitionState(2, 0, (2, 0, 1), 1),  # followed from 2
        }
    )
    manager = ReplicaManager(0, cluster, FakeLogs(3), AppendWatch(), replica_lag_time_max_ms=1000)  # type: ignore[arg-type]

    async def main() -> None:
        await manager.reconcile()
        assert set(manager.followed) == {("t", 0), ("t", 2)}
        assert set(manager.led) == {("t", 1)}
        await manager.begin_shutdown()
        assert set(manager.followed) == {("t", 0), ("t", 2)}  # as it was: same epochs
        # the controller took it out of p0's ISR and moved p1's leadership to 1
        cluster.move(0, PartitionState(1, 1, (1, 2), 1))
        cluster.move(1, PartitionState(1, 1, (1, 2), 1))
        await manager.reconcile()
        assert set(manager.followed) == {("t", 2)}
        assert manager.led == {}

    trio.run(main)


def test_movable_leaderships_have_another_live_isr_member() -> None:
    cluster = FakeCluster(
        {
            0: PartitionState(0, 0, (0, 1), 1),
            1: PartitionState(0, 0, (0,), 1),
        }
    )
    manager = ReplicaManager(0, cluster, FakeLogs(2), AppendWatch(), replica_lag_time_max_ms=1000)  # type: ignore[arg-type]

    async def main() -> None:
        await manager.reconcile()
        assert manager.movable_leaderships({0, 1, 2}) == [("t", 0)]
        assert manager.movable_leaderships({0, 2}) == []  # 1 is gone

    trio.run(main)


class CountingLogs(FakeLogs):
    """FakeLogs that count the looks through the assignments; the logs of
    ``unopened`` partitions are not made yet, and fail to open the first time
    (their log dir failed for a moment)."""

    def __init__(self, partitions: int, unopened: tuple[int, ...] = ()) -> None:
        super().__init__(partitions)
        self.looks = 0
        self.unopened = {("t", p): self.logs.pop(("t", p)) for p in unopened}
        self.failed: set[tuple[str, int]] = set()

    def replica_assignments(self, broker_id: int) -> Iterator[tuple[str, int, tuple[int, ...]]]:
        self.looks += 1
        yield from super().replica_assignments(broker_id)
        for topic, partition in list(self.unopened):
            yield topic, partition, (0, 1, 2)

    def open_replica_log(self, name: str, partition: int) -> FakeLog | None:
        key = (name, partition)
        if key in self.unopened and key not in self.failed:
            self.failed.add(key)
            return None
        if key in self.unopened:
            self.logs[key] = self.unopened.pop(key)
        return self.replica_log(name, partition)


def two_led_partitions() -> FakeCluster:
    return FakeCluster(
        {
            0: PartitionState(0, 0, (0, 1, 2), 1),
            1: PartitionState(0, 0, (0, 1, 2), 1),
        }
    )


def test_the_roles_are_made_again_only_when_the_cache_changed() -> None:
    """Each look (every RECONCILE_SECONDS, and on a request for a partition not led
    here) goes through the local replicas only when the cache has a new generation."""
    cluster = two_led_partitions()
    logs = CountingLogs(2)
    manager = ReplicaManager(0, cluster, logs, AppendWatch(), replica_lag_time_max_ms=1000)  # type: ignore[arg-type]

    async def main() -> None:
        await manager.reconcile()
        await manager.reconcile()
        assert (logs.looks, set(manager.led)) == (1, {("t", 0), ("t", 1)})
        cluster.move(0, PartitionState(1, 1, (1, 2), 1))
        await manager.reconcile()
        await manager.reconcile()
        assert (logs.looks, set(manager.led)) == (2, {("t", 1)})
        await manager.reconcile(again=True)
        assert logs.looks == 3

    trio.run(main)


def test_a_replica_whose_log_could_not_be_opened_is_tried_again_at_the_next_look() -> None:
    cluster = two_led_partitions()
    logs = CountingLogs(2, unopened=(1,))
    manager = ReplicaManager(0, cluster, logs, AppendWatch(), replica_lag_time_max_ms=1000)  # type: ignore[arg-type]

    async def main() -> None:
        await manager.reconcile()
        assert set(manager.led) == {("t", 0)}
        await manager.reconcile()  # the same cache, but a log was missing
        assert set(manager.led) == {("t", 0), ("t", 1)}
        await manager.reconcile()
        assert logs.looks == 2

    trio.run(main)
