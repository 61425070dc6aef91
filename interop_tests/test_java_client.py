"""The Java client, kafka-clients 3.9 and 4.x, producing and consuming in groups.

Each jar set (``interop_tests/jvm_jars.py``) runs in one JVM for the whole
module (``interop_tests/java_clients.py``), with producers, readers and group
members on threads of their own. Group members use the classic protocol
(``group.protocol=classic``), a 6 s session and a 1 s heartbeat, and the
broker ``group.initial.rebalance.delay.ms=0``.

* Producing: the Java Admin client creates the topic and describes it; the
  default producer (idempotent, ``acks=all``) with each codec, and ``acks`` 0,
  1 and all without idempotence, sends records with null keys, binary values,
  headers (repeated and empty ones) and their own timestamps to given
  partitions. kafka-python and the Java consumer read them back identical byte
  for byte, at offsets 0, 1, 2... per partition; the acknowledged offsets are
  those (-1 with ``acks=0``); the batches on disk carry the codec, and a
  producer id exactly when the producer was idempotent.
* A group of three, eager (RangeAssignor) or cooperative-sticky: members join
  one after another while records are produced, and one leaves. After each
  rebalance every partition has one owner; replaying every member's callbacks
  in the one order the JVM printed them, no partition is ever held by two
  members at once; each member commits what it returned after each poll and
  what it had not committed yet when a partition is revoked, so every record is
  returned exactly once. Range hands out pairs of partitions; a cooperative
  member that stays never gains a partition when another joins, and gives up
  only what moves.
* Static membership: a member (a follower, or the group's leader) closed and
  started again with the same ``group.instance.id`` within the session gets
  its partitions back, and the others see no rebalance, then or once the old
  session would have expired; though the restarted member's subscription
  metadata differs from its predecessor's (it carries the generation). A
  restarted leader still leads (JoinGroup v9's SkipAssignment, KIP-814): when
  a topic that only a follower subscribes to appears, the leader rebalances.
* Manual commits: ``commitSync`` with explicit offsets, then the broker is
  stopped (or SIGKILLed) and started on the same data; the next member starts
  each partition exactly at the committed offset.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import pytest

from interop_tests import test_kafka_python
from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.group_driver import MemberEvents, wait_until
from interop_tests.java_clients import JavaClients, JavaMember
from interop_tests.jvm_jars import KAFKA_CLIENTS_3, KAFKA_CLIENTS_4
from interop_tests.support import (
    CODECS,
    PARTITIONS,
    Sample,
    assert_acknowledged_in_order,
    assert_same_records,
    codec_id,
    counts_of,
    make_samples,
)
from interop_tests.test_groups import (
    GROUP_SETTINGS,
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    TIMEOUT_S,
    BackgroundProducer,
    assert_in_order,
    assert_keys_match,
    assert_no_errors,
    consumed,
    create_topic,
    duplicates,
    group_name,
    produce,
    start_group_broker,
    wait_balanced,
    wait_consumed,
)
from interop_tests.test_groups import PARTITIONS as GROUP_PARTITIONS
from interop_tests.test_groups_offsets import check_resume_after_restart
from interop_tests.test_groups_static import check_restart_within_session
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record_batch import HEADER_BYTES, BatchHeader, read_batch_header
from wirekafka.storage.files import segment_path

RECORDS = 1000
RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"
COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


@pytest.fixture(scope="module", params=[KAFKA_CLIENTS_3, KAFKA_CLIENTS_4], ids=["3.9", "4.4"])
def java(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JavaClients]:
    """One JVM per jar set for the module; at the end it must close every member and exit 0."""
    clients = JavaClients(request.param, tmp_path_factory.mktemp(f"java-{request.param}"))
    try:
        yield clients
        assert clients.stray == [], f"the JVM reported {clients.stray[:3]}\n{clients.stderr_text()}"
        clients.close()
    finally:
        clients.kill()


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


_member_names = itertools.count()

StartJavaMember = Callable[..., JavaMember]


@pytest.fixture
def java_members(java: JavaClients) -> Iterator[StartJavaMember]:
    """``java_members(name, bootstrap, topic, group, commit="batch", settings={...})`` starts a
    member in the module's JVM; whatever a test leaves open is closed at teardown."""
    started: list[JavaMember] = []

    def start(
        name: str,
        bootstrap: str,
        topic: str,
        group: str,
        *,
        commit: str = "batch",
        settings: dict[str, object] | None = None,
    ) -> JavaMember:
        unique = f"{name}-{next(_member_names)}"  # names are the JVM's, for the whole module
        member = java.member(
            unique,
            topic,
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "classic",
                "client.id": unique,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                "max.poll.interval.ms": 20_000,
                "partition.assignment.strategy": RANGE,
                **(settings or {}),
            },
            commit=commit,
        )
        started.append(member)
        return member

    try:
        yield start
    finally:
        for member in started:
            if java.alive and not member.closed:
                java.send(["close", member.name])


