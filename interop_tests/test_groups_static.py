"""Static membership (KIP-345, ``group.instance.id``) with confluent-kafka and kafka-python 3.

Three static members share a 6-partition topic. One is stopped and started
again with the same instance id well within the 6 s session timeout: a
follower closed cleanly (a static member sends no LeaveGroup), or the group's
leader SIGKILLed. It must get back exactly the partitions it had, and the
other two must see no rebalance at all (no revoke, no assign), neither then
nor once the old member id's session would have run out. As in Kafka, a
static leader that rejoins a Stable group is not asked for an assignment: below
JoinGroup v9 it is named the old leader id, from v9 it leads with
SkipAssignment (KIP-814). ``check_restart_within_session`` serves the Java
client's test too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.group_driver import Member, MemberEvents, wait_until
from interop_tests.test_groups import (
    SESSION_TIMEOUT_MS,
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


# A static member of the group: (name, n) with ``group.instance.id`` "instance-<n>".
StartStatic = Callable[[str, int], MemberEvents]


def check_restart_within_session(
    bootstrap: str,
    topic: str,
    start: StartStatic,
    stop: Callable[[MemberEvents], None],
    who: str,
    tag: str,
) -> list[MemberEvents]:
    """Three static members share the 6-partition ``topic``; ``who`` (``leader`` or
    ``follower``) is stopped and started again with its instance id: it gets exactly its
    partitions back within the session, the others see no rebalance, then or after the
    old session would have expired, and every record is read once. Returns every member
    (closed)."""
    before = produce(bootstrap, topic, 300, f"{tag}-a")
    # The group's leader is its first member, as long as it stays: start the member to
    # restart first to make it the leader, or last to make it a follower.
    if who == "leader":
        restarted = start(f"{tag}-2", 2)
        wait_until([restarted], lambda: len(restarted.owned) == 6, TIMEOUT_S, "the first member")
        others = [start(f"{tag}-0", 0), start(f"{tag}-1", 1)]
    else:
        others = [start(f"{tag}-0", 0), start(f"{tag}-1", 1)]
        wait_balanced(others, what="the first two members")
        restarted = start(f"{tag}-2", 2)
    members = [*others, restarted]
    wait_balanced(members)
    wait_consumed(members, before)
    wait_until(members, lambda: all_committed(restarted), TIMEOUT_S, "the last commits")
    held = restarted.owned
    held_by_others = [m.owned for m in others]
    marks = [m.mark() for m in others]

    stopped_at = time.time()
    stop(restarted)
    again = start(f"{tag}-2-again", 2)
    wait_until(
        [*others, again],
        lambda: bool(again.of_type("assigned")),
        TIMEOUT_S,
        "the restarted member's assignment",
    )
    back_after = again.of_type("assigned")[0]["received"] - stopped_at
    assert again.owned == held, (
        f"the restarted member got {sorted(again.owned)}, it had {sorted(held)}\n{again.describe()}"
    )
    assert back_after < SESSION_TIMEOUT_MS / 1000, f"the restarted member waited {back_after:.1f} s"

    # Past the time the old member id's session would have expired: still nothing moves.
    wait_until(
        [*others, again],
        lambda: time.time() - stopped_at > SESSION_TIMEOUT_MS / 1000 + 2,
        TIMEOUT_S,
        "a session timeout to pass",
    )
    for m, mark, owned in zip(others, marks, held_by_others, strict=True):
        changes = [
            {k: e[k] for k in ("type", "partitions", "received")}
            for e in m.of_type("assigned", "revoked", "lost", since=mark)
        ]
        assert changes == [], (
            f"{m.name} went through a rebalance {[round(c['received'] - stopped_at, 2) for c in changes]} s "
            f"after the restart: {changes}\n{m.describe()}"
        )
        assert m.owned == owned
    assert len(again.of_type("assigned")) == 1, again.describe()
    # (kafka-python calls on_partitions_revoked with nothing before its first join)
    assert [e for e in again.of_type("revoked", "lost") if e["partitions"]] == [], again.describe()

    after = produce(bootstrap, topic, 300, f"{tag}-b", first=300)
    everyone = [*members, again]
    wait_consumed([*others, again], after)
    assert_no_errors(everyone)
    assert_keys_match(before + after, consumed(everyone))
    assert not duplicates(everyone), f"records returned twice: {sorted(duplicates(everyone))[:10]}"
    assert {p for p, _, _ in again.records()} == set(held)
    for m in [*others, again]:
        m.close()
    return everyone


@pytest.mark.parametrize(
    ("who", "stop"),
    [("follower", "close"), ("leader", "kill")],
    ids=["follower-closed", "leader-killed"],
)
@pytest.mark.parametrize("client", CLIENTS)
def test_restart_within_session_keeps_partitions_without_rebalance(
    group_broker: Broker,
    spawn: Spawner,  # noqa: F811
    topic_name: Callable[[str], str],
    client: str,
    who: str,
    stop: str,
) -> None:
    topic = topic_name(client)
    create_topic(group_broker.bootstrap, topic)
    group = group_name(f"static-{client}")
    bootstrap = group_broker.bootstrap

    def start(name: str, instance: int) -> MemberEvents:
        return spawn(
            name, client, bootstrap, topic, group, group_instance_id=f"instance-{instance}"
        )

    def stop_member(member: MemberEvents) -> None:
        assert isinstance(member, Member)
        if stop == "close":
            member.close()
        else:
            member.kill()

    check_restart_within_session(bootstrap, topic, start, stop_member, who, client)
