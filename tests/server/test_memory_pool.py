"""queued.max.request.bytes: who gets room when, and nothing held while waiting."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from wirekafka.server.memory_pool import MemoryPool, Reservation


class Asker:
    """Tasks asking one pool for bytes, each in a cancel scope of its own."""

    def __init__(self, pool: MemoryPool, nursery: trio.Nursery) -> None:
        self.pool = pool
        self.nursery = nursery
        self.granted: dict[str, Reservation] = {}
        self.scopes: dict[str, trio.CancelScope] = {}

    async def ask(self, name: str, nbytes: int) -> None:
        self.scopes[name] = trio.CancelScope()
        self.nursery.start_soon(self._ask, name, nbytes)
        await trio.testing.wait_all_tasks_blocked()

    async def _ask(self, name: str, nbytes: int) -> None:
        with self.scopes[name]:
            self.granted[name] = await self.pool.reserve(nbytes)

    async def release(self, name: str) -> None:
        self.pool.release(self.granted[name])
        await trio.testing.wait_all_tasks_blocked()


def run(test):
    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await test(Asker(MemoryPool(100), nursery))

    trio.run(main)


def test_reservations_within_the_capacity_are_granted_at_once() -> None:
    async def test(asker: Asker) -> None:
        await asker.ask("a", 60)
        await asker.ask("b", 40)
        assert set(asker.granted) == {"a", "b"}
        assert asker.pool.reserved_bytes == 100
        await asker.release("a")
        assert asker.pool.reserved_bytes == 40

    run(test)


def test_a_later_request_goes_ahead_only_into_room_the_earlier_could_not_use_yet() -> None:
    async def test(asker: Asker) -> None:
        await asker.ask("slow", 70)  # a slow client's request, held
        await asker.ask("large", 90)  # kept out by the slow one
        await asker.ask("medium", 20)  # fits beside the slow one: served meanwhile
        assert set(asker.granted) == {"slow", "medium"}
        await asker.release("slow")
        # the large one now waits only for what went ahead of it; nobody else goes ahead
        await asker.ask("late", 5)
        assert set(asker.granted) == {"slow", "medium"}
        assert asker.pool.waiting == 2
        await asker.release("medium")
        assert set(asker.granted) == {"slow", "medium", "large", "late"}
        assert asker.pool.reserved_bytes == 95

    run(test)


def test_a_cancelled_waiter_holds_nothing_and_lets_those_behind_it_on() -> None:
    async def test(asker: Asker) -> None:
        await asker.ask("first", 50)
        await asker.ask("large", 80)
        await asker.ask("beside", 40)  # goes ahead: the first keeps the large one out
        await asker.release("first")
        await asker.ask("late", 10)  # waits behind the large one
        assert set(asker.granted) == {"first", "beside"}
        asker.scopes["large"].cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert asker.scopes["large"].cancelled_caught
        assert set(asker.granted) == {"first", "beside", "late"}
        assert asker.pool.reserved_bytes == 50
        assert asker.pool.waiting == 0

    run(test)


def test_a_reservation_larger_than_the_pool_or_released_twice_is_a_bug() -> None:
    async def test(asker: Asker) -> None:
        with pytest.raises(ValueError):
            await asker.pool.reserve(101)
        await asker.ask("a", 10)
        await asker.release("a")
        with pytest.raises(KeyError):
            asker.pool.release(asker.granted["a"])

    run(test)


def test_a_reservation_without_waiting_takes_only_free_room_nobody_waits_for() -> None:
    async def test(asker: Asker) -> None:
        pool = asker.pool
        taken = pool.try_reserve(60)
        assert taken is not None and pool.reserved_bytes == 60
        assert pool.try_reserve(41) is None  # no room: nothing taken, nothing waits
        assert pool.reserved_bytes == 60 and pool.waiting == 0
        await asker.ask("large", 50)  # waits for the 60
        assert pool.try_reserve(10) is None  # room, but it would go ahead of the waiter
        pool.release(taken)
        await trio.testing.wait_all_tasks_blocked()
        assert set(asker.granted) == {"large"}
        assert pool.try_reserve(50) is not None and pool.reserved_bytes == 100

    run(test)
