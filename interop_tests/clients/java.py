"""The Java client, kafka-clients 3.9 and 4.x: its adapters, in one JVM each.

``interop_tests/jvm/clients/JavaClients.java`` runs with Java's source launcher
over one of the jar sets of ``interop_tests/jvm_jars.py`` (kafka-clients 3.9 or
4.x). It takes one command a line on stdin and prints one JSON object a line on
stdout (the Java file describes both). :class:`JavaClients` starts it and routes
what it prints: a group member's events to its :class:`JavaMember`, which has
the group driver's views (``interop_tests/group_driver.py``), so the group
tests' checks apply unchanged; the answer to a produce or read to whoever asked.
Records go to and come from files in a scratch directory.

One JVM serves many producers, readers and members, each on a thread of its own
(a join blocks the Java consumer's poll, so members never share a thread); the
adapter starts it on first use and keeps it until :meth:`JavaClient.close`
(the end of the test session), which insists that it closes every member and
exits 0. Its events are numbered in the one order they were printed in
(``seq``), so the callbacks of different members can be compared in time
exactly. A member is a thread, not a process: it cannot be SIGKILLed alone.

The producer keeps the Java client's defaults (idempotent, acks=all); readers
assign partitions and read from the beginning; group members use the classic
protocol (``group.protocol=classic``).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO

from interop_tests.clients.adapter import (
    Capability,
    ClientAdapter,
    Counts,
    Edge,
    MemberConfig,
    Start,
    TopicAlreadyExists,
)
from interop_tests.group_driver import MemberEvents, parse_event
from interop_tests.jvm_jars import JVM_DIR, KAFKA_CLIENTS_3, KAFKA_CLIENTS_4, classpath, java
from interop_tests.support import Got, Sample, got_from_json

SOURCE = JVM_DIR / "clients" / "JavaClients.java"
START_TIMEOUT_S = 60.0  # compiling the source and starting the JVM, on a loaded machine
REPLY_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 60.0
STDERR_TAIL_CHARS = 4000

Settings = Mapping[str, object]


def _word(data: bytes | None) -> str:
    return "-" if data is None else base64.b64encode(data).decode()


def record_line(sample: Sample) -> str:
    """One record for the ``produce`` command: tab separated, bytes in base64, ``-`` for null."""
    fields = [
        str(sample.partition),
        "-" if sample.timestamp is None else str(sample.timestamp),
        _word(sample.key),
        _word(sample.value),
    ]
    fields += [f"{_word(name.encode())}:{_word(value)}" for name, value in sample.headers]
    return "\t".join(fields)


def _settings_words(settings: Settings) -> list[str]:
    words = []
    for key, value in settings.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if not key or any(c.isspace() for c in key + text) or "=" in key:
            raise ValueError(f"a setting the command line cannot carry: {key}={text}")
        words.append(f"{key}={text}")
    return words


class JavaClients:
    """One JVM running ``JavaClients.java`` over one jar set."""

    def __init__(self, jar_set: str, work_dir: Path) -> None:
        self.jar_set = jar_set
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = work_dir / "java.stderr"
        self._stderr: IO[bytes] = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [
                java(),
                "-XX:TieredStopAtLevel=1",  # quicker to start, fast enough for a test
                # JAVA_CLIENTS_LOG_LEVEL=info (or debug) shows the client's log, for diagnosis
                f"-Dorg.slf4j.simpleLogger.defaultLogLevel={os.environ.get('JAVA_CLIENTS_LOG_LEVEL', 'warn')}",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-cp",
                classpath(jar_set),
                str(SOURCE),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=work_dir,
        )
        self._lock = threading.Condition()
        self._members: dict[str, JavaMember] = {}
        self._replies: dict[str, dict] = {}
        self.stray: list[dict] = []  # events that name neither a member nor a request
        self._ids = itertools.count()
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"java-{jar_set}")
        self._reader.start()

    # -- the process

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            event = parse_event(raw)
            member = self._members.get(event.get("member", ""))
            if member is not None:
                member.add(event)
                continue
            with self._lock:
                if event.get("id") is not None:
                    self._replies[event["id"]] = event
                else:
                    self.stray.append(event)
                self._lock.notify_all()
        with self._lock:
            self._lock.notify_all()
        for member in list(self._members.values()):
            member.ended()

    def send(self, words: Iterable[str]) -> None:
        line = " ".join(words)
        assert "\n" not in line
        if not self.alive:
            raise AssertionError(
                f"the JVM has exited ({self.process.poll()})\n{self.stderr_text()}"
            )
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def stderr_text(self, limit: int = STDERR_TAIL_CHARS) -> str:
        data = self.stderr_path.read_bytes() if self.stderr_path.exists() else b""
        return data[-limit:].decode(errors="replace")

    def close(self) -> None:
        """End of stdin: the JVM closes every member left and must exit 0."""
        try:
            if self.alive and self.process.stdin is not None:
                self.process.stdin.close()
            code = self.process.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"the JVM did not exit within {CLOSE_TIMEOUT_S} s\n{self.stderr_text()}"
            ) from None
        finally:
            self._reader.join(10)
            self._stderr.close()
        assert code == 0, f"the JVM exited with code {code}\n{self.stderr_text()}"

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()
        self._stderr.close()

    # -- requests

    def _request(self, command: str, *words: str) -> dict:
        request_id = f"{command}-{next(self._ids)}"
        self.send([command, request_id, *words])
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        with self._lock:
            while request_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive:
                    why = (
                        f"no answer within {REPLY_TIMEOUT_S} s" if self.alive else "the JVM exited"
                    )
                    raise AssertionError(f"{command}: {why}\n{self.stderr_text()}")
                self._lock.wait(min(left, 1.0))
            reply = self._replies.pop(request_id)
        if reply["type"] == "error":
            raise AssertionError(f"{command} failed in the JVM:\n{reply['error']}")
        return reply

    def produce(self, topic: str, samples: Sequence[Sample], settings: Settings) -> dict:
        """Sends the samples with one KafkaProducer: ``acks``, the acknowledgement
        [partition, offset] of each, in send order (null for a failed send), and ``errors``."""
        path = self.work_dir / f"produce-{next(self._ids)}.records"
        path.write_text("".join(record_line(s) + "\n" for s in samples))
        try:
            return self._request("produce", topic, str(path), *_settings_words(settings))
        finally:
            path.unlink()

    def create_topic(self, topic: str, partitions: int, settings: Settings) -> str | None:
        """Admin createTopics: None, or the exception's name (``TopicExistsException``)."""
        reply = self._request("create", topic, str(partitions), *_settings_words(settings))
        return reply["error"]

    def describe_topic(self, topic: str, settings: Settings) -> list[list[int]] | None:
        """Admin describeTopics: [partition, leader id] of each partition, or None."""
        return self._request("describe", topic, *_settings_words(settings))["partitions"]

    def topics(self, settings: Settings) -> list[str]:
        return self._request("topics", *_settings_words(settings))["topics"]

    def read(self, topic: str, counts: Counts, settings: Settings) -> list[Got]:
        """From the beginning of each partition until ``counts[p]`` records of it, or its end
        offset for None (no group)."""
        path = self.work_dir / f"read-{next(self._ids)}.jsonl"
        spec = ",".join(f"{p}={'end' if n is None else n}" for p, n in sorted(counts.items()))
        try:
            self._request("read", topic, spec, str(path), *_settings_words(settings))
            return [got_from_json(json.loads(line)) for line in path.read_text().splitlines()]
        finally:
            path.unlink(missing_ok=True)

    def member(
        self, name: str, topic: str, settings: Settings, *, commit: str = "batch"
    ) -> JavaMember:
        """A group member subscribed to ``topic``; ``commit``: ``batch`` or ``none``."""
        assert commit in ("batch", "none")
        with self._lock:
            assert name not in self._members, f"a member named {name} exists in this JVM"
            member = JavaMember(name, self)
            self._members[name] = member
        self.send(["consumer", name, topic, commit, *_settings_words(settings)])
        return member


