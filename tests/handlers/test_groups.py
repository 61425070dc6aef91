"""The group APIs through the real codec: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups and
DeleteGroups, and ``__consumer_offsets`` across a restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
import trio.testing

from tests.handlers.support import BASE_TIME_MS, TestBroker, run
from wirekafka.broker.group_runtime import group_metadata
from wirekafka.groups.offsets_topic import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    partition_for_group,
)
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_groups import DeleteGroupsRequest
from wirekafka.protocol.messages.describe_groups import DescribeGroupsRequest
from wirekafka.protocol.messages.find_coordinator import FindCoordinatorRequest
from wirekafka.protocol.messages.heartbeat import HeartbeatRequest
from wirekafka.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from wirekafka.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from wirekafka.protocol.messages.list_groups import ListGroupsRequest
from wirekafka.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from wirekafka.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from wirekafka.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

OFFSETS = "__consumer_offsets"
PROPS = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"}


@pytest.fixture
def gb(tmp_path) -> Iterator[TestBroker]:
    made = TestBroker(tmp_path / "logs", PROPS)
    yield made
    made.close()


def join_request(
    member_id: str = "", group: str = "g", instance: str | None = None, meta: bytes = b"m"
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=meta)],
    )


def join(broker: TestBroker, version: int, **kwargs):
    return broker.call(ApiKey.JOIN_GROUP, version, join_request(**kwargs))


def join_member(broker: TestBroker, version: int = 7, group: str = "g"):
    """A single member joins (v4+: after MEMBER_ID_REQUIRED); the join completes at once."""
    first = join(broker, version, group=group)
    if version >= 4:
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id
        first = join(broker, version, member_id=first.member_id, group=group)
    assert first.error_code == ErrorCode.NONE
    return first


def sync(broker: TestBroker, version: int, member: str, generation: int, assignments=None, *,
         group: str = "g"):  # fmt: skip
    request = SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member,
        protocol_type="consumer" if version >= 5 else None,
        protocol_name="range" if version >= 5 else None,
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ],
    )
    return broker.call(ApiKey.SYNC_GROUP, version, request)


def heartbeat(broker: TestBroker, version: int, member: str, generation: int, group: str = "g"):
    request = HeartbeatRequest(group_id=group, generation_id=generation, member_id=member)
    return broker.call(ApiKey.HEARTBEAT, version, request).error_code


def stable_member(broker: TestBroker, group: str = "g") -> tuple[str, int]:
    joined = join_member(broker, 7, group)
    synced = sync(broker, 5, joined.member_id, joined.generation_id,
                  {joined.member_id: b"assigned"}, group=group)  # fmt: skip
    assert synced.error_code == ErrorCode.NONE and synced.assignment == b"assigned"
    return joined.member_id, joined.generation_id


def commit_request(version: int, offsets: dict[tuple[str, int], int], *, group: str = "g",
                   generation: int = -1, member: str = "", metadata: str | None = "meta",
                   timestamp: int = -1) -> OffsetCommitRequest:  # fmt: skip
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=3 if version >= 6 else -1,
                commit_timestamp=timestamp if version == 1 else -1,
                committed_metadata=metadata,
            )
        )
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[OffsetCommitRequestTopic(name=n, partitions=p) for n, p in topics.items()],
    )


def commit(broker: TestBroker, version: int, offsets: dict[tuple[str, int], int], **kwargs):
    response = broker.call(
        ApiKey.OFFSET_COMMIT, version, commit_request(version, offsets, **kwargs)
    )
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def fetch(broker: TestBroker, version: int, asked: dict[str, list[int]] | None, group: str = "g"):
    """{(topic, partition): (offset, metadata, error)} of one group."""
    if version >= 8:
        request = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=group,
                    topics=None
                    if asked is None
                    else [
                        OffsetFetchRequestTopics(name=t, partition_indexes=p)
                        for t, p in asked.items()
                    ],
                )
            ]
        )
        response = broker.call(ApiKey.OFFSET_FETCH, version, request)
        [answer] = response.groups
        assert answer.group_id == group and answer.error_code == ErrorCode.NONE
        topics = answer.topics
    else:
        request = OffsetFetchRequest(
            group_id=group,
            topics=None
            if asked is None
            else [OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in asked.items()],
        )
        response = broker.call(ApiKey.OFFSET_FETCH, version, request)
        if version >= 2:
            assert response.error_code == ErrorCode.NONE
        topics = response.topics
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
        for t in topics
        for p in t.partitions
    }


def offsets_records(broker: TestBroker, group: str):
    """The decoded (key, value) records of the group's ``__consumer_offsets`` partition."""
    partition = partition_for_group(group, 3)
    out = []
    for batch in broker.stored_batches(OFFSETS, partition):
        for record in batch.records:
            assert record.key is not None
            key = decode_key(record.key)
            if isinstance(key, OffsetCommitKey):
                value = None if record.value is None else decode_offset_commit_value(record.value)
            else:
                value = None if record.value is None else decode_group_metadata_value(record.value)
            out.append((key, value))
    return out


