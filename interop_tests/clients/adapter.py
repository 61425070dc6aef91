"""The one interface the scenario tests drive every Kafka client through.

A :class:`ClientAdapter` creates topics, produces records and reads them back
(from the beginning, an offset, the end or a timestamp), answers offset
queries, reads a group's committed offsets and starts group members, each as
far as its client can: what it can is the set of :class:`Capability` it
declares, and a scenario runs only with the adapters that declare what it
needs (``interop_tests/clients/registry.py``). A method of a capability an
adapter does not declare raises :class:`Unsupported`.

Every call is whole: it opens what it needs (a producer, a consumer, a
process), does its work within a deadline and closes it again, so a client
that runs in a process of its own (kcat, kafka-python 2.0.2, the Go drivers)
or in a JVM shared by the session (the Java client) answers like one that
runs in the test's interpreter.

Records go in as :class:`~interop_tests.support.Sample` and come back as
:class:`~interop_tests.support.Got`; codecs are named ``none``, ``gzip``,
``snappy``, ``lz4``, ``zstd``; group assignors ``range``, ``roundrobin``,
``cooperative-sticky``.

Standard library only (see the package's docstring).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from interop_tests.support import PARTITIONS, Got, Sample, make_samples

if TYPE_CHECKING:
    from interop_tests.group_driver import MemberEvents

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")


class Capability(enum.Enum):
    """What a client can do, as far as its adapter drives it."""

    HEADERS = "writes a list of headers of its own on each record"
    READS_HEADERS = "reads each record's headers"
    TIMESTAMPS = "writes the timestamps it is given"
    READS_TIMESTAMPS = "reads each record's timestamp"
    NULL_KEYS = "writes records with a null key"
    ACKNOWLEDGES = "tells the partition and offset each produced record was given"
    ACKS = "produces with acks 0, 1 and all, not idempotently"
    IDEMPOTENCE = "produces idempotently (InitProducerId, sequence numbers) when asked"
    METADATA = (
        "lists topics, describes one (partition leaders), and reports a produce to a "
        "topic that does not exist as an error"
    )
    ADMIN = "creates topics (CreateTopics)"
    SEEK = "reads from an offset, and from the end"
    SEEK_BY_TIME = "finds offsets by timestamp (ListOffsets v1+) and reads from one"
    WATERMARKS = "asks a partition's first and end offsets"
    COMMITTED_OFFSETS = "fetches a group's committed offsets (OffsetFetch)"
    GROUPS = "joins a consumer group as a member of the group driver"
    COOPERATIVE = "cooperative-sticky assignment (KIP-429)"
    STATIC_MEMBERSHIP = "static members (group.instance.id, KIP-345)"
    MEMBER_PROCESS = "each group member is a process of its own, which a test can SIGKILL"
    KEEPS_GENERATION_THROUGH_RESTART = (
        "a member keeps its generation (no rebalance) while the coordinator restarts"
    )


class Unsupported(NotImplementedError):
    """An adapter was asked for something it did not declare."""


class TopicAlreadyExists(Exception):
    """CreateTopics answered TOPIC_ALREADY_EXISTS."""


# -- where a read starts


class Edge(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"


EARLIEST = Edge.EARLIEST
LATEST = Edge.LATEST


@dataclass(frozen=True, slots=True)
class Offset:
    offset: int


@dataclass(frozen=True, slots=True)
class AtTime:
    """The first record whose timestamp is at or after ``timestamp_ms`` (ListOffsets)."""

    timestamp_ms: int


Start = Edge | Offset | AtTime

# counts[p]: how many records to read from partition p; UNTIL_END: up to the end offset
# the partition had when the read began.
UNTIL_END = None
Counts = Mapping[int, int | None]


def start_to_json(start: Start) -> list:
    if isinstance(start, Edge):
        return [start.value]
    if isinstance(start, Offset):
        return ["offset", start.offset]
    return ["time", start.timestamp_ms]


def start_from_json(data: list) -> Start:
    if data[0] == "offset":
        return Offset(int(data[1]))
    if data[0] == "time":
        return AtTime(int(data[1]))
    return Edge(data[0])


Ack = tuple[int, int]  # (partition, offset); offset -1 with acks=0


# -- group members


@dataclass(frozen=True)
class MemberConfig:
    """A group member's settings. ``commit``: ``batch`` commits what each poll returned,
    ``none`` only what the test asks for. ``assignment``: None for the adapter's eager
    default. ``settings``: client configuration keys of the one client it is for."""

    bootstrap: str
    topic: str
    group: str
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    max_poll_interval_ms: int = 20_000
    commit: str = "batch"
    assignment: str | None = None
    group_instance_id: str | None = None
    settings: Mapping[str, object] = field(default_factory=dict)

    def driver_config(self, name: str, adapter: ClientAdapter) -> dict:
        """The JSON object a member process takes (``group_driver``'s, the Go drivers')."""
        return {
            "name": name,
            "client": adapter.name,
            "bootstrap": self.bootstrap,
            "topic": self.topic,
            "group": self.group,
            "session_timeout_ms": self.session_timeout_ms,
            "heartbeat_interval_ms": self.heartbeat_interval_ms,
            "max_poll_interval_ms": self.max_poll_interval_ms,
            "commit": self.commit,
            "assignment": self.assignment or adapter.eager_assignment,
            "group_instance_id": self.group_instance_id,
            "settings": dict(self.settings),
        }


# -- the adapter


class ClientAdapter(ABC):
    """One Kafka client, as far as the scenario tests drive it.

    Subclasses set the class attributes and implement :meth:`produce` and
    :meth:`read`, and the methods of each capability they declare.
    """

    name: str
    capabilities: frozenset[Capability]
    codecs: tuple[str, ...] = CODECS  # what it produces with
    read_codecs: frozenset[str] = frozenset(CODECS)  # what it reads
    cross_codec: str = "none"  # what it writes for every other client to read
    idempotent_by_default: bool = False
    # A client may send a batch uncompressed where the codec would not make it smaller.
    compresses_every_batch: bool = True
    # Describing a topic creates it (Metadata v0-v3 cannot ask not to).
    describe_creates_topics: bool = False
    # Its producer is one per partition (kcat: a process each), so are its producer ids.
    producer_per_partition: bool = False
    # What the client's error says when it produces to a topic that does not exist (regex).
    missing_topic_error: str = ""
    # The assignor of an eager member when a scenario does not name one.
    eager_assignment: str = "range"
    # Whether offsets_for_times tells the timestamp of the record it found.
    finds_timestamps: bool = True
    # A header whose value is empty comes back with a null value.
    reads_empty_header_as_null: bool = False
    # A group member is told before partitions are taken from it (a revoke callback): it
    # prints the revocation, and commits what it returned first.
    revocation_callback: bool = True

    def supports(self, *needed: Capability) -> bool:
        return all(c in self.capabilities for c in needed)

    def unsupported(self, capability: Capability) -> Unsupported:
        return Unsupported(f"{self.name} does not declare {capability.name}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def make_samples(
        self, count: int, tag: str, *, partitions: int = PARTITIONS, t0: int | None = None
    ) -> list[Sample]:
        """Records this client can write: headers, null keys and timestamps if it can."""
        return make_samples(
            count,
            tag,
            partitions=partitions,
            headers=Capability.HEADERS in self.capabilities,
            null_keys=Capability.NULL_KEYS in self.capabilities,
            timestamps=Capability.TIMESTAMPS in self.capabilities,
            t0=t0,
        )

    def reader_for(self, codec: str) -> ClientAdapter:
        """The adapter that reads back what this one wrote with ``codec``: itself, or a
        sibling when it cannot read its own (pykafka's 0.10 protocol and LZ4)."""
        assert codec in self.read_codecs, f"{self.name} does not read {codec}"
        return self

    def close(self) -> None:  # noqa: B027  (most adapters keep nothing)
        """Release what the adapter keeps between calls (a JVM); it starts again on use."""

    # -- producing and reading (every client)

    @abstractmethod
    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[Ack] | None:
        """Send every sample to its partition, in order, with one producer, and wait for
        each to be acknowledged. The (partition, offset) of each, in order, or None for a
        client that does not tell (no ACKNOWLEDGES). ``idempotent``: None for the client's
        default; ``acks`` other than ``all`` only with ACKS."""

    @abstractmethod
    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        """Read partitions ``counts`` (no group), each from its start (EARLIEST by default;
        others with SEEK, AtTime with SEEK_BY_TIME) until ``counts[p]`` records, or its
        end offset for UNTIL_END; the records in the order the client delivered them."""

    # -- METADATA

    def topics(self, bootstrap: str) -> set[str]:
        """Every topic the broker lists (without creating any)."""
        raise self.unsupported(Capability.METADATA)

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        """The topic's partitions and their leaders; None if the broker does not know it."""
        raise self.unsupported(Capability.METADATA)

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        """Produce one record to a topic that does not exist (auto-creation off); the
        client's error, which the test matches with ``missing_topic_error``. Fails if the
        record was acknowledged."""
        raise self.unsupported(Capability.METADATA)

    # -- ADMIN

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        """CreateTopics (replication factor 1); raises TopicAlreadyExists."""
        raise self.unsupported(Capability.ADMIN)

    # -- WATERMARKS, SEEK_BY_TIME, COMMITTED_OFFSETS

    def watermarks(
        self, bootstrap: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[int, int]]:
        """Each partition's (first offset, end offset)."""
        raise self.unsupported(Capability.WATERMARKS)

    def offsets_for_times(
        self, bootstrap: str, topic: str, times: Mapping[int, int]
    ) -> dict[int, tuple[int, int | None] | None]:
        """For each partition, the (offset, timestamp) of the first record at or after the
        time (timestamp None without ``finds_timestamps``); None where there is none."""
        raise self.unsupported(Capability.SEEK_BY_TIME)

    def committed(
        self, bootstrap: str, group: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, int | None]:
        """The group's committed offset of each partition; None where it has none."""
        raise self.unsupported(Capability.COMMITTED_OFFSETS)

    # -- GROUPS

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> MemberEvents:
        """A group member subscribed to ``config.topic``, printing the group driver's
        events; it polls until closed (``interop_tests/group_driver.py``)."""
        raise self.unsupported(Capability.GROUPS)