class JavaMember(MemberEvents):
    """A KafkaConsumer on a thread of the JVM, seen through the events it prints."""

    def __init__(self, name: str, clients: JavaClients) -> None:
        super().__init__(name)
        self.clients = clients

    @property
    def alive(self) -> bool:
        return self.clients.alive and not self.of_type("error")

    @property
    def closed(self) -> bool:
        return bool(self.of_type("closed", "error"))

    def abandon(self) -> None:
        if self.clients.alive and not self.closed:
            self.clients.send(["close", self.name])

    def commit(self, offsets: dict[int, int]) -> None:
        """commitSync of exactly these offsets, from the member's polling thread."""
        pairs = ",".join(f"{p}={o}" for p, o in sorted(offsets.items()))
        self.clients.send(["commit", self.name, pairs])

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """KafkaConsumer.close(), and insist that it closed cleanly."""
        if not self.closed:
            self.clients.send(["close", self.name])
        deadline = time.monotonic() + timeout_s
        while not self.closed:
            assert self.clients.alive and time.monotonic() < deadline, (
                f"{self.name} did not close within {timeout_s} s\n{self.describe()}"
            )
            time.sleep(0.05)
        assert self.of_type("closed") and not self.of_type("error"), (
            f"{self.name} did not close cleanly\n{self.describe()}"
        )

    def describe(self) -> str:
        return (
            f"--- member {self.name} (Java, {self.clients.jar_set}): {self.mark()} events, "
            f"changes {self.changes()}, errors {self.errors()[:3]}\n"
            f"JVM stderr tail:\n{self.clients.stderr_text(2000)}"
        )


