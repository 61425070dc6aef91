"""What only the Java client shows: a restarted static leader keeps watching the
group's topics (KIP-814).

The shared scenarios run the Java client, kafka-clients 3.9 and 4.x, through its
adapters (``interop_tests/clients/java.py``): round trips with every codec,
acks and topics, the cross-client matrix, and groups (eager and
cooperative-sticky, static members, committed offsets across broker restarts).

Here: a static leader restarted into a Stable group is told it leads (JoinGroup
v9 SkipAssignment), so it goes on watching every topic the group subscribes to.
A follower subscribed to a topic that does not exist yet is given its
partitions once it appears only because the leader sees it and rejoins: the
Java client's followers rejoin for a change of their own subscription, not of a
topic's metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.clients import java
from interop_tests.clients.adapter import MemberConfig
from interop_tests.group_driver import wait_until
from interop_tests.groups import (
    TIMEOUT_S,
    Members,
    assert_keys_match,
    assert_no_errors,
    consumed,
    create_topic,
    group_name,
    members,  # noqa: F401  (fixture)
    produce,
    start_group_broker,
    wait_consumed,
)
from interop_tests.scenarios import release_clients  # noqa: F401  (fixture)
from interop_tests.support import PARTITIONS

pytestmark = pytest.mark.usefixtures("release_clients")


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


@pytest.mark.parametrize("client", [pytest.param(c, id=c.name) for c in java.ADAPTERS])
def test_restarted_static_leader_still_watches_the_groups_topics(
    group_broker: Broker,
    members: Members,  # noqa: F811
    topic_name: Callable[[str], str],
    client: java.JavaClient,
) -> None:
    bootstrap = group_broker.bootstrap
    led, later = topic_name("led"), topic_name("later")
    create_topic(bootstrap, led, PARTITIONS)
    group = group_name("java-static-leader")
    settings = {"allow.auto.create.topics": False, "metadata.max.age.ms": 1000}

    def start(name: str, topic: str, instance: int) -> java.JavaMember:
        config = MemberConfig(
            bootstrap, topic, group, group_instance_id=f"instance-{instance}", settings=settings
        )
        member = members(client, name, config)
        assert isinstance(member, java.JavaMember)
        return member

    every = frozenset(range(PARTITIONS))
    leader = start("leader", led, 0)
    wait_until([leader], lambda: leader.owned == every, TIMEOUT_S, "the leader")
    follower = start("follower", later, 1)
    # The follower's assignment can come before the leader's own callbacks of that
    # rebalance (an eager leader gives everything back first): wait for both.
    wait_until(
        [leader, follower],
        lambda: bool(follower.of_type("assigned")) and len(leader.of_type("assigned")) >= 2,
        TIMEOUT_S,
        "the follower, and the leader's second assignment",
    )
    assert follower.owned == frozenset()
    assert leader.owned == every
    leader.close()
    leader = start("leader-again", led, 0)
    # Only once the restarted leader holds its partitions again has it joined, and
    # been told to watch the group's topics; a topic created before that is no change.
    wait_until(
        [leader, follower], lambda: leader.owned == every, TIMEOUT_S, "the leader's partitions"
    )

    create_topic(bootstrap, later, PARTITIONS)
    wait_until(
        [leader, follower],
        lambda: follower.owned == frozenset(range(PARTITIONS)),
        TIMEOUT_S,
        "the follower to be given the new topic's partitions (the leader's rejoin)",
    )
    produced = produce(bootstrap, later, 90, "later", partitions=PARTITIONS)
    wait_consumed([follower], produced)
    assert_keys_match(produced, consumed([follower]))
    assert_no_errors([leader, follower])
    leader.close()
    follower.close()
