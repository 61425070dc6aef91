"""Wake-ups for long-polling fetches when data lands in a partition."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import trio


class AppendWatch:
    """Fetches waiting for ``min_bytes`` register here; produce wakes them."""

    def __init__(self) -> None:
        self._waiters: dict[tuple[str, int], set[trio.Event]] = {}
        self.closed = False  # the broker is stopping: nobody waits any more
        self.waiting = 0  # fetches waiting now (Kafka's fetch purgatory size)

    def appended(self, topic: str, partition: int) -> None:
        for event in self._waiters.pop((topic, partition), ()):
            event.set()

    def wake_all(self) -> None:
        """Release every waiting fetch, now and from now on (the broker is stopping)."""
        self.closed = True
        waiters, self._waiters = self._waiters, {}
        for events in waiters.values():
            for event in events:
                event.set()

    @contextmanager
    def watching(self, partitions: Iterable[tuple[str, int]]) -> Iterator[trio.Event]:
        """An event set at the first append to any of ``partitions``."""
        event = trio.Event()
        keys = list(partitions)
        for key in keys:
            self._waiters.setdefault(key, set()).add(event)
        self.waiting += 1
        try:
            yield event
        finally:
            self.waiting -= 1
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._waiters[key]