# -- the adapters

ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
MISSING_TOPIC_WAIT_MS = 3000


class JavaClient(ClientAdapter):
    """kafka-clients of one jar set, in a JVM started on first use."""

    capabilities = frozenset(
        {
            Capability.HEADERS,
            Capability.READS_HEADERS,
            Capability.TIMESTAMPS,
            Capability.READS_TIMESTAMPS,
            Capability.NULL_KEYS,
            Capability.ACKNOWLEDGES,
            Capability.ACKS,
            Capability.IDEMPOTENCE,
            Capability.METADATA,
            Capability.ADMIN,
            Capability.GROUPS,
            Capability.COOPERATIVE,
            Capability.STATIC_MEMBERSHIP,
        }
    )
    idempotent_by_default = True
    missing_topic_error = r"TimeoutException: Topic \S+ not present in metadata"

    def __init__(self, jar_set: str, version: str, cross_codec: str) -> None:
        self.jar_set = jar_set
        self.name = f"java-{version}"
        self.cross_codec = cross_codec
        self._jvm: JavaClients | None = None
        self._members = itertools.count()

    @property
    def jvm(self) -> JavaClients:
        """The JVM, started now if it is not running."""
        if self._jvm is None:
            work_dir = Path(tempfile.mkdtemp(prefix=f"wirekafka-{self.name}-"))
            self._jvm = JavaClients(self.jar_set, work_dir)
        return self._jvm

    def close(self) -> None:
        """Close every member the JVM still runs and insist that it exits 0, having printed
        nothing that names neither a member nor a request."""
        jvm, self._jvm = self._jvm, None
        if jvm is None:
            return
        try:
            assert jvm.stray == [], f"the JVM reported {jvm.stray[:3]}\n{jvm.stderr_text()}"
            jvm.close()
        finally:
            jvm.kill()
        shutil.rmtree(jvm.work_dir, ignore_errors=True)  # kept when something went wrong

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[tuple[int, int]]:
        settings: dict[str, object] = {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "acks": acks,
        }
        if idempotent is not None:
            settings["enable.idempotence"] = idempotent
        reply = self.jvm.produce(topic, samples, settings)
        errors = reply["errors"]
        assert errors == [], f"{len(errors)} sends failed: {errors[:3]}"
        assert None not in reply["acks"]
        return [(p, o) for p, o in reply["acks"]]

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        assert all(s == Edge.EARLIEST for s in (starts or {}).values()), (
            f"{self.name} reads from the beginning"
        )
        return self.jvm.read(topic, counts, {"bootstrap.servers": bootstrap})

    def topics(self, bootstrap: str) -> set[str]:
        return set(self.jvm.topics({"bootstrap.servers": bootstrap}))

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        described = self.jvm.describe_topic(topic, {"bootstrap.servers": bootstrap})
        return None if described is None else {p: leader for p, leader in described}

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        settings = {"bootstrap.servers": bootstrap, "max.block.ms": MISSING_TOPIC_WAIT_MS}
        reply = self.jvm.produce(topic, [Sample(0, None, b"value")], settings)
        assert reply["acks"] == [None], f"a record produced to {topic} was acknowledged: {reply}"
        (error,) = reply["errors"]
        return error

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        error = self.jvm.create_topic(topic, partitions, {"bootstrap.servers": bootstrap})
        if error == "TopicExistsException":
            raise TopicAlreadyExists(topic)
        assert error is None, error

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> JavaMember:
        """A member on a thread of the JVM; ``name`` is made unique for the JVM."""
        unique = f"{name}-{next(self._members)}"  # the JVM's members' names are its own
        settings: dict[str, object] = {
            "bootstrap.servers": config.bootstrap,
            "group.id": config.group,
            "group.protocol": "classic",
            "client.id": unique,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": config.session_timeout_ms,
            "heartbeat.interval.ms": config.heartbeat_interval_ms,
            "max.poll.interval.ms": config.max_poll_interval_ms,
            "partition.assignment.strategy": ASSIGNORS[config.assignment or self.eager_assignment],
        }
        if config.group_instance_id is not None:
            settings["group.instance.id"] = config.group_instance_id
        settings.update(config.settings)
        return self.jvm.member(unique, config.topic, settings, commit=config.commit)


JAVA_39 = JavaClient(KAFKA_CLIENTS_3, "3.9", cross_codec="gzip")
JAVA_4 = JavaClient(KAFKA_CLIENTS_4, "4.4", cross_codec="snappy")
ADAPTERS = (JAVA_39, JAVA_4)
