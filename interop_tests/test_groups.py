"""Consumer groups with every client that joins them: balance, leave, crash.

Each member is started through its client's adapter (``interop_tests/groups.py``):
a process of its own, or a thread of the Java client's JVM. It prints its
rebalance callbacks and every record it returns, and commits what it returned
after each poll (``commit: batch``).

* Three members join one after another while records are produced, with the
  client's eager assignor and, where it has one, cooperative-sticky. After each
  join the group settles: each of the 6 partitions has one owner, the members
  hold equal shares, and the broker's DescribeGroups agrees; under
  cooperative-sticky a join only takes partitions away from the members that
  hold them, which keep the rest, and the newcomer gets exactly those. Then one
  member closes: the other two take over its partitions in one rebalance (no
  partition lost, none revoked under cooperative-sticky) and the session is
  longer than any wait, so only its LeaveGroup can have started it. Every record
  produced is returned once, with the key produced at its offset, each
  partition's offsets only go up within a member, no partition is held by two
  members at once (replaying the callbacks in the order they were printed), and
  the group's committed offsets end at each partition's end.
* A member SIGKILLed (clients whose members are processes) sends no LeaveGroup:
  its partitions move only once its 6 s session has expired, in one
  rebalance; records are then returned twice only where the dead member had
  read past its last commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.clients.adapter import Capability, ClientAdapter, MemberConfig
from interop_tests.clients.registry import REFERENCE, with_capabilities
from interop_tests.group_driver import wait_until
from interop_tests.groups import (
    HEARTBEAT_INTERVAL_MS,
    PARTITIONS,
    SESSION_TIMEOUT_MS,
    TIMEOUT_S,
    BackgroundProducer,
    Members,
    assert_in_order,
    assert_keys_match,
    assert_never_shared,
    assert_no_errors,
    assert_only_moved_revoked,
    assert_read_once,
    consumed,
    create_topic,
    duplicates,
    group_name,
    last_change,
    members,  # noqa: F401  (fixture)
    owners,
    partitions_in,
    produce,
    start_group_broker,
    wait_consumed,
    wait_settled,
)
from interop_tests.scenarios import clients, release_clients  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("release_clients")

# Longer than any wait of the test: a handover that happens at all was started by LeaveGroup.
LEAVE_SESSION_TIMEOUT_MS = 90_000

Topics = Callable[[str], str]


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


def assignments() -> list:
    return [
        pytest.param(c, a, id=f"{c.name}-{a}")
        for c in with_capabilities(Capability.GROUPS)
        for a in ["eager", "cooperative-sticky"]
        if a == "eager" or c.supports(Capability.COOPERATIVE)
    ]


@pytest.mark.parametrize(("client", "assignment"), assignments())
def test_members_join_share_and_leave(
    group_broker: Broker,
    members: Members,  # noqa: F811
    topic_name: Topics,
    client: ClientAdapter,
    assignment: str,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = topic_name()
    create_topic(bootstrap, topic)
    group = group_name(f"{client.name}-{assignment}")
    cooperative = assignment == "cooperative-sticky"
    config = MemberConfig(
        bootstrap,
        topic,
        group,
        session_timeout_ms=LEAVE_SESSION_TIMEOUT_MS,
        max_poll_interval_ms=LEAVE_SESSION_TIMEOUT_MS,  # librdkafka wants it >= the session
        assignment=assignment if cooperative else None,
    )
    # A client that is not told before its partitions move cannot commit what it returned
    # first, and may return records twice across a rebalance: its records come once the
    # group has settled.
    producer = BackgroundProducer(bootstrap, topic, 300, f"{client.name}-a")
    if client.revocation_callback:
        producer.start()

    joined = []
    for i in range(3):
        held, marks = owners(joined), [m.mark() for m in joined]
        newcomer = members(client, f"{client.name}-{i}", config)
        joined.append(newcomer)
        wait_settled(group_broker, group, topic, joined, what=f"{i + 1} members to settle")
        if cooperative and i > 0:
            revoked = assert_only_moved_revoked(joined[:-1], held, marks)
            assert revoked == set(newcomer.owned), (
                f"revoked {sorted(revoked)}, the newcomer got {sorted(newcomer.owned)}"
            )
    if not cooperative and client.eager_assignment == "range":
        assert sorted(sorted(o) for o in owners(joined)) == [[0, 1], [2, 3], [4, 5]]
    stable = owners(joined)
    if client.revocation_callback:
        before = producer.stop()
    else:
        before = produce(bootstrap, topic, 600, f"{client.name}-a")
    wait_consumed(joined, before)
    assert owners(joined) == stable, "the assignment changed after the group settled"

    stayers, leaver = joined[:2], joined[2]
    left_behind = leaver.owned
    marks = [m.mark() for m in stayers]
    leaver.close()
    wait_settled(group_broker, group, topic, stayers, what="the two others to take over")
    for m, mark in zip(stayers, marks, strict=True):
        assert m.of_type("lost", since=mark) == [], m.describe()
        if cooperative:
            assert partitions_in(m.of_type("revoked", since=mark)) == set(), m.describe()
    if not cooperative:
        # The first rebalance after the leave hands the two others every partition. Under
        # load kafka-python 3.0's leader now and then sends JoinGroup again right after it
        # (a JoinGroup of its own, as the broker's log shows, not a rebalance the broker
        # started), and Kafka rebalances when the leader rejoins: such a rebalance must give
        # each member what it had.
        first = [m.of_type("assigned", since=mark) for m, mark in zip(stayers, marks, strict=True)]
        assert all(first), [m.describe() for m in stayers]
        assert partitions_in([events[0] for events in first]) == set(range(PARTITIONS))
        for m, events in zip(stayers, first, strict=True):
            assert all(e["partitions"] == events[0]["partitions"] for e in events), m.describe()
    if cooperative:
        gained = partitions_in(
            [e for m, k in zip(stayers, marks, strict=True) for e in m.of_type("assigned", since=k)]
        )
        assert gained == set(left_behind)
    assert left_behind and left_behind <= frozenset().union(*owners(stayers))

    after = produce(bootstrap, topic, 600, f"{client.name}-b")
    wait_consumed(stayers, after)
    assert_no_errors(joined)
    assert_read_once(before + after, joined)
    for m in joined:
        assert_in_order(m)
    if client.revocation_callback:
        assert_never_shared(joined)
    for m in stayers:
        m.close()
    ends = {p: 1 + max(o for q, o, _ in before + after if q == p) for p in range(PARTITIONS)}
    assert REFERENCE.committed(bootstrap, group, topic, range(PARTITIONS)) == ends


@pytest.mark.parametrize("client", clients(Capability.GROUPS, Capability.MEMBER_PROCESS))
def test_killed_member_partitions_move_after_session_timeout(
    group_broker: Broker,
    members: Members,  # noqa: F811
    topic_name: Topics,
    client: ClientAdapter,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = topic_name()
    create_topic(bootstrap, topic)
    group = group_name(client.name)
    config = MemberConfig(bootstrap, topic, group, session_timeout_ms=SESSION_TIMEOUT_MS)
    joined = [members(client, f"{client.name}-{i}", config) for i in range(3)]
    wait_settled(group_broker, group, topic, joined)
    producer = BackgroundProducer(bootstrap, topic, 150, client.name).start()
    survivors, victim = joined[:2], joined[2]
    wait_until(joined, lambda: len(victim.records()) >= 50, TIMEOUT_S, "the victim to read")
    victim_partitions = victim.owned
    marks = [m.mark() for m in survivors]

    killed_at = time.time()
    victim.kill()
    wait_settled(
        group_broker, group, topic, survivors, what="the survivors to take the dead member's"
    )
    took = last_change(survivors) - killed_at
    session_s, heartbeat_s = SESSION_TIMEOUT_MS / 1000, HEARTBEAT_INTERVAL_MS / 1000
    assert took >= session_s - heartbeat_s - 1.0, (
        f"partitions moved {took:.1f} s after the kill, before the session could expire"
    )
    for m, mark in zip(survivors, marks, strict=True):
        assert len(m.of_type("assigned", since=mark)) == 1, m.describe()

    produced = producer.stop()
    wait_consumed(joined, produced)
    assert_no_errors(survivors)
    assert_keys_match(produced, consumed(joined))
    # Duplicates only where the dead member had read past its last commit. (A client not told
    # before its partitions move restarts every partition from its last commit after a
    # rebalance, so a survivor too may return again what it returned once.)
    victim_read = {(p, o) for p, o, _ in victim.records()}
    repeated = duplicates(joined)
    if client.revocation_callback:
        unexpected = [
            po for po in repeated if po not in victim_read or po[0] not in victim_partitions
        ]
        assert not unexpected, (
            f"records returned twice that the dead member never had: {unexpected[:10]}"
        )
    assert all(n == 2 for n in repeated.values()), repeated
    committed_by_victim: dict[int, int] = {}
    for event in victim.of_type("committed"):
        for p, o in event["offsets"].items():
            committed_by_victim[int(p)] = max(committed_by_victim.get(int(p), 0), o)
    for p, o in repeated:
        assert p not in victim_partitions or o >= committed_by_victim.get(p, 0), (
            f"partition {p} offset {o} came again though the dead member had committed past it"
        )
    for m in survivors:
        m.close()