# FindCoordinator


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_is_this_broker(gb, version):
    request = FindCoordinatorRequest(key="g", key_type=0)
    response = gb.call(ApiKey.FIND_COORDINATOR, version, request)
    assert response.error_code == ErrorCode.NONE
    assert (response.node_id, response.host, response.port) == (0, "localhost", 9092)


def test_find_coordinator_v4_batch(gb):
    request = FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b", ""])
    response = gb.call(ApiKey.FIND_COORDINATOR, 4, request)
    assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in response.coordinators] == [
        ("a", ErrorCode.NONE, 0, "localhost", 9092),
        ("b", ErrorCode.NONE, 0, "localhost", 9092),
        ("", ErrorCode.INVALID_GROUP_ID, -1, "", -1),
    ]


def test_find_transaction_coordinator_is_not_available(gb):
    response = gb.call(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="t", key_type=1))
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


# JoinGroup, SyncGroup, Heartbeat


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_join_before_v4_needs_no_member_id_round_trip(gb, version):
    joined = join(gb, version)
    assert joined.error_code == ErrorCode.NONE
    assert joined.member_id and joined.leader == joined.member_id
    assert joined.generation_id == 1
    assert joined.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in joined.members] == [(joined.member_id, b"m")]


@pytest.mark.parametrize("version", [4, 5, 6, 7, 8, 9])
def test_join_v4_plus_member_id_required(gb, version):
    first = join(gb, version)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id
    joined = join(gb, version, member_id=first.member_id)
    assert joined.error_code == ErrorCode.NONE
    assert joined.member_id == first.member_id == joined.leader
    assert joined.generation_id == 1
    if version >= 7:
        assert joined.protocol_type == "consumer"


def test_join_static_member_v5(gb):
    joined = join(gb, 5, instance="i1")  # static: no MEMBER_ID_REQUIRED
    assert joined.error_code == ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id) for m in joined.members] == [
        (joined.member_id, "i1")
    ]


@pytest.mark.parametrize("version", [5, 8, 9])
def test_join_restarted_static_leader(gb, version):
    """A static leader restarted into a Stable group: from v9 it is told it leads and to skip
    the assignment (KIP-814), with every member; before, it is named the old leader id."""
    leader = join(gb, version, instance="i1")
    assert leader.error_code == ErrorCode.NONE and leader.leader == leader.member_id
    synced = sync(gb, 5, leader.member_id, leader.generation_id, {leader.member_id: b"mine"})
    assert synced.assignment == b"mine"
    again = join(gb, version, instance="i1")
    assert again.error_code == ErrorCode.NONE
    assert again.generation_id == leader.generation_id
    assert again.member_id != leader.member_id
    if version >= 9:
        assert again.skip_assignment
        assert again.leader == again.member_id
        assert [(m.member_id, m.group_instance_id, m.metadata) for m in again.members] == [
            (again.member_id, "i1", b"m")
        ]
    else:
        assert again.leader == leader.member_id
        assert again.members == []
    synced = sync(gb, 5, again.member_id, again.generation_id)  # no assignment handed in
    assert synced.error_code == ErrorCode.NONE and synced.assignment == b"mine"


