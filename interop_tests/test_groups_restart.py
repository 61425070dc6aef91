"""A group's members keep their partitions through a broker restart.

Kafka stores each generation of a group, members and assignments included, in
``__consumer_offsets`` and loads it back Stable when a coordinator starts, so
members that go on heartbeating carry on without a rebalance. Two members of
each client that keeps its generation while the coordinator restarts
(``KEEPS_GENERATION_THROUGH_RESTART``) share a 6-partition topic; the broker is
stopped cleanly or SIGKILLed and started again on the same data and port;
records produced afterwards must reach the same owners with no partition
revoked, assigned or lost on the way, each record once.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from interop_tests.clients.adapter import Capability, ClientAdapter, MemberConfig
from interop_tests.conftest import BrokerFactory
from interop_tests.groups import (
    GROUP_SETTINGS,
    Members,
    assert_keys_match,
    consumed,
    create_topic,
    duplicates,
    group_name,
    members,  # noqa: F401  (fixture)
    produce,
    wait_consumed,
    wait_settled,
    wait_stays_settled,
)
from interop_tests.scenarios import clients, release_clients  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("release_clients")

# Long enough that the members' sessions outlast the restart and their reconnection.
SESSION_TIMEOUT_MS = 30_000


@pytest.mark.parametrize("restart", ["clean", "crash"])
@pytest.mark.parametrize("client", clients(Capability.KEEPS_GENERATION_THROUGH_RESTART))
def test_members_keep_their_partitions_through_a_restart(
    broker_factory: BrokerFactory,
    members: Members,  # noqa: F811
    topic_name: Callable[[str], str],
    client: ClientAdapter,
    restart: str,
) -> None:
    broker = broker_factory(settings=GROUP_SETTINGS)
    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    group = group_name(f"restart-{client.name}")
    before = produce(broker.bootstrap, topic, 600, f"{client.name}-a")
    config = MemberConfig(
        broker.bootstrap,
        topic,
        group,
        assignment="range",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        max_poll_interval_ms=SESSION_TIMEOUT_MS,  # librdkafka wants it >= the session
    )
    joined = [members(client, f"{client.name}-{i}", config) for i in range(2)]
    wait_settled(broker, group, topic, joined)
    wait_consumed(joined, before)
    wait_stays_settled(broker, group, topic, joined)  # not restarted inside a member's rejoin
    held = [m.owned for m in joined]
    marks = [m.mark() for m in joined]

    broker.restart(crash=restart == "crash")
    after = produce(broker.bootstrap, topic, 600, f"{client.name}-b", first=600)
    wait_consumed(joined, after, "the records produced after the restart")

    for m, owned, mark in zip(joined, held, marks, strict=True):
        changes = m.of_type("assigned", "revoked", "lost", since=mark)
        assert changes == [], f"{m.name} went through a rebalance\n{m.describe()}"
        got = {p for p, _, _ in m.records(since=mark)}
        assert got <= owned, f"{m.name} read partitions {sorted(got - owned)} it did not hold"
    assert_keys_match(before + after, consumed(joined))
    assert not duplicates(joined), f"records returned twice: {sorted(duplicates(joined))[:10]}"
    for m in joined:
        m.close()
    broker.assert_running()
