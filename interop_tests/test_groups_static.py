"""Static membership (KIP-345, ``group.instance.id``), with every client that has it.

Three static members share a 6-partition topic; the first to join leads the
group. A follower is closed (a static member sends no LeaveGroup) and started
again with the same instance id, then the leader is stopped (SIGKILLed where a
member is a process of its own, closed otherwise) and started again, each well
within the 6 s session. Each gets back exactly the partitions it had, and no
other member sees a rebalance (no revoke, no assign), neither then nor once
the old member ids' sessions would have run out; every record is read once.
As in Kafka, a static leader that rejoins a Stable group is not asked for an
assignment: below JoinGroup v9 it is named the old leader id, from v9 it
leads with SkipAssignment (KIP-814; see also ``test_java_client.py``). The
restarted members' subscription metadata may differ from their predecessors'
(the Java client's carries the generation).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.clients.adapter import Capability, ClientAdapter, MemberConfig
from interop_tests.group_driver import MemberEvents, wait_until
from interop_tests.groups import (
    SESSION_TIMEOUT_MS,
    TIMEOUT_S,
    Members,
    all_committed,
    assert_keys_match,
    assert_never_shared,
    assert_no_errors,
    consumed,
    create_topic,
    duplicates,
    group_name,
    members,  # noqa: F401  (fixture)
    produce,
    start_group_broker,
    wait_consumed,
    wait_settled,
)
from interop_tests.scenarios import clients, release_clients  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("release_clients")


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


@pytest.mark.parametrize("client", clients(Capability.STATIC_MEMBERSHIP))
def test_static_members_restarted_within_session_keep_partitions(
    group_broker: Broker,
    members: Members,  # noqa: F811
    topic_name: Callable[[str], str],
    client: ClientAdapter,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = topic_name()
    create_topic(bootstrap, topic)
    group = group_name(f"static-{client.name}")

    def start(name: str, instance: int) -> MemberEvents:
        config = MemberConfig(bootstrap, topic, group, group_instance_id=f"instance-{instance}")
        return members(client, f"{client.name}-{name}", config)

    before = produce(bootstrap, topic, 300, f"{client.name}-a")
    # The group's leader is its first member, as long as it stays.
    leader = start("leader", 0)
    wait_until([leader], lambda: len(leader.owned) == 6, TIMEOUT_S, "the first member")
    follower, other = start("follower", 1), start("other", 2)
    first = [leader, follower, other]
    wait_settled(group_broker, group, topic, first)
    wait_consumed(first, before)
    wait_until(
        first, lambda: all(all_committed(m) for m in first), TIMEOUT_S, "the members' commits"
    )
    mark = other.mark()
    stopped_at = []

    def restart(member: MemberEvents, name: str, instance: int, *, kill: bool) -> MemberEvents:
        held = member.owned
        stopped_at.append(time.time())
        if kill:
            member.kill()
        else:
            member.close()
        again = start(f"{name}-again", instance)
        wait_until(
            [other, again],
            lambda: bool(again.of_type("assigned")),
            TIMEOUT_S,
            f"the restarted {name}'s assignment",
        )
        assert again.owned == held, (
            f"the restarted {name} got {sorted(again.owned)}, it had {sorted(held)}\n"
            + again.describe()
        )
        return again

    follower_again = restart(follower, "follower", 1, kill=False)
    leader_again = restart(leader, "leader", 0, kill=leader.can_be_killed)
    current = [other, follower_again, leader_again]

    # Past the time the old member ids' sessions would have expired: still nothing moves.
    wait_until(
        current,
        lambda: time.time() - stopped_at[-1] > SESSION_TIMEOUT_MS / 1000 + 2,
        TIMEOUT_S,
        "a session timeout to pass",
    )
    changes = [
        {k: e[k] for k in ("type", "partitions", "received")}
        for e in other.of_type("assigned", "revoked", "lost", since=mark)
    ]
    assert changes == [], (
        f"{other.name} went through a rebalance "
        f"{[round(c['received'] - stopped_at[0], 2) for c in changes]} s after the first "
        f"restart: {changes}\n{other.describe()}"
    )
    for again in (follower_again, leader_again):
        assert len(again.of_type("assigned")) == 1, again.describe()
        # (kafka-python calls on_partitions_revoked with nothing before its first join)
        assert [e for e in again.of_type("revoked", "lost") if e["partitions"]] == [], (
            again.describe()
        )

    after = produce(bootstrap, topic, 300, f"{client.name}-b")
    everyone = [*first, follower_again, leader_again]
    wait_consumed(current, after)
    assert_no_errors(everyone)
    assert_keys_match(before + after, consumed(everyone))
    assert not duplicates(everyone), f"records returned twice: {sorted(duplicates(everyone))[:10]}"
    for again in (follower_again, leader_again):
        assert {p for p, _, _ in again.records()} == set(again.owned)
    if client.revocation_callback:
        assert_never_shared(everyone)
    for m in current:
        m.close()
