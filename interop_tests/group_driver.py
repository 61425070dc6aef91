"""A consumer-group member in a process of its own, whatever its client.

Child side (``python -m interop_tests.group_driver '<json config>'``, from the
top of the repository): imports the client adapter module named by
``config["member"]`` (``interop_tests.clients.kafka_python`` ...) and runs its
``run_member(config, commands)``: one consumer subscribed to
``config["topic"]`` in ``config["group"]`` (the keys of
:meth:`interop_tests.clients.adapter.MemberConfig.driver_config`). The member
prints one JSON object per line on stdout, flushed at once, so a SIGKILL loses
nothing that was printed:

* ``{"type": "started"}`` once subscribed;
* ``{"type": "revoked" | "assigned" | "lost", "partitions": [...], "owned": [...]}``
  from the rebalance callbacks (``owned``: the partitions held afterwards);
* ``{"type": "records", "records": [[partition, offset, key], ...]}`` per poll;
* ``{"type": "committed", "offsets": {partition: offset}}`` and
  ``{"type": "commit_error", "error": "..."}``; ``{"type": "client_error", ...}``
  for an error a poll reported;
* ``{"type": "closed"}`` after a clean close, ``{"type": "error", ...}`` before
  dying of an exception.

Commands, one per line on stdin: ``close`` (commit nothing more, close the
consumer, exit 0; end of stdin does the same) and ``commit {"0": 17, ...}``
(commit exactly those offsets, from the polling thread). With
``config["commit"] == "batch"`` the member commits what it has returned after
every poll, and, where its client tells it before taking partitions away (a
revoke callback), what it returned of those partitions first.

This module and the member loops import nothing but the standard library and
their client, so the same loop runs under another interpreter (kafka-python
2.0.2's venv). Programs in other languages print the same events and take the
same commands (the Go drivers, ``interop_tests/go``); the Java client's members
are threads of one JVM that prints them (``interop_tests/clients/java.py``).

Parent side: :class:`MemberEvents` collects one member's events and gives
views of them; :class:`Member` is a member process.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
POLL_S = 0.2
MAX_POLL_RECORDS = 500

# -- child


_print_lock = threading.Lock()


def emit(event: dict) -> None:
    event["t"] = time.time()
    line = json.dumps(event)
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def read_commands(commands: queue.Queue) -> None:
    for line in sys.stdin:
        line = line.strip()
        if line:
            commands.put(line)
    commands.put("close")


def parse_command(line: str) -> tuple[str, dict[int, int]]:
    name, _, rest = line.partition(" ")
    offsets = {int(p): int(o) for p, o in json.loads(rest).items()} if rest else {}
    return name, offsets


def next_command(commands: queue.Queue) -> tuple[str, dict[int, int]]:
    """The next command from stdin, or ("", {}) when none is waiting."""
    try:
        return parse_command(commands.get_nowait())
    except queue.Empty:
        return "", {}


def key_text(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", "replace")


class Owned:
    """The partitions this member holds, kept from the rebalance callbacks.

    Eager protocols assign the whole new assignment; cooperative ones only what is added.
    """

    def __init__(self, config: dict) -> None:
        self.incremental = config.get("assignment") == "cooperative-sticky"
        self.partitions: set[int] = set()

    def change(self, kind: str, partitions: list[int]) -> None:
        if kind == "assigned" and self.incremental:
            self.partitions |= set(partitions)
        elif kind == "assigned":
            self.partitions = set(partitions)
        else:
            self.partitions -= set(partitions)
        emit({"type": kind, "partitions": sorted(partitions), "owned": sorted(self.partitions)})


def main() -> None:
    config = json.loads(sys.argv[1])
    if os.environ.get("GROUP_DRIVER_DEBUG"):  # the client's group logs on stderr, for diagnosis
        import logging

        logging.basicConfig(
            level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
        )
        for name in ("kafka.coordinator", "aiokafka.consumer.group_coordinator"):
            logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger("kafka.coordinator.consumer").setLevel(logging.INFO)
    commands: queue.Queue = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()
    try:
        importlib.import_module(config["member"]).run_member(config, commands)
    except BaseException as exc:
        emit({"type": "error", "error": repr(exc), "traceback": traceback.format_exc()})
        sys.stdout.flush()
        os._exit(1)
    sys.stdout.flush()
    os._exit(0)  # do not wait for client threads that linger


# -- parent


def parse_event(raw: bytes) -> dict:
    """One line a driver printed: its JSON object, or the line as a ``garbage`` event."""
    try:
        return json.loads(raw)
    except ValueError:
        return {"type": "garbage", "line": raw.decode(errors="replace")}


class MemberEvents:
    """The events one group member printed, in order, and views of them.

    A member is a process of its own (:class:`Member`) or a consumer on a thread of a
    process that serves several (the Java client's, ``interop_tests/clients/java.py``);
    either hands each event, parsed, to :meth:`add`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.events: list[dict] = []
        self.killed = False
        self._changed = threading.Condition()

    def add(self, event: dict) -> None:
        event["received"] = time.time()
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    def ended(self) -> None:
        """No more events will come: wake whoever waits."""
        with self._changed:
            self._changed.notify_all()

    @property
    def alive(self) -> bool:
        raise NotImplementedError

    @property
    def can_be_killed(self) -> bool:
        """Whether :meth:`kill` is a SIGKILL of this member alone."""
        return False

    def describe(self) -> str:
        raise NotImplementedError

    def commit(self, offsets: dict[int, int]) -> None:
        """Have the member commit exactly these offsets."""
        raise NotImplementedError

    def close(self, timeout_s: float = 30.0) -> None:
        """Close the member's consumer, and insist that it closed cleanly."""
        raise NotImplementedError

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, nothing."""
        raise NotImplementedError(f"{self.name} is not a process of its own")

    def abandon(self) -> None:
        """At a test's teardown: end the member however it can, without waiting."""
        raise NotImplementedError

    # -- views of the events

    def snapshot(self) -> list[dict]:
        with self._changed:
            return list(self.events)

    def of_type(self, *types: str, since: int = 0) -> list[dict]:
        return [e for e in self.snapshot()[since:] if e["type"] in types]

    @property
    def owned(self) -> frozenset[int]:
        changes = self.of_type("assigned", "revoked", "lost")
        return frozenset(changes[-1]["owned"]) if changes else frozenset()

    def records(self, since: int = 0) -> list[tuple[int, int, str | None]]:
        return [(p, o, k) for e in self.of_type("records", since=since) for p, o, k in e["records"]]

    def mark(self) -> int:
        """The number of events so far: pass it as ``since`` to look at what comes after."""
        with self._changed:
            return len(self.events)

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        wait_until([self], predicate, timeout_s, what)

    def changes(self) -> list[dict]:
        """The rebalance callbacks, short: type, partitions, owned, time."""
        return [
            {k: e[k] for k in ("type", "partitions", "owned", "t")}
            for e in self.snapshot()
            if e["type"] in ("assigned", "revoked", "lost")
        ]

    def errors(self) -> list[dict]:
        return self.of_type("error", "commit_error", "client_error")


class Member(MemberEvents):
    """A member process and the events it printed, in order."""

    def __init__(
        self, name: str, command: Sequence[str], config: dict, *, log_dir: Path, client: str
    ) -> None:
        """``command``: the member's program and its arguments; the configuration (JSON)
        is added as the last."""
        super().__init__(name)
        self.client = client
        self.config = config
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / f"{name}-{time.monotonic_ns()}.stderr"
        self._stderr: IO[bytes] = self.stderr_path.open("wb")
        pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [*command, json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": pythonpath},
        )
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"member-{name}")
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.add(parse_event(raw))
        self.ended()

    def stderr_text(self, limit: int = 6000) -> str:
        data = self.stderr_path.read_bytes() if self.stderr_path.exists() else b""
        return data[-limit:].decode(errors="replace")

    def describe(self) -> str:
        return (
            f"--- member {self.name} ({self.client}), exit {self.process.poll()}: "
            f"{self.mark()} events, changes {self.changes()}, errors {self.errors()[:3]}\n"
            f"stderr tail:\n{self.stderr_text(2000)}"
        )

    @property
    def can_be_killed(self) -> bool:
        return True

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def commit(self, offsets: dict[int, int]) -> None:
        self.send("commit " + json.dumps({str(p): o for p, o in offsets.items()}))

    def close(self, timeout_s: float = 30.0) -> None:
        """Ask for a clean close and insist on it (exit 0 after a ``closed`` event)."""
        if self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                self.send("close")
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.name} did not close within {timeout_s} s\n{self.describe()}"
            ) from None
        self._reader.join(5)
        self._stderr.close()
        assert code == 0 and self.of_type("closed"), (
            f"{self.name} did not close cleanly\n{self.describe()}"
        )

    def abandon(self) -> None:
        self.kill()

    def kill(self) -> None:
        self.killed = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.add({"type": "killed", "t": time.time()})
        self._reader.join(5)
        self._stderr.close()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def start_python_member(
    name: str,
    driver_config: dict,
    module: str,
    *,
    log_dir: Path,
    client: str,
    python: str | os.PathLike = sys.executable,
) -> Member:
    """A member run by ``python`` through this driver, its loop ``module``'s ``run_member``."""
    command = [str(python), "-m", "interop_tests.group_driver"]
    config = {**driver_config, "member": module}
    return Member(name, command, config, log_dir=log_dir, client=client)


def wait_until(
    members: Sequence[MemberEvents], predicate: Callable[[], bool], timeout_s: float, what: str
) -> None:
    """Wait (bounded) until ``predicate()``; fail with every member's story otherwise."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        dead = [m for m in members if not m.alive and not m.killed and not m.of_type("closed")]
        if dead or time.monotonic() > deadline:
            why = "a member died" if dead else f"timed out after {timeout_s} s"
            raise AssertionError(
                f"{why} waiting for {what}\n" + "\n".join(m.describe() for m in members)
            )
        time.sleep(0.05)


if __name__ == "__main__":
    main()
