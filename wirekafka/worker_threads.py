"""The one seam between the event loop and work that blocks: worker threads.

The rule
--------
One trio event loop serves every connection, so nothing that can block runs
on it: no fsync, no creation of files (a new log, a segment roll), no index
rebuild or scan of a log, no ZooKeeper call, no write of a metadata file.
Such work goes through :func:`run_blocking`, the only caller of
``trio.to_thread`` in the package, to a worker thread of one of the pools
below; a task waiting for it is blocked, the loop serves everyone else.
What the loop does itself is bounded in-memory work, reads served from the
page cache (index lookups, ``pread`` of batch headers, ``sendfile``) and the
append of a batch to the active segment (a ``pwrite``; the one that would roll
the segment stops and leaves the roll to a worker thread).

Each function says which side it lives on: one that may block is decorated
with :func:`blocking` and runs only in worker threads (or before and after
the event loop, at startup and in tools and tests); every other function may
run on the loop. A blocking function called on the loop's thread fails
loudly (:data:`CHECK_ENV`: ``raise`` in the tests and their broker
subprocesses; ``log``, the default, logs the call and its stack once per
function, so a regression shows in the broker's log without taking requests
down). ``tests/test_worker_threads.py`` checks the same rule statically: no
``async def`` calls a blocking function or a blocking primitive (``os.fsync``,
a kazoo client method, ...) directly, a function calling such a primitive is
marked, and nothing else calls ``trio.to_thread``.

Results come back to the loop, which alone changes the state it shares with
handlers; threads change only what they own or what a lock guards, and the
locks they share with the loop are held for short swaps, never across disk
or ZooKeeper waits. Callbacks from kazoo's own threads reach trio through its
token (``TrioToken.run_sync_soon`` or ``trio.from_thread``), never by changing
broker state from those threads.

The pools
---------
Each pool is a :class:`trio.CapacityLimiter`: a task waits (cancellably, in
trio) for a free thread of its pool, so a slow resource holds at most its own
pool's threads and never delays work on another resource.

* :data:`RECORDS` (2 threads): CPU-heavy request work, checking the records
  of a large batch and converting records for old clients. It is Python
  holding the GIL, so more threads than the machine's few cores would only
  queue on them.
* :data:`LOG_DIRS` (8 threads): the log dirs: flushes, rolls, creation and
  deletion of logs, ``__consumer_offsets`` appends, checkpoints, retention and
  compaction (whose reading and writing the thread hands to a child process
  and waits for, :mod:`wirekafka.storage.cleaner_process`, so the parsing of
  every record holds no GIL of the broker's). Fsyncs of different partitions overlap in the disk's queue;
  eight keeps a stalled disk from holding more threads than that.
* :data:`METADATA` (4 threads): the cluster's metadata: ZooKeeper (the
  registry, the cache refresh and the controller, topic and producer-id
  writes, v0 offsets) or, embedded, ``cluster-metadata.json``. Kazoo pipelines
  requests on one connection, so a few threads keep ZooKeeper busy; a
  ZooKeeper that stops answering holds four threads, not the disk's.
* :data:`METRICS` (1 thread): rendering a scrape of ``/metrics`` (reading the
  partition logs' sizes and offsets, formatting the text). Its own pool, so a
  stalled disk holding the log dirs' threads leaves the metrics readable, and
  scrapes never queue ahead of requests' record checks.
"""

from __future__ import annotations

import functools
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar, TypeVarTuple

import trio

log = logging.getLogger("wirekafka.worker_threads")

P = ParamSpec("P")
R = TypeVar("R")
Ts = TypeVarTuple("Ts")

CHECK_ENV = "WIREKAFKA_BLOCKING_CHECK"
CHECK_MODES = ("raise", "log", "off")
BLOCKING_MARK = "__wirekafka_blocking__"


class BlockingCallOnEventLoop(RuntimeError):
    """A function marked :func:`blocking` was called on the event loop's thread."""


