"""A group's members keep their partitions through a broker restart.

Kafka stores each generation of a group, members and assignments included, in
``__consumer_offsets`` and loads it back Stable when a coordinator starts, so
members that go on heartbeating carry on without a rebalance. Two members of
kafka-python 3 or confluent-kafka share a 6-partition topic; the broker is
stopped cleanly or SIGKILLed and started again on the same data and port;
records produced afterwards must reach the same owners with no partition
revoked, assigned or lost on the way, each record once.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from interop_tests.conftest import BrokerFactory
from interop_tests.test_groups import (
    GROUP_SETTINGS,
    Spawner,
    assert_keys_match,
    consumed,
    create_topic,
    duplicates,
    group_name,
    produce,
    spawn,  # noqa: F401  (fixture)
    wait_balanced,
    wait_consumed,
)

CLIENTS = ["kafka-python", "confluent"]
# Long enough that the members' sessions outlast the restart and their reconnection.
SESSION_TIMEOUT_MS = 30_000


@pytest.mark.parametrize("restart", ["clean", "crash"])
@pytest.mark.parametrize("client", CLIENTS)
def test_members_keep_their_partitions_through_a_restart(
    broker_factory: BrokerFactory,
    spawn: Spawner,  # noqa: F811
    topic_name: Callable[[str], str],
    client: str,
    restart: str,
) -> None:
    broker = broker_factory(settings=GROUP_SETTINGS)
    topic = topic_name(client)
    create_topic(broker.bootstrap, topic)
    group = group_name(f"restart-{client}")
    before = produce(broker.bootstrap, topic, 600, f"{client}-a")
    members = [
        spawn(
            f"{client}-{i}",
            client,
            broker.bootstrap,
            topic,
            group,
            assignment="range",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            max_poll_interval_ms=SESSION_TIMEOUT_MS,  # librdkafka wants it >= the session
        )
        for i in range(2)
    ]
    wait_balanced(members)
    wait_consumed(members, before)
    held = [m.owned for m in members]
    marks = [m.mark() for m in members]

    broker.restart(crash=restart == "crash")
    after = produce(broker.bootstrap, topic, 600, f"{client}-b", first=600)
    wait_consumed(members, after, "the records produced after the restart")

    for m, owned, mark in zip(members, held, marks, strict=True):
        changes = m.of_type("assigned", "revoked", "lost", since=mark)
        assert changes == [], f"{m.name} went through a rebalance\n{m.describe()}"
        got = {p for p, _, _ in m.records(since=mark)}
        assert got <= owned, f"{m.name} read partitions {sorted(got - owned)} it did not hold"
    assert_keys_match(before + after, consumed(members))
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    for m in members:
        m.close()
    broker.assert_running()
