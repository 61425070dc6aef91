"""Compaction's reading and writing in a child process of the broker.

A pass parses every record of the log it compacts: Python holding the GIL for
as long as the pass lasts. Run in a worker thread of the broker, it makes the
event loop wait for the GIL each time it wakes up, and on a busy machine, where
the thread holding the GIL may wait for a CPU, for as long as the scheduler
takes to run that thread again: a produce measured at p99 9 ms on a loaded
2-core machine took 33-64 ms while a 200 MB segment was compacted beside it.
In a process of its own the pass has its own interpreter, and the broker's
threads only wait for its answer.

:class:`CleanerProcess` starts the child (``python -m
wirekafka.storage.cleaner_process``) at the first pass and keeps it for the
next ones: it sends each :class:`CompactionJob` pickled down the child's stdin
and reads the :class:`CompactionOutcome` back from its stdout, one pass at a
time. A child that died is started again for the next pass; :meth:`close`
kills it, and a pass it was making ends in :class:`CompactionStopped`. The
child leaves SIGINT to the broker, exits when its stdin closes, and stops
before it names a copy ``.swap`` once the broker that asked for it is gone.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
from typing import IO, cast

from wirekafka.storage.compacted_copy import CompactionJob, CompactionOutcome, make_copies
from wirekafka.worker_threads import blocking


class CompactionStopped(Exception):
    """The pass ended unfinished: the broker is shutting down."""


class CleanerProcess:
    """A child process that does compaction passes, one at a time (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one pass at a time on the child's pipes
        self._child: subprocess.Popen[bytes] | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    @blocking
    def run(self, job: CompactionJob) -> CompactionOutcome:
        """The outcome of ``job``, done by the child (started if need be);
        CompactionStopped after :meth:`close`, OSError if the child ended
        without an answer, RuntimeError with its traceback if the pass raised."""
        with self._lock:
            if self._closed:
                raise CompactionStopped
            child = self._child
            if child is None or child.poll() is not None:
                child = self._child = self._start()
            try:
                pickle.dump(job, _pipe(child.stdin))
                _pipe(child.stdin).flush()
                reply = pickle.load(_pipe(child.stdout))
            except (OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
                _reap(child)
                if self._closed:
                    raise CompactionStopped from None
                raise OSError(
                    f"the cleaner process ended without an answer (exit {child.returncode}): "
                    f"{exc or type(exc).__name__}"
                ) from None
        if isinstance(reply, str):
            raise RuntimeError(f"the cleaner process failed:\n{reply}")
        return cast(CompactionOutcome, reply)

    def interrupt(self) -> None:
        """Kill the child, without waiting (a pass it is making ends in
        CompactionStopped); later passes are refused."""
        self._closed = True
        child = self._child
        if child is not None and child.returncode is None:
            child.kill()

    @blocking
    def close(self) -> None:
        """:meth:`interrupt`, then wait for the child to be gone."""
        self.interrupt()
        with self._lock:
            if self._child is not None:
                _reap(self._child)
                self._child = None

    @staticmethod
    def _start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    assert stream is not None, "the child's stdin and stdout are pipes"
    return stream


@blocking
def _reap(child: subprocess.Popen[bytes]) -> None:
    """Kill the child if it still runs, wait for it, close its pipes."""
    child.kill()
    child.wait()
    for stream in (child.stdin, child.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):  # a write to the dead child left buffered
                stream.close()


def main() -> None:
    """The child: passes from stdin, outcomes (or a pass's traceback) to stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the broker decides when the child stops
    broker = os.getppid()
    jobs, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but replies goes down the reply pipe
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:  # the broker closed the pipe, or is gone
            return
        reply: CompactionOutcome | str
        try:
            reply = make_copies(job, still_wanted=lambda: os.getppid() == broker)
        except Exception:
            reply = traceback.format_exc()
        pickle.dump(reply, replies)
        replies.flush()


if __name__ == "__main__":
    main()
