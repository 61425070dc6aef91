"""Consumer groups with kafka-python 3, aiokafka and confluent-kafka: balance, leave, crash.

Each group member is a consumer in a process of its own
(``group_driver.py``), so it can be closed cleanly or SIGKILLed; it prints
its rebalance callbacks and every record it returns, and commits what it
returned after each poll (``commit: batch``). Members use a 6 s session
timeout and a 1 s heartbeat, so a crash is detected within seconds, and the
broker runs with ``group.initial.rebalance.delay.ms=0``.

The facts checked: once stable, each of the 6 partitions has exactly one
owner and the members hold equal shares; every produced record is returned,
with the key produced at its offset; nothing is returned twice unless a
member was killed (then only what the dead member had returned and not yet
committed may come again); a clean close hands partitions over in one
rebalance, faster than a session timeout; a killed member's partitions move
only once its session has expired.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from interop_tests.broker import Broker
from interop_tests.conftest import _Brokers
from interop_tests.group_driver import Member, MemberEvents, wait_until

CLIENTS = ["kafka-python", "aiokafka", "confluent"]
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
LEAVE_SESSION_TIMEOUT_MS = 10_000
TIMEOUT_S = 60.0
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": str(PARTITIONS),
}

Record = tuple[int, int, str]  # partition, offset, key

_groups = itertools.count()


def start_group_broker(
    tmp_path_factory: pytest.TempPathFactory, **settings: str
) -> Iterator[Broker]:
    """A module's broker with quick rebalances; it must still run, and stop cleanly, at the end."""
    brokers = _Brokers(tmp_path_factory.mktemp("groups"))
    try:
        broker = brokers(settings={**GROUP_SETTINGS, **settings})
        yield broker
        broker.assert_running()
        broker.stop()
    finally:
        brokers.close_all()


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


