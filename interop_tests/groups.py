"""What the consumer-group scenarios share: their broker, members, producers and checks.

Members are started through a client adapter (``adapter.start_member``): a
process of its own, or a thread of the Java client's JVM; either way a
:class:`~interop_tests.group_driver.MemberEvents` of what it printed. They use a
6 s session and a 1 s heartbeat unless a scenario says otherwise, and the
broker runs with ``group.initial.rebalance.delay.ms=0``. Records for them are
produced by kafka-python (keys ``tag-i``, round robin over the partitions) and
tracked as (partition, offset, key).

A group has settled when each member holds an equal share, every partition
has one owner, and the broker's DescribeGroups says Stable with each member
(by client id) assigned exactly what it says it holds.
"""

from __future__ import annotations

import contextlib
import itertools
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from kafka import KafkaProducer

from interop_tests.broker import Broker, Brokers
from interop_tests.clients.adapter import ClientAdapter, MemberConfig
from interop_tests.clients.registry import REFERENCE
from interop_tests.group_driver import MemberEvents, wait_until
from interop_tests.protocol_client import ProtocolClient
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.messages.describe_groups import DescribeGroupsRequest

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
TIMEOUT_S = 60.0
QUIET_S = 1.5  # how long a settled group must go without a change (wait_stays_settled)
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": str(PARTITIONS),
}

Record = tuple[int, int, str | None]  # partition, offset, key

_groups = itertools.count()


def start_group_broker(
    tmp_path_factory: pytest.TempPathFactory, **settings: str
) -> Iterator[Broker]:
    """A module's broker with quick rebalances; it must still run, and stop cleanly, at the end."""
    brokers = Brokers(tmp_path_factory.mktemp("groups"))
    try:
        broker = brokers(settings={**GROUP_SETTINGS, **settings})
        yield broker
        broker.assert_running()
        broker.stop()
    finally:
        brokers.close_all()


def group_name(tag: str) -> str:
    return f"group-{tag}-{next(_groups)}-{time.monotonic_ns()}"


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    REFERENCE.create_topic(bootstrap, topic, partitions)


# -- members


class Members:
    """Starts group members through their adapters; ends whatever is left at teardown."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[MemberEvents] = []

    def __call__(self, client: ClientAdapter, name: str, config: MemberConfig) -> MemberEvents:
        member = client.start_member(name, config, self.log_dir)
        self.started.append(member)
        return member

    def abandon_all(self) -> None:
        for member in self.started:
            member.abandon()


@pytest.fixture
def members(tmp_path: Path) -> Iterator[Members]:
    started = Members(tmp_path / "members")
    try:
        yield started
    finally:
        started.abandon_all()


# -- producing


def produce(
    bootstrap: str,
    topic: str,
    count: int,
    tag: str,
    *,
    partitions: int = PARTITIONS,
    first: int = 0,
) -> list[Record]:
    """``count`` records, round robin over the partitions, keys ``tag-i``: (partition, offset, key)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=30_000)
    try:
        sent = []
        for i in range(first, first + count):
            key = f"{tag}-{i:06d}"
            sent.append(
                (
                    key,
                    producer.send(
                        topic, key=key.encode(), value=b"v" * (i % 50), partition=i % partitions
                    ),
                )
            )
        producer.flush(timeout=TIMEOUT_S)
        return [(f.get(TIMEOUT_S).partition, f.get(TIMEOUT_S).offset, key) for key, f in sent]
    finally:
        producer.close(timeout=10)


