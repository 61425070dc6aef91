"""One group consumer in a process of its own, for the consumer-group interop tests.

Child side (``python group_driver.py '<json config>'``): runs one consumer of
``config["client"]`` (``kafka-python``, ``aiokafka`` or ``confluent``)
subscribed to ``config["topic"]`` in ``config["group"]``, and prints one JSON
object per line on stdout, flushed at once, so a SIGKILL loses nothing that
was printed:

* ``{"type": "started"}`` once subscribed;
* ``{"type": "revoked" | "assigned" | "lost", "partitions": [...], "owned": [...]}``
  from the rebalance callbacks (``owned``: the partitions held afterwards);
* ``{"type": "records", "records": [[partition, offset, key], ...]}`` per poll;
* ``{"type": "committed", "offsets": {partition: offset}}`` and
  ``{"type": "commit_error", "error": "..."}``;
* ``{"type": "closed"}`` after a clean close, ``{"type": "error", ...}`` before
  dying of an exception.

Commands, one per line on stdin: ``close`` (commit nothing more, close the
consumer, exit 0; end of stdin does the same) and ``commit {"0": 17, ...}``
(commit exactly those offsets, from the polling thread). With
``config["commit"] == "batch"`` the consumer commits what it has returned after
every poll that returned records.

``kafka-python`` means whichever kafka-python the interpreter has: run this
script with kafka-python 2.0.2's venv for 2.0.2. The child imports nothing
but the stdlib and its client.

Parent side: :class:`Member` starts the child and collects its events. Any
program that prints these events and takes these commands can be a member
(``command``): the Go client drivers (``interop_tests/go``) do.
"""

from __future__ import annotations

import contextlib
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
from typing import IO, Any

DRIVER = Path(__file__).resolve()
POLL_S = 0.2

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