# -- producing


def create_with_admin(java: JavaClients, broker: Broker, topic: str) -> None:
    """The Java Admin client creates the topic and describes it: every partition led by broker 0."""
    described = java.create_topic(topic, PARTITIONS, {"bootstrap.servers": broker.bootstrap})
    assert sorted(described) == [[p, 0] for p in range(PARTITIONS)]


def stored_batches(broker: Broker, topic: str, partition: int) -> list[BatchHeader]:
    """The batch headers of a partition's first segment, as the broker wrote them."""
    data = segment_path(broker.data_dir / f"{topic}-{partition}", 0, ".log").read_bytes()
    headers, position = [], 0
    # The active segment is grown ahead of its appends: it ends in zeros.
    while position + HEADER_BYTES <= len(data) and any(data[position + 8 : position + 12]):
        header = read_batch_header(data, position)
        headers.append(header)
        position += header.size_bytes
    return headers


def read_back(java: JavaClients, broker: Broker, topic: str, samples: list[Sample]) -> None:
    """kafka-python and the Java consumer read exactly the samples, at offsets 0, 1, 2..."""
    with test_kafka_python.consumer_for(broker.bootstrap) as consumer:
        got = test_kafka_python.read_all(consumer, topic, counts_of(samples))
    assert_same_records(samples, got, timestamps=True, what="kafka-python")
    got = java.read(topic, PARTITIONS, {"bootstrap.servers": broker.bootstrap})
    assert_same_records(samples, got, timestamps=True, what="the Java consumer")


def assert_stored(
    broker: Broker, topic: str, codec: CompressionType, *, idempotent: bool, records: int
) -> None:
    batches = [b for p in range(PARTITIONS) for b in stored_batches(broker, topic, p)]
    assert sum(b.record_count for b in batches) == records
    assert {b.compression for b in batches} == {codec}
    if idempotent:
        assert all(b.producer_id >= 0 and b.base_sequence >= 0 for b in batches), batches[:3]
        assert len({(b.producer_id, b.producer_epoch) for b in batches}) == 1
    else:
        assert all(b.producer_id == -1 for b in batches), batches[:3]


@pytest.mark.parametrize("codec", CODECS, ids=codec_id)
def test_default_producer_with_each_codec(
    java: JavaClients,
    group_broker: Broker,
    topic_name: Callable[[str], str],
    codec: str | None,
) -> None:
    topic = topic_name()
    create_with_admin(java, group_broker, topic)
    samples = make_samples(RECORDS, f"java-{codec_id(codec)}")
    acks = java.produce(
        topic,
        samples,
        {"bootstrap.servers": group_broker.bootstrap, "compression.type": codec_id(codec)},
    )
    assert_acknowledged_in_order(samples, acks)
    read_back(java, group_broker, topic, samples)
    stored_codec = CompressionType[codec_id(codec).upper()]
    assert_stored(group_broker, topic, stored_codec, idempotent=True, records=RECORDS)


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_producer_acks(
    java: JavaClients, group_broker: Broker, topic_name: Callable[[str], str], acks: str
) -> None:
    topic = topic_name()
    create_with_admin(java, group_broker, topic)
    samples = make_samples(RECORDS, f"java-acks-{acks}")
    settings = {
        "bootstrap.servers": group_broker.bootstrap,
        "acks": acks,
        "enable.idempotence": False,
        "compression.type": "lz4",
    }
    acknowledged = java.produce(topic, samples, settings)
    if acks == "0":  # no answer, so no offsets
        assert acknowledged == [(s.partition, -1) for s in samples]
    else:
        assert_acknowledged_in_order(samples, acknowledged)
    read_back(java, group_broker, topic, samples)
    assert_stored(group_broker, topic, CompressionType.LZ4, idempotent=False, records=RECORDS)


# -- groups


def assert_never_shared(members: Sequence[MemberEvents]) -> None:
    """Replays every member's callbacks in the order the JVM printed them: no partition is
    held by two members at once."""
    events = sorted(
        ((e["seq"], m.name, e) for m in members for e in m.of_type("assigned", "revoked", "lost")),
        key=lambda item: item[0],
    )
    owner: dict[int, str] = {}
    for seq, name, event in events:
        for p in [p for p, o in owner.items() if o == name and p not in event["owned"]]:
            del owner[p]
        for p in event["owned"]:
            assert owner.setdefault(p, name) == name, (
                f"partition {p} assigned to {name} (event {seq}) while {owner[p]} held it\n"
                + "\n".join(m.describe() for m in members)
            )


def partitions_in(events: list[dict]) -> set[int]:
    return {p for e in events for p in e["partitions"]}