@pytest.mark.parametrize("version", [0, 5, 7, 9])
def test_join_errors(gb, version):
    """Error answers carry no protocol name; before v7 it is encoded as "" (not nullable)."""
    assert join(gb, version, group="").error_code == ErrorCode.INVALID_GROUP_ID
    ghost = join(gb, version, member_id="ghost")
    assert ghost.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ghost.protocol_name == ("" if version < 7 else None)
    bad = join_request()
    bad.session_timeout_ms = 10
    assert gb.call(ApiKey.JOIN_GROUP, version, bad).error_code == ErrorCode.INVALID_SESSION_TIMEOUT


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_sync_and_heartbeat(gb, version):
    joined = join_member(gb, 7)
    member, generation = joined.member_id, joined.generation_id
    synced = sync(gb, version, member, generation, {member: b"\x00\x01assign"})
    assert synced.error_code == ErrorCode.NONE
    assert synced.assignment == b"\x00\x01assign"
    if version >= 5:
        assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")
    for hb_version in range(5):
        assert heartbeat(gb, hb_version, member, generation) == ErrorCode.NONE
    assert heartbeat(gb, 4, member, generation + 1) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(gb, 4, "ghost", generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_two_members_through_the_handlers(gb):
    """Concurrent trio tasks: the second join holds both replies until the first rejoins."""
    a = join_member(gb, 7)
    sync(gb, 5, a.member_id, 1, {a.member_id: b"all"})
    results: dict[str, object] = {}

    async def main():
        async with trio.open_nursery() as nursery:
            probe = await gb.acall(ApiKey.JOIN_GROUP, 7, join_request())
            assert probe.error_code == ErrorCode.MEMBER_ID_REQUIRED
            b_id = probe.member_id

            async def join_b():
                results["b"] = await gb.acall(ApiKey.JOIN_GROUP, 7, join_request(b_id))

            nursery.start_soon(join_b)
            await trio.testing.wait_all_tasks_blocked()
            assert "b" not in results  # held: A must rejoin
            hb = await gb.acall(
                ApiKey.HEARTBEAT,
                4,
                HeartbeatRequest(group_id="g", generation_id=1, member_id=a.member_id),
            )
            assert hb.error_code == ErrorCode.REBALANCE_IN_PROGRESS
            results["a"] = await gb.acall(ApiKey.JOIN_GROUP, 7, join_request(a.member_id))
        async with trio.open_nursery() as nursery:
            jb = results["b"]

            async def sync_b():
                results["sb"] = await gb.acall(
                    ApiKey.SYNC_GROUP, 5,
                    SyncGroupRequest(group_id="g", generation_id=2, member_id=jb.member_id,
                                     assignments=[]),
                )  # fmt: skip

            nursery.start_soon(sync_b)
            await trio.testing.wait_all_tasks_blocked()
            assert "sb" not in results  # held until the leader syncs
            results["sa"] = await gb.acall(
                ApiKey.SYNC_GROUP, 5,
                SyncGroupRequest(group_id="g", generation_id=2, member_id=a.member_id,
                                 assignments=[
                                     SyncGroupRequestAssignment(member_id=a.member_id,
                                                                assignment=b"A"),
                                     SyncGroupRequestAssignment(member_id=jb.member_id,
                                                                assignment=b"B"),
                                 ]),
            )  # fmt: skip

    run(main)
    ja, jb = results["a"], results["b"]
    assert ja.generation_id == jb.generation_id == 2
    assert ja.leader == a.member_id
    assert len(ja.members) == 2 and jb.members == []
    assert results["sa"].assignment == b"A"
    assert results["sb"].assignment == b"B"


def test_session_timeout_through_the_runtime(gb):
    member, generation = stable_member(gb)
    groups = gb.ctx.groups
    gb.clock.advance(9_999)
    groups.coordinator.advance(gb.clock())
    run(groups.deliver)
    assert heartbeat(gb, 4, member, generation) == ErrorCode.NONE
    gb.clock.advance(10_000)
    groups.coordinator.advance(gb.clock())
    run(groups.deliver)
    assert heartbeat(gb, 4, member, generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert describe(gb, 5, "g")[0].group_state == "Empty"


# LeaveGroup


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_single(gb, version):
    member, _ = stable_member(gb)
    request = LeaveGroupRequest(group_id="g", member_id=member)
    assert gb.call(ApiKey.LEAVE_GROUP, version, request).error_code == ErrorCode.NONE
    assert gb.call(ApiKey.LEAVE_GROUP, version, request).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert describe(gb, 0, "g")[0].group_state == "Empty"


@pytest.mark.parametrize("version", [3, 4, 5])
def test_leave_batch(gb, version):
    static = join(gb, 5, instance="i1")
    assert static.error_code == ErrorCode.NONE
    request = LeaveGroupRequest(
        group_id="g",
        members=[
            MemberIdentity(member_id="", group_instance_id="i1"),
            MemberIdentity(member_id="ghost", group_instance_id=None),
        ],
    )
    response = gb.call(ApiKey.LEAVE_GROUP, version, request)
    assert response.error_code == ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        ("", "i1", ErrorCode.NONE),
        ("ghost", None, ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    assert describe(gb, 5, "g")[0].members == []


# OffsetCommit / OffsetFetch


@pytest.mark.parametrize("version", range(9))
def test_offset_commit_fetch_round_trip(gb, version):
    gb.create_topic("t", 3)
    if version == 0:
        kwargs = {}  # v0: outside membership, the group must be empty
    else:
        member, generation = stable_member(gb)
        kwargs = {"member": member, "generation": generation}
    errors = commit(gb, version, {("t", 0): 5, ("t", 2): 7}, **kwargs)
    assert errors == {("t", 0): ErrorCode.NONE, ("t", 2): ErrorCode.NONE}
    for fetch_version in range(9):
        got = fetch(gb, fetch_version, {"t": [0, 1, 2]})
        assert got == {
            ("t", 0): (5, "meta", ErrorCode.NONE),
            ("t", 1): (-1, "", ErrorCode.NONE),
            ("t", 2): (7, "meta", ErrorCode.NONE),
        }, fetch_version
    stored = gb.ctx.groups.offsets.get("g", ("t", 0))
    assert stored is not None
    assert stored.leader_epoch == (3 if version >= 6 else -1)


def test_offset_commit_v1_timestamp(gb):
    gb.create_topic("t")
    assert commit(gb, 1, {("t", 0): 3}, timestamp=12345) == {("t", 0): ErrorCode.NONE}
    assert gb.ctx.groups.offsets.get("g", ("t", 0)).commit_timestamp_ms == 12345
    assert commit(gb, 1, {("t", 0): 4}) == {("t", 0): ErrorCode.NONE}
    assert gb.ctx.groups.offsets.get("g", ("t", 0)).commit_timestamp_ms == BASE_TIME_MS


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6, 7, 8])
def test_offset_fetch_all(gb, version):
    gb.create_topic("a", 2)
    gb.create_topic("b")
    commit(gb, 2, {("b", 0): 1, ("a", 1): 2, ("a", 0): 3})
    assert fetch(gb, version, None) == {
        ("a", 0): (3, "meta", ErrorCode.NONE),
        ("a", 1): (2, "meta", ErrorCode.NONE),
        ("b", 0): (1, "meta", ErrorCode.NONE),
    }
    assert fetch(gb, version, None, group="other") == {}


def test_offset_fetch_v8_several_groups(gb):
    gb.create_topic("t", 2)
    commit(gb, 8, {("t", 0): 10}, group="g1")
    commit(gb, 8, {("t", 1): 20}, group="g2")
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(group_id="g1", topics=None),
            OffsetFetchRequestGroup(
                group_id="g2", topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])]
            ),
        ]
    )
    response = gb.call(ApiKey.OFFSET_FETCH, 8, request)
    answers = {
        g.group_id: [(t.name, p.partition_index, p.committed_offset) for t in g.topics
                     for p in t.partitions]
        for g in response.groups
    }  # fmt: skip
    assert answers == {"g1": [("t", 0, 10)], "g2": [("t", 0, -1), ("t", 1, 20)]}