class BackgroundProducer:
    """Produces about ``rate`` records a second in a thread, until :meth:`stop`."""

    def __init__(self, bootstrap: str, topic: str, rate: float, tag: str) -> None:
        self.bootstrap, self.topic, self.rate, self.tag = bootstrap, topic, rate, tag
        self.records: list[Record] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="producer")

    def start(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
            try:
                started = time.monotonic()
                sent = []
                for i in itertools.count():
                    key = f"{self.tag}-{i:06d}"
                    future = producer.send(
                        self.topic,
                        key=key.encode(),
                        value=b"x" * (i % 50),
                        partition=i % PARTITIONS,
                    )
                    sent.append((key, future))
                    # Paced, not waiting for anything: the next record's slot.
                    if self._stop.wait(max(0.0, started + (i + 1) / self.rate - time.monotonic())):
                        break
                producer.flush(timeout=TIMEOUT_S)
                for key, future in sent:
                    meta = future.get(TIMEOUT_S)
                    self.records.append((meta.partition, meta.offset, key))
            finally:
                producer.close(timeout=10)
        except BaseException as exc:
            self.error = exc

    def stop(self) -> list[Record]:
        """Stop producing; every record produced, once all are acknowledged."""
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        assert not self._thread.is_alive(), "the producer did not finish"
        if self.error is not None:
            raise AssertionError(f"the producer failed: {self.error!r}") from self.error
        assert self.records, "the producer produced nothing"
        return self.records


# -- what the broker says


def _assigned_partitions(assignment: bytes, topic: str) -> set[int]:
    """The partitions of ``topic`` in a consumer protocol assignment (versions 0-3 start
    alike: int16 version, then [topic, [partition]])."""
    if not assignment:
        return set()
    position = 2
    (topics,) = struct.unpack_from(">i", assignment, position)
    position += 4
    found: set[int] = set()
    for _ in range(topics):
        (size,) = struct.unpack_from(">h", assignment, position)
        name = assignment[position + 2 : position + 2 + size].decode()
        position += 2 + size
        (count,) = struct.unpack_from(">i", assignment, position)
        position += 4
        partitions = struct.unpack_from(f">{count}i", assignment, position)
        position += 4 * count
        if name == topic:
            found |= set(partitions)
    return found


class GroupView:
    """DescribeGroups of one group, over one connection."""

    def __init__(self, broker: Broker, group: str, topic: str) -> None:
        self.client = ProtocolClient(*broker.address)
        self.group, self.topic = group, topic

    def close(self) -> None:
        self.client.close()

    def describe(self) -> tuple[str, dict[str, set[int]]]:
        """The group's state and each member's assignment, by client id."""
        response = self.client.request(
            ApiKey.DESCRIBE_GROUPS, 1, DescribeGroupsRequest(groups=[self.group])
        )
        (described,) = response.groups
        assert described.error_code == 0, described
        return described.group_state, {
            m.client_id: _assigned_partitions(bytes(m.member_assignment), self.topic)
            for m in described.members
        }


@contextlib.contextmanager
def group_view(broker: Broker, group: str, topic: str) -> Iterator[GroupView]:
    view = GroupView(broker, group, topic)
    try:
        yield view
    finally:
        view.close()


def owners(members: Sequence[MemberEvents]) -> list[frozenset[int]]:
    return [m.owned for m in members]


def balanced(members: Sequence[MemberEvents], partitions: int = PARTITIONS) -> bool:
    owned = owners(members)
    share = partitions // len(members)
    return all(len(o) == share for o in owned) and frozenset().union(*owned) == set(
        range(partitions)
    )


def wait_settled(
    broker: Broker,
    group: str,
    topic: str,
    members: Sequence[MemberEvents],
    partitions: int = PARTITIONS,
    what: str = "",
) -> None:
    """Until the members hold equal shares of every partition, and the broker says the
    group is Stable with each member assigned exactly what it holds."""
    with group_view(broker, group, topic) as view:

        def settled() -> bool:
            if not balanced(members, partitions):
                return False
            state, assigned = view.describe()
            return state == "Stable" and assigned == {m.name: set(m.owned) for m in members}

        wait_until(
            members,
            settled,
            TIMEOUT_S,
            what or f"{len(members)} members to share {partitions} partitions",
        )


def last_change(members: Sequence[MemberEvents]) -> float:
    times = [e["received"] for m in members for e in m.of_type("assigned", "revoked", "lost")]
    return max(times, default=0.0)


def wait_stays_settled(
    broker: Broker,
    group: str,
    topic: str,
    members: Sequence[MemberEvents],
    quiet_s: float = QUIET_S,
) -> None:
    """Until the group is settled (:func:`wait_settled`) and no member's partitions
    have changed for ``quiet_s``. A member may rejoin of its own accord just after a
    generation settles (kafka-python 3.0's did, 6 ms and ~0.3 s after, in two failures
    seen); a test of what a later event does to the group must not start inside it."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        wait_settled(broker, group, topic, members)
        changed = last_change(members)
        time.sleep(max(0.0, changed + quiet_s - time.time()))
        if last_change(members) == changed:
            return
        assert time.monotonic() < deadline, f"{group} kept rebalancing for {TIMEOUT_S} s"


# -- what the members read


def consumed(members: Sequence[MemberEvents]) -> list[Record]:
    return [r for m in members for r in m.records()]


def wait_consumed(members: Sequence[MemberEvents], produced: list[Record], what: str = "") -> None:
    wanted = {(p, o) for p, o, _ in produced}

    def done() -> bool:
        return wanted <= {(p, o) for p, o, _ in consumed(members)}

    wait_until(members, done, TIMEOUT_S, what or f"all {len(wanted)} records to be consumed")


def assert_keys_match(produced: list[Record], got: list[Record]) -> None:
    keys = {(p, o): k for p, o, k in produced}
    wrong = [(p, o, k, keys.get((p, o))) for p, o, k in got if keys.get((p, o)) != k]
    assert not wrong, f"{len(wrong)} records with another key than produced, e.g. {wrong[:5]}"


def assert_in_order(member: MemberEvents) -> None:
    """Within one member, each partition's offsets only go up (unless it was reassigned)."""
    last: dict[int, int] = {}
    for event in member.snapshot():
        if event["type"] in ("revoked", "lost"):
            for p in event["partitions"]:
                last.pop(p, None)
        if event["type"] == "records":
            for p, o, _ in event["records"]:
                assert o > last.get(p, -1), f"{member.name}: partition {p} went back to {o}"
                last[p] = o


def duplicates(members: Sequence[MemberEvents]) -> dict[tuple[int, int], int]:
    counts = Counter((p, o) for p, o, _ in consumed(members))
    return {po: n for po, n in counts.items() if n > 1}


def assert_read_once(produced: list[Record], members: Sequence[MemberEvents]) -> None:
    """Every record produced was returned, with its key, once, and nothing else."""
    got = consumed(members)
    assert_keys_match(produced, got)
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    assert {(p, o) for p, o, _ in got} == {(p, o) for p, o, _ in produced}


def partitions_in(events: list[dict]) -> set[int]:
    return {p for e in events for p in e["partitions"]}


def assert_only_moved_revoked(
    old: Sequence[MemberEvents], held_before: list[frozenset[int]], marks: list[int]
) -> set[int]:
    """Since ``marks``, each old member was assigned nothing and revoked exactly the partitions
    it held before (``held_before``) and no longer holds; the partitions revoked."""
    revoked_total: set[int] = set()
    for m, held, mark in zip(old, held_before, marks, strict=True):
        revoked = m.of_type("revoked", since=mark)
        assert m.of_type("lost", since=mark) == [], m.describe()
        assert partitions_in(m.of_type("assigned", since=mark)) == set(), (
            f"{m.name} was assigned partitions under cooperative rebalancing\n{m.describe()}"
        )
        assert m.owned <= held, f"{m.name} holds partitions it did not hold before\n{m.describe()}"
        assert partitions_in(revoked) == set(held - m.owned), (
            f"{m.name} revoked {sorted(partitions_in(revoked))}, but only "
            f"{sorted(held - m.owned)} moved\n{m.describe()}"
        )
        revoked_total |= partitions_in(revoked)
    return revoked_total


def assert_never_shared(members: Sequence[MemberEvents]) -> None:
    """Replays every member's callbacks in the order they were printed (the JVM numbers its
    events; processes share the machine's clock, and a revocation is printed before the
    rejoin that lets another member be given the partition): no partition is held by two
    members at once."""

    def order(item: tuple[str, dict]) -> tuple[float, int]:
        _, event = item
        return (event.get("seq", event["t"]), 0 if event["type"] != "assigned" else 1)

    changes = ("assigned", "revoked", "lost", "closed", "killed")
    events = sorted(((m.name, e) for m in members for e in m.of_type(*changes)), key=order)
    owner: dict[int, str] = {}
    for name, event in events:
        still = event.get("owned", [])  # a member closed or killed holds nothing
        for p in [p for p, o in owner.items() if o == name and p not in still]:
            del owner[p]
        if event["type"] != "assigned":
            continue
        for p in event["owned"]:
            assert owner.setdefault(p, name) == name, (
                f"partition {p} assigned to {name} ({event}) while {owner[p]} held it\n"
                + "\n".join(m.describe() for m in members)
            )


# A commit sent with the generation that a rebalance has just replaced is refused,
# by Kafka as by this broker (requests on one connection are served in order, so a
# commit queued behind the member's own JoinGroup arrives after the new generation
# began); the client carries on and commits again with the next generation. The
# Java client refuses a commit itself while its member rejoins.
REBALANCE_COMMIT_ERRORS = (
    "ILLEGAL_GENERATION",
    "REBALANCE_IN_PROGRESS",
    "RebalanceInProgressException",
)


def assert_no_errors(members: Sequence[MemberEvents]) -> None:
    for m in members:
        errors = [
            e
            for e in m.of_type("error", "commit_error", "client_error")
            if not (
                e["type"] == "commit_error"
                and any(code in e["error"] for code in REBALANCE_COMMIT_ERRORS)
            )
        ]
        assert not errors, f"{m.name}: {errors[:3]}\n{m.describe()}"


def all_committed(member: MemberEvents) -> bool:
    """Every record the member returned is covered by one of its commits."""
    read: dict[int, int] = {}
    for p, o, _ in member.records():
        read[p] = max(read.get(p, 0), o + 1)
    committed: dict[int, int] = {}
    for event in member.of_type("committed"):
        for p, o in event["offsets"].items():
            committed[int(p)] = max(committed.get(int(p), 0), o)
    return all(committed.get(p, 0) >= o for p, o in read.items())


def wait_for_commit(member: MemberEvents, offsets: dict[int, int]) -> None:
    """Have the member commit exactly ``offsets``, and wait until it did."""
    member.commit(offsets)
    want = {str(p): o for p, o in offsets.items()}
    wait_until(
        [member],
        lambda: (
            any(e["offsets"] == want for e in member.of_type("committed"))
            or bool(member.of_type("commit_error"))
        ),
        TIMEOUT_S,
        f"{member.name}'s commit of {offsets}",
    )
    assert member.of_type("commit_error") == [], member.describe()
