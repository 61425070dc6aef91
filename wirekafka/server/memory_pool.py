"""The bytes of requests being received or waiting to be handled, broker-wide.

``queued.max.request.bytes`` bounds them (Kafka's name; its memory pool).
A connection reserves a frame's size as soon as the size prefix has arrived
and before it reads the body, and gives it back once the request has been
handled. A connection that cannot have its bytes yet waits without reading
(TCP holds the client back) and without holding any of the pool, so
waiting connections cannot deadlock one another.

Fairness. Reservations are served in the order they were asked for, with one
exception: a later one may go ahead of one waiting before it if the bytes
held by reservations asked for before *that* one already keep it out. It then
takes only room the earlier one could not have used yet, so going ahead never
delays it, and once those older holders have given their bytes back nobody
else goes ahead of it: a large request waits for what was there before it
and for those that went ahead meanwhile, never for an endless stream of
later ones. And a client that holds a large reservation while it sends its
request slowly keeps out only what does not fit beside it: the requests of
others that fit in the rest are served, even while another large one waits
for it to finish.

Frames smaller than a connection's own allowance do not come here at all
(see ``wirekafka.server.connection``).
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque

import trio


class Reservation:
    """Bytes of the pool held (or waited for) by one request, in the order asked."""

    __slots__ = ("granted", "nbytes", "order")

    def __init__(self, order: int, nbytes: int) -> None:
        self.order = order
        self.nbytes = nbytes
        self.granted = trio.Event()


class MemoryPool:
    """A budget of ``capacity_bytes``; :meth:`reserve` waits, :meth:`release` gives back."""

    __slots__ = ("_held", "_order", "_waiters", "capacity_bytes", "reserved_bytes")

    def __init__(self, capacity_bytes: int) -> None:
        if capacity_bytes <= 0:
            raise ValueError(f"a memory pool of {capacity_bytes} bytes")
        self.capacity_bytes = capacity_bytes
        self.reserved_bytes = 0
        self._order = itertools.count()
        self._held: dict[int, int] = {}  # order asked -> bytes, of the reservations granted
        self._waiters: deque[Reservation] = deque()  # in the order asked

    @property
    def waiting(self) -> int:
        """How many reservations are waiting for room."""
        return len(self._waiters)

    async def reserve(self, nbytes: int) -> Reservation:
        """Take ``nbytes`` of the pool, waiting for room (see the module's fairness rule).

        Cancelled while waiting, it takes nothing and lets those behind it on.
        """
        if not 0 < nbytes <= self.capacity_bytes:
            raise ValueError(f"{nbytes} bytes of a pool of {self.capacity_bytes}")
        reservation = Reservation(next(self._order), nbytes)
        self._waiters.append(reservation)
        self._grant()
        if reservation.granted.is_set():
            await trio.lowlevel.cancel_shielded_checkpoint()
            return reservation
        try:
            await reservation.granted.wait()
        except BaseException:
            if reservation.granted.is_set():  # granted as the cancellation came: give it back
                self.release(reservation)
            else:
                self._waiters.remove(reservation)
                self._grant()  # it may have kept others waiting
            raise
        return reservation

    def try_reserve(self, nbytes: int) -> Reservation | None:
        """Take ``nbytes`` of the pool now if they are free and nobody waits for room
        (going ahead of no one); None otherwise."""
        if self._waiters or self.reserved_bytes + nbytes > self.capacity_bytes:
            return None
        reservation = Reservation(next(self._order), nbytes)
        self.reserved_bytes += nbytes
        self._held[reservation.order] = nbytes
        reservation.granted.set()
        return reservation

    def release(self, reservation: Reservation) -> None:
        nbytes = self._held.pop(reservation.order)  # KeyError: released twice, a bug
        self.reserved_bytes -= nbytes
        self._grant()

    def _grant(self) -> None:
        """Grant, in the order asked, each waiter that fits and delays no one before it."""
        if not self._waiters:
            return
        held_orders = sorted(self._held)
        held_before = list(itertools.accumulate((self._held[o] for o in held_orders), initial=0))
        granted: list[Reservation] = []
        for waiter in self._waiters:
            if self.reserved_bytes + waiter.nbytes <= self.capacity_bytes:
                self.reserved_bytes += waiter.nbytes
                self._held[waiter.order] = waiter.nbytes
                granted.append(waiter)
                continue
            # it waits; those behind it may go ahead only if what is held by reservations
            # asked for before it keeps it out anyway
            older = held_before[bisect.bisect_left(held_orders, waiter.order)]
            older += sum(g.nbytes for g in granted if g.order < waiter.order)
            if older + waiter.nbytes <= self.capacity_bytes:
                break
        for waiter in granted:
            self._waiters.remove(waiter)
            waiter.granted.set()
