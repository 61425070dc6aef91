"""CPU-heavy request work in worker threads, so one large request does not hold up every client.

Checking the records of a large batch, and converting records for clients of
the old formats, is work in Python whose cost grows with the data: a
decompression bomb or a batch of a hundred thousand tiny records. Such work
starts on the event loop and, once it has taken :data:`INLINE_SECONDS`, goes
on in a worker thread, at most :data:`HEAVY_WORK_THREADS` at a time (the
machine has few cores; more threads would only queue on them). While a thread
works, the event loop serves the other connections.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import trio

HEAVY_WORK_THREADS = 2
INLINE_SECONDS = 0.002

T = TypeVar("T")

_limiter: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("heavy_work")


def _heavy_work_limiter() -> trio.CapacityLimiter:
    try:
        return _limiter.get()
    except LookupError:
        limiter = trio.CapacityLimiter(HEAVY_WORK_THREADS)
        _limiter.set(limiter)
        return limiter


async def run_heavy(work: Callable[[], T]) -> T:
    """Run ``work`` in a worker thread, waiting for a free one."""
    return await trio.to_thread.run_sync(work, limiter=_heavy_work_limiter())