@dataclass(slots=True)
class _Check:
    mode: str
    reported: set[str] = field(default_factory=set)  # functions already logged ("log" mode)


def _mode_from_env() -> str:
    mode = os.environ.get(CHECK_ENV, "log").strip().lower()
    return mode if mode in CHECK_MODES else "log"


_check = _Check(_mode_from_env())


def set_blocking_check(mode: str) -> None:
    """``raise``, ``log`` or ``off``: what a blocking call on the event loop does."""
    if mode not in CHECK_MODES:
        raise ValueError(f"{CHECK_ENV} is one of {', '.join(CHECK_MODES)}, not {mode!r}")
    _check.mode = mode
    _check.reported.clear()


def blocking_check() -> str:
    return _check.mode


def _on_event_loop(name: str) -> None:
    """Called when a blocking function is entered on the loop's thread."""
    mode = _check.mode
    message = f"{name} may block and must not run on the event loop: go through run_blocking"
    if mode == "raise":
        raise BlockingCallOnEventLoop(message)
    if mode == "log" and name not in _check.reported:
        _check.reported.add(name)
        log.error("%s\n%s", message, "".join(traceback.format_stack(limit=12)[:-2]))


def blocking(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark ``fn`` as one that may block: it runs in worker threads only.

    The guard costs one thread-local lookup per call, nothing beside a
    function that waits on a disk or on ZooKeeper; no function of the
    Produce path's event-loop side carries it.
    """
    name = fn.__qualname__

    @functools.wraps(fn)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        if trio.lowlevel.in_trio_run() and _check.mode != "off":
            _on_event_loop(name)
        return fn(*args, **kwargs)

    setattr(guarded, BLOCKING_MARK, True)
    return guarded


def is_blocking(fn: object) -> bool:
    """Whether ``fn`` is marked :func:`blocking`."""
    return bool(getattr(fn, BLOCKING_MARK, False))


@dataclass(frozen=True, slots=True)
class WorkerPool:
    """Worker threads for one kind of blocking work, at most ``threads`` at a time."""

    name: str
    threads: int
    _limiter: trio.lowlevel.RunVar[trio.CapacityLimiter]

    def limiter(self) -> trio.CapacityLimiter:
        """This trio run's limiter of the pool (made on first use)."""
        try:
            return self._limiter.get()
        except LookupError:
            limiter = trio.CapacityLimiter(self.threads)
            self._limiter.set(limiter)
            return limiter


def _pool(name: str, threads: int) -> WorkerPool:
    return WorkerPool(name, threads, trio.lowlevel.RunVar(f"worker_threads.{name}"))


RECORDS = _pool("records", 2)
LOG_DIRS = _pool("log_dirs", 8)
METADATA = _pool("metadata", 4)
METRICS = _pool("metrics", 1)
POOLS = (RECORDS, LOG_DIRS, METADATA, METRICS)


async def run_blocking(pool: WorkerPool, fn: Callable[[*Ts], R], *args: *Ts) -> R:
    """Run ``fn(*args)`` in a worker thread of ``pool`` and return what it returns
    (or raise what it raises), waiting first for a free thread of the pool.

    Cancellation is honoured while waiting for a thread; once the call runs it
    is never abandoned: the task waits for it to finish, so nothing it does
    outlives the task that asked for it.
    """
    return await trio.to_thread.run_sync(fn, *args, limiter=pool.limiter())


def run_on_loop(token: trio.lowlevel.TrioToken | None, fn: Callable[[], None]) -> None:
    """Run ``fn`` on the event loop of ``token``, waiting for it: how a worker thread
    hands a change of shared state to the loop. Without a loop to hand it to (no
    token, the loop's own thread, a loop that has finished) ``fn`` runs here."""
    if token is None or trio.lowlevel.in_trio_run():
        fn()
        return
    try:
        trio.from_thread.run_sync(fn, trio_token=token)
    except trio.RunFinishedError:
        fn()