def test_offset_metadata_too_large(make_broker):
    broker = make_broker({**PROPS, "offset.metadata.max.bytes": "10"})
    broker.create_topic("t", 2)
    assert commit(broker, 2, {("t", 0): 1}, metadata="x" * 10) == {("t", 0): ErrorCode.NONE}
    assert commit(broker, 2, {("t", 1): 1}, metadata="x" * 11) == {
        ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE
    }
    assert fetch(broker, 2, {"t": [1]}) == {("t", 1): (-1, "", ErrorCode.NONE)}


def test_offset_commit_refusals(gb):
    gb.create_topic("t")
    member, generation = stable_member(gb)
    assert commit(gb, 2, {("t", 0): 1}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(gb, 2, {("t", 0): 1}, member=member, generation=generation + 5) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }
    assert commit(gb, 2, {("nope", 0): 1}, member=member, generation=generation) == {
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }


def test_offset_commit_to_a_missing_partition(gb):
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION for a partition the topic does not have
    (KafkaApis.handleOffsetCommitRequest: metadataCache.contains(topicPartition))."""
    gb.create_topic("t", 1)
    assert commit(gb, 2, {("t", 5): 1}) == {("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_committed_offsets_survive_a_restart(gb):
    gb.create_topic("t", 2)
    member, generation = stable_member(gb)
    commit(gb, 5, {("t", 0): 11, ("t", 1): 12}, member=member, generation=generation)
    commit(gb, 2, {("t", 0): 1}, group="simple")
    gb.restart()
    assert fetch(gb, 5, None) == {
        ("t", 0): (11, "meta", ErrorCode.NONE),
        ("t", 1): (12, "meta", ErrorCode.NONE),
    }
    assert fetch(gb, 1, {"t": [0]}, group="simple") == {("t", 0): (1, "meta", ErrorCode.NONE)}
    # the group comes back Stable with its member, who goes on without a rebalance
    [described] = describe(gb, 5, "g")
    assert (described.group_state, [m.member_id for m in described.members]) == (
        "Stable", [member],
    )  # fmt: skip
    assert heartbeat(gb, 4, member, generation) == ErrorCode.NONE
    assert sync(gb, 5, member, generation).assignment == b"assigned"
    # a member silent for its session after the restart is gone; the group empties
    gb.clock.advance(10_000)
    gb.ctx.groups.coordinator.advance(gb.clock())
    run(gb.ctx.groups.deliver)
    assert heartbeat(gb, 4, member, generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert describe(gb, 5, "g")[0].group_state == "Empty"
    assert join_member(gb, 7).generation_id == generation + 2


def test_a_restored_group_is_stored_again_as_it_was(gb):
    """What the broker loads it writes back unchanged at the next store."""
    member, generation = stable_member(gb)
    before = [v for k, v in offsets_records(gb, "g") if isinstance(k, GroupMetadataKey)][-1]
    gb.restart()
    group = gb.ctx.groups.coordinator.groups["g"]
    again = group_metadata(group)
    assert again.members == before.members
    assert (again.generation, again.protocol, again.leader, again.protocol_type) == (
        generation, "range", member, "consumer",
    )  # fmt: skip


def test_consumer_offsets_records_decode(gb):
    gb.create_topic("t")
    member, generation = stable_member(gb)
    commit(gb, 5, {("t", 0): 42}, member=member, generation=generation)
    records = offsets_records(gb, "g")
    offsets = [(k, v) for k, v in records if isinstance(k, OffsetCommitKey)]
    assert [(k.group, k.topic, k.partition, v.offset, v.metadata) for k, v in offsets] == [
        ("g", "t", 0, 42, "meta")
    ]
    groups = [v for k, v in records if isinstance(k, GroupMetadataKey)]
    assert groups, "the Stable group's metadata is written"
    last = groups[-1]
    assert (last.protocol_type, last.generation, last.protocol, last.leader) == (
        "consumer", generation, "range", member,
    )  # fmt: skip
    assert [(m.member_id, m.subscription, m.assignment) for m in last.members] == [
        (member, b"m", b"assigned")
    ]


# DescribeGroups / ListGroups / DeleteGroups


def describe(broker: TestBroker, version: int, *groups: str):
    request = DescribeGroupsRequest(groups=list(groups))
    return broker.call(ApiKey.DESCRIBE_GROUPS, version, request).groups


def list_groups(broker: TestBroker, version: int, states: list[str] | None = None):
    request = ListGroupsRequest(states_filter=states or [])
    response = broker.call(ApiKey.LIST_GROUPS, version, request)
    assert response.error_code == ErrorCode.NONE
    return [(g.group_id, g.protocol_type, g.group_state if version >= 4 else None)
            for g in response.groups]  # fmt: skip


def delete_groups(broker: TestBroker, version: int, *groups: str):
    request = DeleteGroupsRequest(groups_names=list(groups))
    return [(r.group_id, r.error_code) for r in
            broker.call(ApiKey.DELETE_GROUPS, version, request).results]  # fmt: skip


@pytest.mark.parametrize("version", range(6))
def test_describe_groups(gb, version):
    member, _ = stable_member(gb)
    [described, unknown] = describe(gb, version, "g", "nope")
    assert (described.error_code, described.group_state, described.protocol_type,
            described.protocol_data) == (ErrorCode.NONE, "Stable", "consumer", "range")  # fmt: skip
    [m] = described.members
    assert (m.member_id, m.client_id, m.member_metadata, m.member_assignment) == (
        member, "tests", b"m", b"assigned",
    )  # fmt: skip
    assert m.client_host == gb.client_host  # the host the member's JoinGroup came from
    assert (unknown.group_state, unknown.members) == ("Dead", [])


def test_describe_an_offsets_only_group_after_a_restart(gb):
    """Kafka loads a group that has only committed offsets as an Empty group; so does
    ListGroups here, and DescribeGroups must agree."""
    gb.create_topic("t")
    commit(gb, 2, {("t", 0): 1}, group="simple")
    assert describe(gb, 5, "simple")[0].group_state == "Empty"
    gb.restart()
    assert list_groups(gb, 4) == [("simple", "", "Empty")]
    assert describe(gb, 5, "simple")[0].group_state == "Empty"


@pytest.mark.parametrize("version", range(5))
def test_list_groups(gb, version):
    stable_member(gb, "busy")
    gb.create_topic("t")
    commit(gb, 2, {("t", 0): 1}, group="idle")
    listed = list_groups(gb, version)
    if version >= 4:
        assert listed == [("busy", "consumer", "Stable"), ("idle", "", "Empty")]
    else:
        assert listed == [("busy", "consumer", None), ("idle", "", None)]


def test_list_groups_states_filter(gb):
    stable_member(gb, "busy")
    gb.create_topic("t")
    commit(gb, 2, {("t", 0): 1}, group="idle")
    assert list_groups(gb, 4, ["Stable"]) == [("busy", "consumer", "Stable")]
    assert list_groups(gb, 4, ["empty"]) == [("idle", "", "Empty")]
    assert list_groups(gb, 4, ["PreparingRebalance"]) == []
    assert len(list_groups(gb, 4, ["Stable", "Empty"])) == 2


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_groups(gb, version):
    gb.create_topic("t")
    stable_member(gb, "busy")
    commit(gb, 2, {("t", 0): 1}, group="idle")
    assert delete_groups(gb, version, "busy", "nope", "idle") == [
        ("busy", ErrorCode.NON_EMPTY_GROUP),
        ("nope", ErrorCode.GROUP_ID_NOT_FOUND),
        ("idle", ErrorCode.NONE),
    ]
    assert fetch(gb, 2, None, group="idle") == {}
    assert delete_groups(gb, version, "idle") == [("idle", ErrorCode.GROUP_ID_NOT_FOUND)]


def test_deleted_groups_stay_deleted_after_a_restart(gb):
    gb.create_topic("t")
    member, generation = stable_member(gb)
    commit(gb, 5, {("t", 0): 9}, member=member, generation=generation)
    leave = LeaveGroupRequest(group_id="g", member_id=member)
    assert gb.call(ApiKey.LEAVE_GROUP, 1, leave).error_code == ErrorCode.NONE
    assert delete_groups(gb, 2, "g") == [("g", ErrorCode.NONE)]
    records = offsets_records(gb, "g")
    assert records[-2:] == [
        (OffsetCommitKey(group="g", topic="t", partition=0), None),
        (GroupMetadataKey(group="g"), None),
    ]
    gb.restart()
    assert fetch(gb, 5, None) == {}
    assert "g" not in gb.ctx.groups.coordinator.groups
    assert list_groups(gb, 4) == []
    assert describe(gb, 5, "g")[0].group_state == "Dead"
    # a new group of the same name starts from generation 1
    assert join_member(gb, 7).generation_id == 1


# -- expiry of committed offsets (offsets.retention.minutes)


@pytest.fixture
def expiring(tmp_path) -> Iterator[TestBroker]:
    made = TestBroker(tmp_path / "logs", {**PROPS, "offsets.retention.minutes": "1"})
    made.create_topic("t", partitions=2)
    yield made
    made.close()


def test_offsets_of_an_empty_group_expire_after_the_retention(expiring: TestBroker) -> None:
    assert commit(expiring, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    expiring.clock.advance(59_000)
    assert run(expiring.ctx.groups.expire_offsets) == 0
    assert fetch(expiring, 3, {"t": [0]})[("t", 0)][0] == 5
    expiring.clock.advance(2_000)
    assert run(expiring.ctx.groups.expire_offsets) == 1
    assert fetch(expiring, 3, {"t": [0]})[("t", 0)][0] == -1
    expiring.restart()  # the tombstone was written: the offset stays gone
    assert fetch(expiring, 3, {"t": [0]})[("t", 0)][0] == -1


def test_offsets_of_a_group_with_members_do_not_expire(expiring: TestBroker) -> None:
    member, generation = stable_member(expiring)
    assert commit(expiring, 2, {("t", 1): 9}, generation=generation, member=member) == {
        ("t", 1): ErrorCode.NONE
    }
    expiring.clock.advance(10 * 60_000)
    assert run(expiring.ctx.groups.expire_offsets) == 0
    assert fetch(expiring, 3, {"t": [1]})[("t", 1)][0] == 9


def test_a_v2_retention_time_sets_its_own_expiry(expiring: TestBroker) -> None:
    request = commit_request(2, {("t", 0): 7})
    request.retention_time_ms = 5_000
    response = expiring.call(ApiKey.OFFSET_COMMIT, 2, request)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    expiring.clock.advance(4_000)
    assert run(expiring.ctx.groups.expire_offsets) == 0
    expiring.clock.advance(2_000)
    assert run(expiring.ctx.groups.expire_offsets) == 1
    assert fetch(expiring, 3, {"t": [0]})[("t", 0)][0] == -1