def run_kafka_python(config: dict, commands: queue.Queue) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition

    topic = config["topic"]
    owned = Owned(config)
    options: dict[str, Any] = {
        "bootstrap_servers": config["bootstrap"],
        "group_id": config["group"],
        "client_id": config["name"],
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": config["session_timeout_ms"],
        "heartbeat_interval_ms": config["heartbeat_interval_ms"],
        "max_poll_interval_ms": config["max_poll_interval_ms"],
        "max_poll_records": 500,
    }
    strategy = config.get("assignment")
    if strategy == "range":
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        options["partition_assignment_strategy"] = [RangePartitionAssignor]
    elif strategy == "roundrobin":
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        options["partition_assignment_strategy"] = [RoundRobinPartitionAssignor]
    elif strategy == "cooperative-sticky":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

        options["partition_assignment_strategy"] = [CooperativeStickyAssignor]
    if config.get("group_instance_id"):
        options["group_instance_id"] = config["group_instance_id"]

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            owned.change("revoked", [tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned):
            owned.change("assigned", [tp.partition for tp in assigned])

        def on_partitions_lost(self, lost):
            owned.change("lost", [tp.partition for tp in lost])

    def offset_and_metadata(offset: int) -> OffsetAndMetadata:
        if len(OffsetAndMetadata._fields) == 3:  # kafka-python 3: leader_epoch
            return OffsetAndMetadata(offset, "", -1)
        return OffsetAndMetadata(offset, "")

    consumer = KafkaConsumer(**options)

    def commit(offsets: dict[int, int]) -> None:
        try:
            consumer.commit(
                {TopicPartition(topic, p): offset_and_metadata(o) for p, o in offsets.items()}
            )
            emit({"type": "committed", "offsets": offsets})
        except Exception as exc:
            emit({"type": "commit_error", "error": repr(exc)})

    # A leader rejoins when the metadata it assigned with differs from its latest, and
    # kafka-python 3.0.12 rebuilds that snapshot only when a metadata response arrives
    # after subscribe(); a first join that beats the response assigns from an empty one,
    # so the leader rejoins at once. That rejoin can strand it: if a poll() times out
    # while its SyncGroup is in flight, need_rejoin() turns False once it has assigned,
    # the finished join is never applied, and its heartbeats stay off (the coordinator
    # drops it after the session timeout while it goes on reading its partitions).
    # A blocking metadata refresh after subscribe() builds the snapshot before the join.
    consumer.subscribe([topic], listener=Listener())
    consumer.topics()
    emit({"type": "started"})
    try:
        while True:
            name, offsets = next_command(commands)
            if name == "close":
                break
            if name == "commit":
                commit(offsets)
            batch = consumer.poll(timeout_ms=int(POLL_S * 1000))
            records = [
                [r.partition, r.offset, key_text(r.key)] for rs in batch.values() for r in rs
            ]
            if records:
                emit({"type": "records", "records": records})
                if config.get("commit") == "batch":
                    commit({tp.partition: rs[-1].offset + 1 for tp, rs in batch.items() if rs})
    finally:
        consumer.close()
    emit({"type": "closed"})


def run_confluent(config: dict, commands: queue.Queue) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    topic = config["topic"]
    owned = Owned(config)
    options: dict[str, Any] = {
        "bootstrap.servers": config["bootstrap"],
        "group.id": config["group"],
        "client.id": config["name"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": config["session_timeout_ms"],
        "heartbeat.interval.ms": config["heartbeat_interval_ms"],
        "max.poll.interval.ms": config["max_poll_interval_ms"],
        "log_level": 3,
    }
    if config.get("assignment"):
        options["partition.assignment.strategy"] = config["assignment"]
    if config.get("group_instance_id"):
        options["group.instance.id"] = config["group_instance_id"]

    def on_assign(consumer, partitions):
        owned.change("assigned", [tp.partition for tp in partitions])

    def on_revoke(consumer, partitions):
        owned.change("revoked", [tp.partition for tp in partitions])

    def on_lost(consumer, partitions):
        owned.change("lost", [tp.partition for tp in partitions])

    consumer = Consumer(options)

    def commit(offsets: dict[int, int], *, quiet_if_nothing: bool = False) -> None:
        try:
            consumer.commit(
                offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )
            emit({"type": "committed", "offsets": offsets})
        except KafkaException as exc:
            if not (quiet_if_nothing and exc.args[0].code() == KafkaError._NO_OFFSET):
                emit({"type": "commit_error", "error": repr(exc)})

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit({"type": "started"})
    try:
        while True:
            name, offsets = next_command(commands)
            if name == "close":
                break
            if name == "commit":
                commit(offsets)
            messages = consumer.consume(num_messages=500, timeout=POLL_S)
            records = []
            positions: dict[int, int] = {}
            for m in messages:
                if m.error() is not None:
                    emit({"type": "client_error", "error": str(m.error())})
                    continue
                records.append([m.partition(), m.offset(), key_text(m.key())])
                positions[m.partition()] = m.offset() + 1
            if records:
                emit({"type": "records", "records": records})
                if config.get("commit") == "batch":
                    commit(positions, quiet_if_nothing=True)
    finally:
        consumer.close()
    emit({"type": "closed"})


def run_aiokafka(config: dict, commands: queue.Queue) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    topic = config["topic"]
    owned = Owned(config)
    # What this member returned and has not committed yet: committed on revoke, as
    # aiokafka rebalances in the background, between two getmany() calls.
    processed: dict[int, int] = {}

    async def main() -> None:
        assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
        options: dict[str, Any] = {
            "bootstrap_servers": config["bootstrap"],
            "group_id": config["group"],
            "client_id": config["name"],
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "session_timeout_ms": config["session_timeout_ms"],
            "heartbeat_interval_ms": config["heartbeat_interval_ms"],
            "max_poll_interval_ms": config["max_poll_interval_ms"],
            "partition_assignment_strategy": (assignors[config.get("assignment") or "roundrobin"],),
        }
        if config.get("group_instance_id"):
            options["group_instance_id"] = config["group_instance_id"]
        consumer = AIOKafkaConsumer(**options)

        async def commit(offsets: dict[int, int]) -> None:
            try:
                await consumer.commit({TopicPartition(topic, p): o for p, o in offsets.items()})
                emit({"type": "committed", "offsets": offsets})
                for p, o in offsets.items():
                    if processed.get(p) == o:
                        del processed[p]
            except Exception as exc:
                emit({"type": "commit_error", "error": repr(exc)})

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                pending = {tp.partition: processed[tp.partition] for tp in revoked}
                if pending and config.get("commit") == "batch":
                    await commit(pending)
                owned.change("revoked", [tp.partition for tp in revoked])

            async def on_partitions_assigned(self, assigned):
                owned.change("assigned", [tp.partition for tp in assigned])

        await consumer.start()
        try:
            consumer.subscribe([topic], listener=Listener())
            emit({"type": "started"})
            while True:
                name, offsets = next_command(commands)
                if name == "close":
                    break
                if name == "commit":
                    await commit(offsets)
                batch = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
                records = [
                    [r.partition, r.offset, key_text(r.key)] for rs in batch.values() for r in rs
                ]
                if records:
                    emit({"type": "records", "records": records})
                    for tp, rs in batch.items():
                        if rs:
                            processed[tp.partition] = rs[-1].offset + 1
                    if config.get("commit") == "batch":
                        await commit(dict(processed))
        finally:
            await consumer.stop()
        emit({"type": "closed"})

    asyncio.run(main())


CLIENTS: dict[str, Callable[[dict, queue.Queue], None]] = {
    "kafka-python": run_kafka_python,
    "confluent": run_confluent,
    "aiokafka": run_aiokafka,
}


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
        CLIENTS[config["client"]](config, commands)
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
    process that serves several (the Java client's, ``interop_tests/java_clients.py``);
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

    def describe(self) -> str:
        raise NotImplementedError

    def commit(self, offsets: dict[int, int]) -> None:
        """Have the member commit exactly these offsets."""
        raise NotImplementedError

    def close(self, timeout_s: float = 30.0) -> None:
        """Close the member's consumer, and insist that it closed cleanly."""
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

    # -- waiting

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
    """A child consumer process and the events it printed, in order."""

    def __init__(
        self,
        name: str,
        config: dict,
        *,
        python: str | os.PathLike = sys.executable,
        command: Sequence[str] | None = None,
        log_dir: Path,
    ) -> None:
        """``command``: the member's program and its arguments (the configuration is
        added as the last); by default this script run by ``python``."""
        super().__init__(name)
        self.config = {"name": name, **config}
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / f"{name}-{time.monotonic_ns()}.stderr"
        self._stderr: IO[bytes] = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [*(command or (str(python), str(DRIVER))), json.dumps(self.config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
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
            f"--- member {self.name} ({self.config['client']}), exit {self.process.poll()}: "
            f"{self.mark()} events, changes {self.changes()}, errors {self.errors()[:3]}\n"
            f"stderr tail:\n{self.stderr_text(2000)}"
        )

    # -- ending

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

    def kill(self) -> None:
        """SIGKILL: no LeaveGroup, no commit, nothing."""
        self.killed = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._reader.join(5)
        self._stderr.close()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


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
