"""The descriptors log storage keeps open: at most so many, the least recently used let go.

Segment files and index maps are opened when first needed and kept for the
next use. One :class:`FileCache` per broker (the LogManager's, its capacity
``FdBudget.open_files``) counts the owners holding one and, beyond its
capacity, makes the least recently used let go. The order is CLOCK, the
approximation of LRU that page caches use: using a file only sets its owner's
``file_used`` flag, so an append or a read takes no lock and makes no syscall
for it; the ring is walked, under the cache's own lock, only when a
descriptor is opened. An owner met with its flag set gets a second chance
(flag cleared, back of the ring); the first met without it lets go.

Letting go is dropping the owner's reference, never calling ``close()``:
whoever still holds the object (a read in another thread, a
:class:`~wirekafka.storage.spans.FileSpan` waiting for its ``sendfile``) goes on
with it, and the descriptor closes when the last reference goes
(``OpenFile``'s finalizer, an mmap's deallocation). So a descriptor number is
never reused while anything can still use it. Eviction takes no lock but the
cache's, and owners never call the cache while holding it, so it cannot
deadlock with a partition's lock.

An open that fails with EMFILE or ENFILE sheds part of the cache and is tried
once more (:meth:`FileCache.retrying`); a second failure goes up as the
OSError, which the log reports as a retriable error without taking the
partition offline.

A cache without a capacity (:data:`NO_LIMIT`, the default of logs and
segments built on their own, as tests and tools do) tracks nothing: owners
keep their descriptors until they are closed or dropped.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol, TypeVar

log = logging.getLogger("wirekafka.storage")

T = TypeVar("T")

OUT_OF_FDS_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})
SHED_FRACTION = 4  # on EMFILE, a quarter of the cached descriptors go
_WARN_EVERY_S = 10.0


def is_out_of_fds(exc: BaseException) -> bool:
    """Whether an error means the process (EMFILE) or the system (ENFILE) has no
    file descriptor left: back-pressure, not a fault of the file."""
    return isinstance(exc, OSError) and exc.errno in OUT_OF_FDS_ERRNOS


class FileOwner(Protocol):
    """Something holding one descriptor (a segment's file, an index map)."""

    file_used: bool  # set on each use; cleared as the clock hand passes

    def drop_file(self) -> object:
        """Let go of the descriptor: only swap the reference out (no lock, no
        syscall), and return what was held, so it is released after the cache's
        lock, or later by whoever still uses it."""
        ...


class FileCache:
    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(f"a file cache holds at least one descriptor, not {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._ring: OrderedDict[FileOwner, None] = OrderedDict()
        self.evictions = 0  # owners made to let go, for tests and diagnostics
        self._warned_at = -_WARN_EVERY_S

    def __len__(self) -> int:
        return len(self._ring)

    def __repr__(self) -> str:
        return f"FileCache({len(self._ring)} of {self.capacity})"

    def opened(self, owner: FileOwner) -> None:
        """``owner`` holds a descriptor now (its reference already stored): count
        it, and make the least recently used let go beyond the capacity."""
        owner.file_used = True
        if self.capacity is None:
            return
        with self._lock:
            self._ring[owner] = None  # already counted: it keeps its place
            excess = len(self._ring) - self.capacity
            released = self._evict(excess) if excess > 0 else []
        del released  # closed here, outside the lock, unless still in use elsewhere

    def closed(self, owner: FileOwner) -> None:
        """``owner`` lets go of its descriptor for good (its file is closed or deleted)."""
        with self._lock:
            self._ring.pop(owner, None)
            released = owner.drop_file()
        del released

    def shed(self) -> int:
        """Make a share of the owners let go (at least one), least recently used
        first; return how many did."""
        with self._lock:
            count = max(1, len(self._ring) // SHED_FRACTION) if self._ring else 0
            released = self._evict(count)
        return len(released)

    def retrying(self, open_file: Callable[[], T]) -> T:
        """``open_file()``; when the process or system is out of descriptors,
        shed part of the cache and call it once more."""
        try:
            return open_file()
        except OSError as exc:
            if not is_out_of_fds(exc):
                raise
            shed = self.shed()
            now = time.monotonic()
            if now - self._warned_at >= _WARN_EVERY_S:
                self._warned_at = now
                log.warning(
                    "out of file descriptors (%s): let go of %d of the open log files, "
                    "%d still open, and trying again",
                    exc.strerror, shed, len(self._ring),
                )  # fmt: skip
        return open_file()

    def _evict(self, count: int) -> list[object]:
        """With the lock held: walk the ring until ``count`` owners let go."""
        ring = self._ring
        released = []
        chances = len(ring)  # one turn of the hand: flags set again meanwhile are not waited for
        while count > 0 and ring:
            owner, _ = ring.popitem(last=False)
            if owner.file_used and chances > 0:
                chances -= 1
                owner.file_used = False
                ring[owner] = None  # a second chance, at the back
                continue
            released.append(owner.drop_file())
            count -= 1
        self.evictions += len(released)
        return released


NO_LIMIT = FileCache()