class Spawner:
    """Starts group members; kills whatever is left at teardown."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[Member] = []

    def __call__(
        self, name: str, client: str, bootstrap: str, topic: str, group: str, **config
    ) -> Member:
        python = config.pop("python", None) or sys.executable
        command = config.pop("command", None)
        member = Member(
            name,
            {
                "client": client,
                "bootstrap": bootstrap,
                "topic": topic,
                "group": group,
                "session_timeout_ms": SESSION_TIMEOUT_MS,
                "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
                "max_poll_interval_ms": 20_000,
                "commit": "batch",
                **config,
            },
            python=python,
            command=command,
            log_dir=self.log_dir,
        )
        self.started.append(member)
        return member

    def kill_all(self) -> None:
        for member in self.started:
            member.kill()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawner]:
    spawner = Spawner(tmp_path / "members")
    try:
        yield spawner
    finally:
        spawner.kill_all()


def group_name(tag: str) -> str:
    return f"group-{tag}-{next(_groups)}-{time.monotonic_ns()}"


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)], timeout_ms=30_000)
    finally:
        admin.close()


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
    """Produces ``count`` records at about ``rate`` per second in a thread."""

    def __init__(self, bootstrap: str, topic: str, count: int, rate: float, tag: str) -> None:
        self.bootstrap, self.topic, self.count, self.rate, self.tag = (
            bootstrap,
            topic,
            count,
            rate,
            tag,
        )
        self.records: list[Record] = []
        self.error: BaseException | None = None
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
                for i in range(self.count):
                    key = f"{self.tag}-{i:06d}"
                    future = producer.send(
                        self.topic,
                        key=key.encode(),
                        value=b"x" * (i % 50),
                        partition=i % PARTITIONS,
                    )
                    sent.append((key, future))
                    pause = started + (i + 1) / self.rate - time.monotonic()
                    if pause > 0:
                        time.sleep(pause)
                producer.flush(timeout=TIMEOUT_S)
                for key, future in sent:
                    meta = future.get(TIMEOUT_S)
                    self.records.append((meta.partition, meta.offset, key))
            finally:
                producer.close(timeout=10)
        except BaseException as exc:
            self.error = exc

    def join(self) -> list[Record]:
        self._thread.join(self.count / self.rate + TIMEOUT_S)
        assert not self._thread.is_alive(), "the producer did not finish"
        if self.error is not None:
            raise AssertionError(f"the producer failed: {self.error!r}") from self.error
        assert len(self.records) == self.count
        return self.records


# -- checks


def owners(members: Sequence[MemberEvents]) -> list[frozenset[int]]:
    return [m.owned for m in members]


def balanced(members: Sequence[MemberEvents], partitions: int = PARTITIONS) -> bool:
    owned = owners(members)
    share = partitions // len(members)
    return all(len(o) == share for o in owned) and frozenset().union(*owned) == set(
        range(partitions)
    )


def last_change(members: Sequence[MemberEvents]) -> float:
    times = [e["received"] for m in members for e in m.of_type("assigned", "revoked", "lost")]
    return max(times, default=0.0)


def wait_balanced(
    members: Sequence[MemberEvents],
    partitions: int = PARTITIONS,
    quiet_s: float = 1.5,
    what: str = "",
) -> None:
    """Until each member holds an equal share, every partition owned once, and nothing moved
    for ``quiet_s``."""
    wait_until(
        members,
        lambda: balanced(members, partitions) and time.time() - last_change(members) > quiet_s,
        TIMEOUT_S,
        what or f"{len(members)} members to share {partitions} partitions",
    )


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
            for e in m.of_type("error", "commit_error")
            if not (
                e["type"] == "commit_error"
                and any(code in e["error"] for code in REBALANCE_COMMIT_ERRORS)
            )
        ]
        assert not errors, f"{m.name}: {errors[:3]}\n{m.describe()}"


# -- tests


@pytest.mark.parametrize("client", CLIENTS)
def test_three_members_share_partitions_while_producing(
    group_broker: Broker, spawn: Spawner, topic_name: Callable[[str], str], client: str
) -> None:
    topic = topic_name(client)
    create_topic(group_broker.bootstrap, topic)
    group = group_name(client)
    producer = BackgroundProducer(group_broker.bootstrap, topic, 1800, 300, client).start()
    members = []
    for i in range(3):
        members.append(spawn(f"{client}-{i}", client, group_broker.bootstrap, topic, group))
        time.sleep(0.7)  # join one after another, while records arrive
    wait_balanced(members)
    stable = owners(members)

    produced = producer.join()
    wait_consumed(members, produced)
    assert owners(members) == stable, "the assignment changed after the group was stable"
    assert_no_errors(members)
    got = consumed(members)
    assert_keys_match(produced, got)
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    for m in members:
        assert_in_order(m)
    for m in members:
        m.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_clean_leave_hands_over_in_one_rebalance(
    group_broker: Broker, spawn: Spawner, topic_name: Callable[[str], str], client: str
) -> None:
    topic = topic_name(client)
    create_topic(group_broker.bootstrap, topic)
    group = group_name(client)
    before = produce(group_broker.bootstrap, topic, 600, f"{client}-a")
    # A longer session here: the earliest a silent member could expire (its last heartbeat
    # plus the session timeout) must be well apart from a LeaveGroup handover (one
    # heartbeat, then a rebalance).
    members = [
        spawn(
            f"{client}-{i}",
            client,
            group_broker.bootstrap,
            topic,
            group,
            session_timeout_ms=LEAVE_SESSION_TIMEOUT_MS,
        )
        for i in range(3)
    ]
    wait_balanced(members)
    wait_consumed(members, before)
    stayers, leaver = members[:2], members[2]
    leaver_partitions = leaver.owned
    marks = [m.mark() for m in stayers]

    left_at = time.time()
    leaver.close()
    wait_balanced(stayers, quiet_s=0.0, what="the two others to take over")
    took = last_change(stayers) - left_at
    for m, mark in zip(stayers, marks, strict=True):
        assigned = m.of_type("assigned", since=mark)
        assert len(assigned) == 1, (
            f"{m.name} went through {len(assigned)} assignments\n{m.describe()}"
        )
        assert m.of_type("lost", since=mark) == []
    earliest_expiry = (LEAVE_SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS) / 1000
    assert took < earliest_expiry - 3, (
        f"the handover took {took:.1f} s: nearly a session timeout, as if LeaveGroup were ignored"
    )
    assert leaver_partitions and leaver_partitions <= frozenset().union(*owners(stayers))

    after = produce(group_broker.bootstrap, topic, 600, f"{client}-b", first=600)
    wait_consumed(stayers, after)
    time.sleep(0.5)
    assert_no_errors(members)
    everything = before + after
    assert_keys_match(everything, consumed(members))
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    assert {(p, o) for p, o, _ in consumed(members)} == {(p, o) for p, o, _ in everything}
    for m in stayers:
        m.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_killed_member_partitions_move_after_session_timeout(
    group_broker: Broker, spawn: Spawner, topic_name: Callable[[str], str], client: str
) -> None:
    topic = topic_name(client)
    create_topic(group_broker.bootstrap, topic)
    group = group_name(client)
    members = [
        spawn(f"{client}-{i}", client, group_broker.bootstrap, topic, group) for i in range(3)
    ]
    wait_balanced(members)
    producer = BackgroundProducer(group_broker.bootstrap, topic, 1500, 150, client).start()
    survivors, victim = members[:2], members[2]
    wait_until(members, lambda: len(victim.records()) >= 50, TIMEOUT_S, "the victim to read")
    victim_partitions = victim.owned
    marks = [m.mark() for m in survivors]

    killed_at = time.time()
    victim.kill()
    wait_balanced(survivors, quiet_s=0.0, what="the survivors to take the dead member's partitions")
    moved_at = last_change(survivors)
    took = moved_at - killed_at
    session_s = SESSION_TIMEOUT_MS / 1000
    heartbeat_s = HEARTBEAT_INTERVAL_MS / 1000
    assert took >= session_s - heartbeat_s - 1.0, (
        f"partitions moved {took:.1f} s after the kill, before the session could expire"
    )
    assert took <= session_s + 10, f"partitions moved only {took:.1f} s after the kill"
    for m, mark in zip(survivors, marks, strict=True):
        assert len(m.of_type("assigned", since=mark)) == 1, m.describe()

    produced = producer.join()
    wait_consumed([*survivors, victim], produced)
    assert_no_errors(survivors)
    got = consumed(members)
    assert_keys_match(produced, got)
    # Duplicates only where the dead member had read past its last commit.
    victim_read = {(p, o) for p, o, _ in victim.records()}
    repeated = duplicates(members)
    unexpected = [po for po in repeated if po not in victim_read or po[0] not in victim_partitions]
    assert not unexpected, (
        f"records returned twice that the dead member never had: {unexpected[:10]}"
    )
    assert all(n == 2 for n in repeated.values()), repeated
    committed_by_victim: dict[int, int] = {}
    for event in victim.of_type("committed"):
        for p, o in event["offsets"].items():
            committed_by_victim[int(p)] = max(committed_by_victim.get(int(p), 0), o)
    for p, o in repeated:
        assert o >= committed_by_victim.get(p, 0), (
            f"partition {p} offset {o} came again though the dead member had committed past it"
        )
    for m in survivors:
        m.close()
