"""Cooperative-sticky rebalancing (KIP-429) with confluent-kafka and kafka-python 3.

confluent-kafka uses ``partition.assignment.strategy=cooperative-sticky``;
kafka-python 3 its ``CooperativeStickyAssignor``. Two members share a
6-partition topic, 3 partitions each; a third joins. Only the partitions that
move to the newcomer may be revoked, in the revoke callbacks of their
previous owners, and nothing is ever assigned to the two old members: the
broker must let members of a Stable group rejoin and tell the others through
REBALANCE_IN_PROGRESS on Heartbeat, over two rebalances.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.group_driver import Member, wait_until
from interop_tests.test_groups import (
    TIMEOUT_S,
    Spawner,
    assert_keys_match,
    assert_no_errors,
    consumed,
    create_topic,
    duplicates,
    group_name,
    produce,
    spawn,  # noqa: F401  (fixture)
    start_group_broker,
    wait_balanced,
    wait_consumed,
)

CLIENTS = ["confluent", "kafka-python"]


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


def partitions_in(events: list[dict]) -> set[int]:
    return {p for e in events for p in e["partitions"]}


def assert_only_moved_revoked(
    old: list[Member], held_before: list[frozenset[int]], marks: list[int]
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


def commit_positions(members: list[Member]) -> None:
    """Each member commits where it stands in the partitions it holds, and this waits
    for the commits: a batch commit refused during the first rebalances is not
    retried, and the newcomer would read those records again."""
    wanted: list[tuple[Member, dict[str, int]]] = []
    for m in members:
        positions: dict[int, int] = {}
        for p, o, _ in m.records():
            if p in m.owned:
                positions[p] = max(positions.get(p, 0), o + 1)
        if positions:  # a member that read nothing of what it holds has nothing to commit
            m.commit(positions)
            wanted.append((m, {str(p): o for p, o in positions.items()}))

    def done() -> bool:
        return all(any(e["offsets"] == want for e in m.of_type("committed")) for m, want in wanted)

    wait_until(members, done, TIMEOUT_S, "each member's commit of its positions")


@pytest.mark.parametrize("client", CLIENTS)
def test_new_member_takes_only_what_moves(
    group_broker: Broker,
    spawn: Spawner,  # noqa: F811
    topic_name: Callable[[str], str],
    client: str,
) -> None:
    topic = topic_name(client)
    create_topic(group_broker.bootstrap, topic)
    group = group_name(f"coop-{client}")
    config = {"assignment": "cooperative-sticky"}
    before = produce(group_broker.bootstrap, topic, 600, f"{client}-a")
    old = [
        spawn(f"{client}-{i}", client, group_broker.bootstrap, topic, group, **config)
        for i in range(2)
    ]
    wait_balanced(old)
    wait_consumed(old, before)
    commit_positions(old)
    held_before = [m.owned for m in old]
    marks = [m.mark() for m in old]

    newcomer = spawn(f"{client}-new", client, group_broker.bootstrap, topic, group, **config)
    members = [*old, newcomer]
    wait_balanced(members, quiet_s=2.0, what="three members holding 2 partitions each")

    revoked_total = assert_only_moved_revoked(old, held_before, marks)
    assert len(revoked_total) == 2
    assert revoked_total == set(newcomer.owned)
    assert partitions_in(newcomer.of_type("revoked", "lost")) == set()

    after = produce(group_broker.bootstrap, topic, 600, f"{client}-b", first=600)
    wait_consumed(members, after)
    assert_no_errors(members)
    assert_keys_match(before + after, consumed(members))
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    for m in members:
        m.close()