@pytest.mark.parametrize("assignor", [RANGE, COOPERATIVE], ids=["range", "cooperative-sticky"])
def test_three_members_share_partitions_exactly_once(
    java_members: StartJavaMember,
    group_broker: Broker,
    topic_name: Callable[[str], str],
    assignor: str,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = topic_name()
    create_topic(bootstrap, topic)
    group = group_name("java")
    settings: dict[str, object] = {"partition.assignment.strategy": assignor}
    producer = BackgroundProducer(bootstrap, topic, 1800, 300, "java-a").start()

    members: list[JavaMember] = []
    for i in range(3):
        held = [m.owned for m in members]
        marks = [m.mark() for m in members]
        members.append(java_members(f"member-{i}", bootstrap, topic, group, settings=settings))
        wait_balanced(members, GROUP_PARTITIONS, what=f"{i + 1} members to share the partitions")
        if assignor == COOPERATIVE:
            for m, had, mark in zip(members, held, marks, strict=False):
                assert partitions_in(m.of_type("assigned", since=mark)) == set(), m.describe()
                assert m.owned <= had, m.describe()
                assert partitions_in(m.of_type("revoked", since=mark)) == had - m.owned
    if assignor == RANGE:
        assert sorted(sorted(m.owned) for m in members) == [[0, 1], [2, 3], [4, 5]]
    produced = producer.join()
    wait_consumed(members, produced)

    stayers, leaver = members[:2], members[2]
    leaver.close()
    wait_balanced(stayers, GROUP_PARTITIONS, what="the two others to take over")
    after = produce(bootstrap, topic, 600, "java-b", first=1800)
    wait_consumed(stayers, after)

    assert_never_shared(members)
    assert_no_errors(members)
    everything = produced + after
    assert_keys_match(everything, consumed(members))
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    assert {(p, o) for p, o, _ in consumed(members)} == {(p, o) for p, o, _ in everything}
    for m in members:
        assert_in_order(m)
    for m in stayers:
        m.close()


@pytest.mark.parametrize("who", ["follower", "leader"])
def test_static_member_restarted_within_session_keeps_partitions(
    java_members: StartJavaMember,
    group_broker: Broker,
    topic_name: Callable[[str], str],
    who: str,
) -> None:
    bootstrap = group_broker.bootstrap
    topic = topic_name()
    create_topic(bootstrap, topic)
    group = group_name("java-static")

    def start(name: str, instance: int) -> MemberEvents:
        settings = {"group.instance.id": f"instance-{instance}"}
        return java_members(name, bootstrap, topic, group, settings=settings)

    # Closing is all a thread can do: a static member sends no LeaveGroup.
    members = check_restart_within_session(
        bootstrap, topic, start, lambda member: member.close(), who, "static"
    )
    assert_never_shared(members)


@pytest.mark.parametrize("restart", ["clean", "crash"])
def test_resume_from_committed_offsets_after_broker_restart(
    java_members: StartJavaMember,
    broker_factory: BrokerFactory,
    topic_name: Callable[[str], str],
    restart: str,
) -> None:
    def start(name: str, bootstrap: str, topic: str, group: str) -> MemberEvents:
        return java_members(name, bootstrap, topic, group, commit="none")

    broker = broker_factory(settings=GROUP_SETTINGS)
    group = group_name("java-offsets")
    check_resume_after_restart(broker, topic_name(), group, start, "java", restart)


def test_restarted_static_leader_still_watches_the_groups_topics(
    java_members: StartJavaMember, group_broker: Broker, topic_name: Callable[[str], str]
) -> None:
    """KIP-814: a static leader restarted into a Stable group is told it leads (JoinGroup v9
    SkipAssignment), so it goes on watching every topic the group subscribes to. A follower
    subscribed to a topic that does not exist yet is given its partitions once it appears
    only because the leader sees it and rejoins: the Java client's followers rejoin for a
    change of their own subscription, not of a topic's metadata."""
    bootstrap = group_broker.bootstrap
    led, later = topic_name("led"), topic_name("later")
    create_topic(bootstrap, led, PARTITIONS)
    group = group_name("java-static-leader")
    settings = {"allow.auto.create.topics": False, "metadata.max.age.ms": 1000}

    def start(name: str, topic: str, instance: int) -> JavaMember:
        instance_settings = {**settings, "group.instance.id": f"instance-{instance}"}
        return java_members(name, bootstrap, topic, group, settings=instance_settings)

    leader = start("leader", led, 0)
    wait_balanced([leader], PARTITIONS, what="the leader to hold its topic")
    follower = start("follower", later, 1)
    wait_until(
        [leader, follower], lambda: bool(follower.of_type("assigned")), TIMEOUT_S, "the follower"
    )
    assert follower.owned == frozenset()
    held = leader.owned
    leader.close()
    leader = start("leader-again", led, 0)
    wait_until(
        [leader, follower], lambda: leader.owned == held, TIMEOUT_S, "the leader's partitions"
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
