"""The classic group coordinator's state machine, sans IO, under a fake clock.

Time is a plain int (``Harness.now``); held JoinGroup/SyncGroup replies are
collected from ``take_replies()`` by their ``reply_to`` tokens (strings here).
Kafka's classic group protocol (GroupCoordinator.scala / GroupMetadata.scala)
and COMPAT.md are the reference.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from wirekafka.broker.group_runtime import group_metadata
from wirekafka.groups.coordinator import (
    CoordinatorConfig,
    GroupCoordinator,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from wirekafka.groups.offsets_topic import (
    GroupMetadataValue,
    MemberMetadata,
    decode_group_metadata_value,
    encode_group_metadata_value,
)
from wirekafka.groups.state import GroupState
from wirekafka.protocol.errors import ErrorCode

T0 = 1_000_000
SESSION = 10_000
REBALANCE = 30_000
RANGE = (("range", b"range-meta"),)


class Harness:
    """One coordinator, a clock, and the replies it has handed out by token."""

    def __init__(self, delay: int = 0, **config: int) -> None:
        self.c = GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=delay, **config))
        self.now = T0
        self.replies: dict[str, JoinResult | SyncResult] = {}
        self.answered: list[str] = []

    def collect(self) -> None:
        for token, result in self.c.take_replies():
            assert isinstance(token, str)
            assert token not in self.answered, f"{token} answered twice"
            self.answered.append(token)
            self.replies[token] = result

    def reply(self, token: str) -> JoinResult | SyncResult:
        assert token in self.replies, f"no reply for {token} (have {sorted(self.replies)})"
        return self.replies.pop(token)

    def join_reply(self, token: str) -> JoinResult:
        result = self.reply(token)
        assert isinstance(result, JoinResult)
        return result

    def sync_reply(self, token: str) -> SyncResult:
        result = self.reply(token)
        assert isinstance(result, SyncResult)
        return result

    def group(self, group_id: str = "g"):
        return self.c.groups[group_id]

    def state(self, group_id: str = "g") -> GroupState:
        return self.c.groups[group_id].state

    def tick(self, ms: int) -> None:
        self.now += ms
        self.c.advance(self.now)
        self.collect()

    def join(
        self,
        token: str,
        member_id: str = "",
        protocols: Sequence[tuple[str, bytes]] = RANGE,
        *,
        group: str = "g",
        instance: str | None = None,
        session: int = SESSION,
        rebalance: int = REBALANCE,
        protocol_type: str = "consumer",
        v4: bool = True,
        v9: bool = True,
    ) -> JoinResult | None:
        request = JoinRequest(
            group_id=group,
            member_id=member_id,
            group_instance_id=instance,
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            protocol_type=protocol_type,
            protocols=list(protocols),
            client_id="client",
            client_host="/127.0.0.1",
            require_known_member_id=v4,
            supports_skip_assignment=v9,
        )
        result = self.c.join(request, self.now, token)
        self.collect()
        return result

    def new_member(self, token: str, **kwargs) -> str:
        """JoinGroup v4+: MEMBER_ID_REQUIRED, then the rejoin (held or answered)."""
        first = self.join(token + "-probe", **kwargs)
        assert first is not None
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id
        result = self.join(token, first.member_id, **kwargs)
        if result is not None:
            self.replies[token] = result
        return first.member_id

    def sync(
        self,
        token: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult | None:
        result = self.c.sync(
            group,
            generation,
            member_id,
            instance,
            protocol_type,
            protocol_name,
            assignments or {},
            self.now,
            token,
        )
        self.collect()
        return result

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = "g", instance: str | None = None
    ) -> ErrorCode:
        return self.c.heartbeat(group, generation, member_id, instance, self.now)

    def leave(self, member_id: str, *, group: str = "g", instance: str | None = None) -> ErrorCode:
        error = self.c.leave(group, member_id, instance, self.now)
        self.collect()
        return error

    def commit(
        self, member_id: str, generation: int, *, group: str = "g", instance: str | None = None
    ) -> ErrorCode:
        return self.c.check_commit(group, generation, member_id, instance, self.now)


def stable_pair(h: Harness, **kwargs) -> tuple[str, str]:
    """Two members A (leader) and B in a Stable group at generation 1 (no initial delay)."""
    assert h.c.config.initial_rebalance_delay_ms == 0
    a = h.new_member("a1", **kwargs)
    assert h.join_reply("a1").generation_id == 1  # alone: completes at once
    assert h.sync("as1", a, 1, {a: b"A1"}) is None
    assert h.sync_reply("as1").assignment == b"A1"
    b = h.new_member("b1", **kwargs)  # Stable -> PreparingRebalance; A must rejoin
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.join("a2", a, **kwargs) is None
    ja, jb = h.join_reply("a2"), h.join_reply("b1")
    assert ja.generation_id == jb.generation_id == 2
    assert ja.leader_id == a
    assert h.sync("bs2", b, 2) is None
    assert h.sync("as2", a, 2, {a: b"A2", b: b"B2"}) is None
    assert h.sync_reply("as2").assignment == b"A2"
    assert h.sync_reply("bs2").assignment == b"B2"
    assert h.state() == GroupState.STABLE
    return a, b


# first join, the initial rebalance delay, the leader's view


def test_first_join_requires_a_member_id_then_rejoins():
    h = Harness(delay=3000)
    first = h.join("j0")
    assert first is not None
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id
    assert first.generation_id == -1
    assert h.state() == GroupState.EMPTY  # a pending member id is not a member
    assert h.group().members == {}
    assert h.join("j1", first.member_id) is None  # held for the initial delay
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert list(h.group().members) == [first.member_id]


def test_a_second_empty_join_gets_another_member_id():
    h = Harness(delay=3000)
    one, two = h.join("j0"), h.join("j1")
    assert one is not None and two is not None
    assert one.error == two.error == ErrorCode.MEMBER_ID_REQUIRED
    assert one.member_id != two.member_id


def test_join_v0_semantics_need_no_member_id_round_trip():
    h = Harness(delay=0)
    assert h.join("j0", v4=False) is None
    result = h.join_reply("j0")
    assert result.error == ErrorCode.NONE
    assert result.member_id
    assert result.generation_id == 1
    assert result.leader_id == result.member_id


def test_a_pending_member_id_expires_after_the_session_timeout():
    h = Harness(delay=3000)
    first = h.join("j0")
    assert first is not None
    assert h.c.next_deadline() == T0 + SESSION
    h.tick(SESSION)
    assert h.c.next_deadline() is None
    late = h.join("j1", first.member_id)
    assert late is not None
    assert late.error == ErrorCode.UNKNOWN_MEMBER_ID


def test_initial_rebalance_delay_then_generation_one():
    h = Harness(delay=3000)
    a = h.new_member("a")
    assert h.c.next_deadline() == T0 + 3000
    h.tick(1000)
    b = h.new_member("b")
    # each newcomer pushes the first rebalance back by the delay, within the rebalance timeout
    assert h.c.next_deadline() == T0 + 1000 + 3000
    h.tick(2999)
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.replies == {}
    h.tick(1)
    assert h.state() == GroupState.COMPLETING_REBALANCE
    ja, jb = h.join_reply("a"), h.join_reply("b")
    for result in (ja, jb):
        assert result.error == ErrorCode.NONE
        assert result.generation_id == 1
        assert result.protocol_name == "range"
        assert result.leader_id == a
    assert ja.member_id == a and jb.member_id == b
    # the leader gets every member and its metadata; followers get nothing
    assert [(m.member_id, m.metadata) for m in ja.members] == [
        (a, b"range-meta"),
        (b, b"range-meta"),
    ]
    assert jb.members == []
    assert h.group().generation_id == 1


def test_initial_delay_is_capped_by_the_rebalance_timeout():
    h = Harness(delay=3000)
    h.new_member("a", rebalance=5000)
    assert h.c.next_deadline() == T0 + 3000
    h.tick(2500)
    h.new_member("b", rebalance=5000)
    assert h.c.next_deadline() == T0 + 5000  # not T0 + 5500
    h.tick(2500)
    assert h.state() == GroupState.COMPLETING_REBALANCE


def test_without_initial_delay_a_single_member_completes_at_once():
    h = Harness(delay=0)
    a = h.new_member("a")
    result = h.join_reply("a")
    assert result.generation_id == 1 and result.leader_id == a
    assert h.state() == GroupState.COMPLETING_REBALANCE


# SyncGroup


def test_sync_delivers_the_leaders_assignments():
    h = Harness(delay=3000)
    a, b = h.new_member("a"), h.new_member("b")
    h.tick(3000)
    assert h.join_reply("a").leader_id == a
    h.join_reply("b")
    assert h.sync("bs", b, 1) is None  # a follower waits for the leader
    assert h.state() == GroupState.COMPLETING_REBALANCE
    assert "bs" not in h.replies
    assert h.sync("as", a, 1, {a: b"for-a", b: b"for-b"}) is None
    assert h.state() == GroupState.STABLE
    sa, sb = h.sync_reply("as"), h.sync_reply("bs")
    assert (sa.error, sa.assignment, sa.protocol_type, sa.protocol_name) == (
        ErrorCode.NONE,
        b"for-a",
        "consumer",
        "range",
    )
    assert (sb.error, sb.assignment) == (ErrorCode.NONE, b"for-b")
    # a late sync in Stable is answered at once with the same assignment
    late = h.sync("bs2", b, 1)
    assert late is not None and late.assignment == b"for-b"
    assert h.group().members[b].assignment == b"for-b"


def test_sync_errors():
    h = Harness(delay=0)
    assert h.sync("s0", "nobody", 0) == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
    a = h.new_member("a")
    h.join_reply("a")
    assert h.sync("s1", "nobody", 1) == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
    assert h.sync("s2", a, 0) == SyncResult(ErrorCode.ILLEGAL_GENERATION)
    assert h.sync("s3", a, 1, protocol_type="connect") == SyncResult(
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.sync("s4", a, 1, protocol_name="roundrobin") == SyncResult(
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.replies == {}
    assert h.state() == GroupState.COMPLETING_REBALANCE


def test_a_missing_assignment_is_empty():
    h = Harness(delay=3000)
    a, b = h.new_member("a"), h.new_member("b")
    h.tick(3000)
    assert h.sync("as", a, 1, {a: b"x"}) is None
    assert h.sync_reply("as").assignment == b"x"
    result = h.sync("bs", b, 1)
    assert result is not None and result.error == ErrorCode.NONE and result.assignment == b""


def test_sync_during_preparing_rebalance_is_refused():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.join("a3", a) is None  # the leader rejoins: a rebalance
    assert h.sync("bs", b, 2) == SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)


def test_held_syncs_are_answered_when_a_rebalance_starts():
    h = Harness(delay=3000)
    a, b = h.new_member("a"), h.new_member("b")
    h.tick(3000)
    assert h.sync("bs", b, 1) is None
    assert h.join("a2", a, (("range", b"changed"),)) is None  # rebalance before the leader syncs
    assert h.sync_reply("bs").error == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.state() == GroupState.PREPARING_REBALANCE


# Heartbeat


def test_heartbeat_errors_by_state():
    h = Harness(delay=3000)
    assert h.heartbeat("nobody", 0) == ErrorCode.UNKNOWN_MEMBER_ID  # no group
    a = h.new_member("a")
    assert h.heartbeat(a, 0) == ErrorCode.REBALANCE_IN_PROGRESS  # PreparingRebalance
    b = h.new_member("b")
    h.tick(3000)
    assert h.state() == GroupState.COMPLETING_REBALANCE
    assert h.heartbeat(a, 1) == ErrorCode.NONE
    assert h.heartbeat(b, 1) == ErrorCode.NONE
    assert h.heartbeat("nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(b, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat(b, 2) == ErrorCode.ILLEGAL_GENERATION
    assert h.sync("as", a, 1, {a: b"", b: b""}) is None
    assert h.state() == GroupState.STABLE
    assert h.heartbeat(b, 1) == ErrorCode.NONE
    assert h.join("a2", a) is None  # the leader rejoins: PreparingRebalance
    assert h.heartbeat(b, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(b, 0) == ErrorCode.ILLEGAL_GENERATION


def test_heartbeat_on_an_empty_group_is_unknown_member():
    h = Harness(delay=0)
    a = h.new_member("a")
    assert h.leave(a) == ErrorCode.NONE
    assert h.state() == GroupState.EMPTY
    assert h.heartbeat(a, 1) == ErrorCode.UNKNOWN_MEMBER_ID


# session and rebalance timeouts


def test_session_timeout_removes_a_member_and_the_others_rebalance():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.c.next_deadline() == h.now + SESSION
    h.tick(SESSION // 2)
    assert h.heartbeat(a, 2) == ErrorCode.NONE
    h.tick(SESSION // 2 - 1)
    assert h.heartbeat(a, 2) == ErrorCode.NONE
    assert b in h.group().members
    h.tick(1)  # B's last contact (its sync) was a session ago: it is gone
    assert b not in h.group().members
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(b, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join("a3", a) is None  # held until collect()
    result = h.join_reply("a3")
    assert result.generation_id == 3
    assert [m.member_id for m in result.members] == [a]


def test_the_log_says_why_each_rebalance_began(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="wirekafka.groups.coordinator")
    h = Harness(delay=0)
    a, b = stable_pair(h)
    h.tick(SESSION // 2)
    assert h.heartbeat(a, 2) == ErrorCode.NONE
    h.tick(SESSION // 2)  # B's last contact was its sync
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(": ", 1)[1] for line in lines if "rebalancing from" in line] == [
        f"rebalancing from Empty at generation 0 (member {a} joined)",
        f"rebalancing from Stable at generation 1 (member {b} joined)",
        f"rebalancing from Stable at generation 2 (member {b} sent no heartbeat in {SESSION} ms)",
    ]
    assert f"group g: generation 2 with 2 members, leader {a}, protocol range" in lines
    assert f"group g: generation 2 stable, assignment from leader {a}" in lines


def test_session_expiry_is_exactly_at_the_deadline():
    h = Harness(delay=0)
    a = h.new_member("a")
    h.join_reply("a")
    h.tick(SESSION - 1)
    assert a in h.group().members
    h.tick(1)
    assert a not in h.group().members
    assert h.state() == GroupState.EMPTY
    assert h.group().generation_id == 2  # the empty rebalance completes a generation


def test_a_member_that_does_not_rejoin_in_time_is_dropped():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.join("a3", a) is None  # the leader rejoins: rebalance
    deadline = h.now + REBALANCE
    assert h.group().rebalance_deadline_ms == deadline
    while h.now + 4000 < deadline:
        h.tick(4000)
        assert h.heartbeat(b, 2) == ErrorCode.REBALANCE_IN_PROGRESS  # alive, but not rejoining
    h.tick(deadline - h.now - 1)
    assert h.state() == GroupState.PREPARING_REBALANCE
    h.tick(1)
    assert h.state() == GroupState.COMPLETING_REBALANCE
    result = h.join_reply("a3")
    assert result.generation_id == 3
    assert [m.member_id for m in result.members] == [a]
    assert h.heartbeat(b, 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_waiting_member_does_not_expire():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.join("b3", b, (("range", b"new"),)) is None  # held until A rejoins
    for _ in range(4):
        h.tick(SESSION // 2)
        assert h.heartbeat(a, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert b in h.group().members
    assert h.join("a3", a) is None
    assert h.join_reply("b3").generation_id == 3


def test_a_member_answered_after_a_long_held_sync_gets_a_fresh_session():
    """A follower whose SyncGroup waited longer than its session timeout and was then
    answered REBALANCE_IN_PROGRESS must get its session back to rejoin in (Kafka
    reschedules the heartbeat expiration when it answers a held sync)."""
    h = Harness(delay=3000)
    a, b = h.new_member("a"), h.new_member("b")
    h.tick(3000)
    assert h.sync("bs", b, 1) is None  # held: the leader is slow to assign
    for _ in range(3):
        h.tick(SESSION // 2)
        assert h.heartbeat(a, 1) == ErrorCode.NONE  # the leader is alive (CompletingRebalance)
    assert b in h.group().members  # waiting for the leader: not expired
    assert h.join("a2", a, (("range", b"changed"),)) is None  # a rebalance instead of a sync
    assert h.sync_reply("bs").error == ErrorCode.REBALANCE_IN_PROGRESS
    deadline = h.c.next_deadline()
    assert deadline is not None and deadline > h.now, (
        f"next_deadline {deadline} is in the past (now {h.now}): B's session was not renewed"
    )
    h.tick(0)
    assert b in h.group().members, "B was expired at once after its sync was answered"
    assert h.join("b2", b) is None
    assert h.join_reply("b2").generation_id == 2


def test_a_follower_is_not_expired_with_the_leader():
    """The leader dies while a follower's SyncGroup waits for its assignment: the
    follower is answered REBALANCE_IN_PROGRESS and must keep its membership (a fresh
    session) to rejoin, not be expired in the same breath."""
    h = Harness(delay=3000)
    a = h.new_member("a", session=10_000)
    b = h.new_member("b", session=6_000)
    h.tick(3000)
    h.join_reply("a"), h.join_reply("b")
    assert h.sync("bs", b, 1) is None  # held until the leader syncs; it never will
    h.tick(10_000)  # A's session ends (B's own deadline passed while it waited)
    assert a not in h.group().members
    assert h.sync_reply("bs").error == ErrorCode.REBALANCE_IN_PROGRESS
    assert b in h.group().members, "B was expired together with the leader"
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.join("b2", b, session=6_000) is None
    result = h.join_reply("b2")
    assert (result.error, result.generation_id, result.leader_id) == (ErrorCode.NONE, 2, b)


# LeaveGroup


def test_leave_triggers_a_rebalance():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.leave(b) == ErrorCode.NONE
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.leave(b) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.join("a3", a) is None
    result = h.join_reply("a3")
    assert result.generation_id == 3 and result.leader_id == a
    assert [m.member_id for m in result.members] == [a]


def test_the_leader_leaving_hands_leadership_on():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.leave(a) == ErrorCode.NONE
    assert h.join("b3", b) is None
    result = h.join_reply("b3")
    assert result.leader_id == b
    assert [m.member_id for m in result.members] == [b]


def test_the_leader_id_always_names_a_member():
    """Kafka's GroupMetadata.remove elects a new leader as soon as the leader is
    removed; a group in PreparingRebalance never names a departed member as leader."""
    h = Harness(delay=0)
    a, _ = stable_pair(h)
    assert h.leave(a) == ErrorCode.NONE
    group = h.group()
    assert group.state == GroupState.PREPARING_REBALANCE
    assert group.leader_id in group.members, (
        f"leader {group.leader_id!r} is not a member of {list(group.members)}"
    )


def test_the_last_member_leaving_empties_the_group():
    h = Harness(delay=0)
    a = h.new_member("a")
    h.join_reply("a")
    assert h.leave(a) == ErrorCode.NONE
    group = h.group()
    assert group.state == GroupState.EMPTY
    assert group.generation_id == 2
    assert group.leader_id is None and group.protocol_name is None
    assert h.c.next_deadline() is None


def test_an_empty_group_keeps_its_protocol_type_stored_and_restored():
    h = Harness(delay=0)
    a = h.new_member("a")
    h.join_reply("a")
    assert h.leave(a) == ErrorCode.NONE
    assert (h.state(), h.group().protocol_type) == (GroupState.EMPTY, "consumer")
    assert h.c.stored[-1] == "g"  # the Empty group's record is written ...
    record = decode_group_metadata_value(
        encode_group_metadata_value(group_metadata(h.group()), version=3)
    )
    assert (record.protocol_type, record.protocol, record.members) == ("consumer", None, [])
    restarted = Harness(delay=0)  # ... and read back after a restart
    restarted.c.restore("g", restarted.now, record)
    assert (restarted.state(), restarted.group().protocol_type) == (GroupState.EMPTY, "consumer")


def test_an_empty_group_takes_another_protocol_type():
    h = Harness(delay=0)
    a = h.new_member("a")
    h.join_reply("a")
    assert h.leave(a) == ErrorCode.NONE
    c = h.new_member("c", protocol_type="connect")  # Kafka checks the type only with members
    assert h.join_reply("c").error == ErrorCode.NONE
    assert h.group().protocol_type == "connect"
    refused = h.join("x", protocol_type="consumer")
    assert refused is not None and refused.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert c in h.group().members


def test_leave_answers_a_held_join():
    h = Harness(delay=3000)
    a, b = h.new_member("a"), h.new_member("b")
    assert h.leave(b) == ErrorCode.NONE
    assert h.join_reply("b").error == ErrorCode.UNKNOWN_MEMBER_ID
    h.tick(3000)
    assert [m.member_id for m in h.join_reply("a").members] == [a]


def test_leave_by_instance_id():
    h = Harness(delay=3000)
    h.join("a", instance="ia")
    h.join("b", instance="ib")
    h.tick(3000)
    ja, jb = h.join_reply("a"), h.join_reply("b")
    a, b = ja.member_id, jb.member_id
    assert h.sync("as", a, 1, {a: b"A", b: b"B"}) is None
    assert h.state() == GroupState.STABLE
    assert h.leave(a, instance="ib") == ErrorCode.FENCED_INSTANCE_ID  # wrong pairing
    assert h.leave("", instance="nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.leave("", instance="ib") == ErrorCode.NONE  # LeaveGroup v3+: by instance id
    assert b not in h.group().members
    assert "ib" not in h.group().static_members
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.join("a2", a, instance="ia") is None
    assert [m.member_id for m in h.join_reply("a2").members] == [a]


def test_leave_of_a_pending_member_id():
    h = Harness(delay=0)
    first = h.join("j0")
    assert first is not None
    assert h.leave(first.member_id) == ErrorCode.NONE
    assert h.group().pending_members == {}
    assert h.leave("nobody", group="other") == ErrorCode.UNKNOWN_MEMBER_ID


# protocols and session timeouts


def test_inconsistent_group_protocol():
    h = Harness(delay=3000)
    h.new_member("a", protocols=(("range", b""), ("roundrobin", b"")))
    wrong_type = h.join("x1", protocol_type="connect")
    assert wrong_type is not None and wrong_type.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    no_common = h.join("x2", protocols=(("sticky", b""),))
    assert no_common is not None and no_common.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    fine = h.join("x3", protocols=(("sticky", b""), ("roundrobin", b"")))
    assert fine is not None and fine.error == ErrorCode.MEMBER_ID_REQUIRED
    h2 = Harness()
    empty = h2.join("x4", protocols=())
    assert empty is not None and empty.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    no_type = h2.join("x5", protocol_type="")
    assert no_type is not None and no_type.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_invalid_group_id():
    h = Harness()
    result = h.join("j", group="")
    assert result is not None and result.error == ErrorCode.INVALID_GROUP_ID


@pytest.mark.parametrize(
    ("session", "error"),
    [
        (5999, ErrorCode.INVALID_SESSION_TIMEOUT),
        (6000, ErrorCode.MEMBER_ID_REQUIRED),
        (60_000, ErrorCode.MEMBER_ID_REQUIRED),
        (60_001, ErrorCode.INVALID_SESSION_TIMEOUT),
    ],
)
def test_session_timeout_bounds(session, error):
    h = Harness(min_session_timeout_ms=6000, max_session_timeout_ms=60_000)
    result = h.join("j", session=session)
    assert result is not None and result.error == error


def _choose(h: Harness, *preferences: Sequence[str]) -> str:
    for i, names in enumerate(preferences):
        h.new_member(f"m{i}", protocols=[(name, name.encode()) for name in names])
    h.tick(3000)
    results = [h.join_reply(f"m{i}") for i in range(len(preferences))]
    chosen = {r.protocol_name for r in results}
    assert len(chosen) == 1
    [name] = chosen
    assert name is not None
    # the leader sees each member's metadata for the chosen protocol
    assert [m.metadata for m in results[0].members] == [name.encode()] * len(preferences)
    return name


def test_protocol_chosen_by_votes():
    h = Harness(delay=3000)
    name = _choose(h, ["range", "roundrobin", "sticky"], ["roundrobin", "range"], ["roundrobin"])
    assert name == "roundrobin"  # the only common one
    h = Harness(delay=3000)
    name = _choose(h, ["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range"])
    assert name == "roundrobin"  # two votes against one


def test_protocol_vote_tie_goes_to_the_first_members_preference():
    h = Harness(delay=3000)
    assert _choose(h, ["range", "roundrobin"], ["roundrobin", "range"]) == "range"


# static membership


def _stable_static(h: Harness) -> tuple[str, str]:
    assert h.join("a", instance="ia") is None  # static members skip MEMBER_ID_REQUIRED
    assert h.join("b", instance="ib") is None
    h.tick(3000)
    a, b = h.join_reply("a").member_id, h.join_reply("b").member_id
    assert h.sync("bs", b, 1, instance="ib") is None
    assert h.sync("as", a, 1, {a: b"A", b: b"B"}, instance="ia") is None
    assert h.sync_reply("bs").assignment == b"B"
    h.sync_reply("as")
    assert h.state() == GroupState.STABLE
    return a, b


def test_a_restarted_static_member_takes_its_place_without_a_rebalance():
    h = Harness(delay=3000)
    a, b = _stable_static(h)
    h.tick(1000)
    result = h.join("b-again", instance="ib")  # restarted: empty member id, same instance
    assert result is not None
    assert result.error == ErrorCode.NONE
    assert result.generation_id == 1
    assert result.member_id not in ("", b)
    assert result.leader_id == a
    assert result.members == []
    new_b = result.member_id
    assert h.state() == GroupState.STABLE
    assert h.group().generation_id == 1
    assert h.group().static_members["ib"] == new_b
    # the old id is fenced; the new one carries on with the old assignment
    assert h.heartbeat(b, 1, instance="ib") == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat(new_b, 1, instance="ib") == ErrorCode.NONE
    assert h.heartbeat(a, 1, instance="ia") == ErrorCode.NONE  # no rebalance for the others
    synced = h.sync("bs2", new_b, 1, instance="ib")
    assert synced is not None and synced.assignment == b"B"
    assert h.sync("bs3", b, 1, instance="ib") == SyncResult(ErrorCode.FENCED_INSTANCE_ID)
    assert h.commit(b, 1, instance="ib") == ErrorCode.FENCED_INSTANCE_ID
    assert h.commit(new_b, 1, instance="ib") == ErrorCode.NONE
    rejoin = h.join("b-old", b, instance="ib")
    assert rejoin is not None and rejoin.error == ErrorCode.FENCED_INSTANCE_ID


def test_a_restarted_static_leader_before_v9_stays_leader_but_is_answered_as_a_follower():
    # Before JoinGroup v9 Kafka names the leader from before the swap, so the restarted
    # leader does not run an assignment that a Stable group would never pass on; it
    # syncs its old one.
    h = Harness(delay=3000)
    a, _ = _stable_static(h)
    result = h.join("a-again", instance="ia", v9=False)
    assert result is not None and result.error == ErrorCode.NONE
    assert result.leader_id == a != result.member_id
    assert result.members == []
    assert not result.skip_assignment
    assert h.group().leader_id == result.member_id
    assert h.state() == GroupState.STABLE


def test_a_restarted_static_leader_from_v9_leads_and_skips_the_assignment():
    # KIP-814: the restarted leader is told it leads, with every member's metadata, so it
    # watches the group's topics again, and to skip the assignment; it syncs its old one.
    h = Harness(delay=3000)
    a, b = _stable_static(h)
    result = h.join("a-again", instance="ia")
    assert result is not None and result.error == ErrorCode.NONE
    new_a = result.member_id
    assert result.leader_id == new_a != a
    assert result.skip_assignment
    assert result.generation_id == 1
    assert {(m.member_id, m.group_instance_id, m.metadata) for m in result.members} == {
        (new_a, "ia", b"range-meta"),
        (b, "ib", b"range-meta"),
    }
    assert h.group().leader_id == new_a
    assert h.state() == GroupState.STABLE
    synced = h.sync("as2", new_a, 1, {}, instance="ia")  # a skipped assignment: none handed in
    assert synced is not None and synced.assignment == b"A"
    assert h.heartbeat(b, 1, instance="ib") == ErrorCode.NONE  # no rebalance for the others
    synced = h.sync("bs2", b, 1, instance="ib")
    assert synced is not None and synced.assignment == b"B"


def test_a_restarted_static_follower_from_v9_is_no_leader():
    h = Harness(delay=3000)
    a, _ = _stable_static(h)
    result = h.join("b-again", instance="ib")
    assert result is not None and result.error == ErrorCode.NONE
    assert result.leader_id == a
    assert result.members == []
    assert not result.skip_assignment


def test_a_restarted_static_member_with_new_metadata_keeps_the_generation():
    # Kafka rebalances for a restarted static member only if the protocol the group would
    # select changes; the Java client's metadata carries its generation and owned
    # partitions, so a restarted one always sends other bytes. They are kept for the
    # next rebalance.
    h = Harness(delay=3000)
    a, _ = _stable_static(h)
    result = h.join("b-again", instance="ib", protocols=(("range", b"v2"),))
    assert result is not None and result.error == ErrorCode.NONE
    assert result.generation_id == 1
    assert h.state() == GroupState.STABLE
    assert h.heartbeat(a, 1, instance="ia") == ErrorCode.NONE
    new_b = result.member_id
    assert list(h.group().members) == [a, new_b]  # the old place in the join order
    assert h.group().members[new_b].metadata_for("range") == b"v2"  # for the next rebalance


def test_a_restarted_static_member_that_changes_the_protocol_rebalances():
    h = Harness(delay=3000)
    both = (("range", b"r"), ("roundrobin", b"rr"))
    assert h.join("a", instance="ia", protocols=both) is None
    assert h.join("b", instance="ib", protocols=both[::-1]) is None
    h.tick(3000)
    a, b = h.join_reply("a").member_id, h.join_reply("b").member_id
    assert h.group().protocol_name == "range"  # a tie: the first member's choice
    assert h.sync("bs", b, 1, instance="ib") is None
    h.sync("as", a, 1, {a: b"A", b: b"B"}, instance="ia")
    h.sync_reply("bs")
    assert h.state() == GroupState.STABLE
    assert h.join("a-again", instance="ia", protocols=both[::-1]) is None  # now roundrobin wins
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.heartbeat(b, 1, instance="ib") == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.join("b2", b, instance="ib", protocols=both[::-1]) is None
    ja, jb = h.join_reply("a-again"), h.join_reply("b2")
    assert ja.generation_id == jb.generation_id == 2
    assert h.group().protocol_name == "roundrobin"


def test_a_static_member_replaced_while_joining_fences_the_held_join():
    h = Harness(delay=3000)
    assert h.join("a", instance="ia") is None
    old = next(iter(h.group().members))
    assert h.join("a2", instance="ia") is None
    assert h.join_reply("a") == JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old)
    h.tick(3000)
    result = h.join_reply("a2")
    assert result.error == ErrorCode.NONE and result.member_id != old
    assert list(h.group().members) == [result.member_id]


# cooperative rebalancing


def test_a_stable_member_rejoining_with_new_metadata_rebalances():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    assert h.join("b3", b, (("range", b"owned-partitions"),)) is None
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, 2) == ErrorCode.REBALANCE_IN_PROGRESS  # A learns from its heartbeat
    assert h.commit(a, 2) == ErrorCode.NONE  # cooperative: commits go on during the rebalance
    assert h.join("a3", a) is None
    ja, jb = h.join_reply("a3"), h.join_reply("b3")
    assert ja.generation_id == jb.generation_id == 3
    assert dict((m.member_id, m.metadata) for m in ja.members)[b] == b"owned-partitions"


def test_a_stable_follower_rejoining_unchanged_gets_the_current_generation():
    h = Harness(delay=0)
    a, b = stable_pair(h)
    result = h.join("b3", b)
    assert result is not None
    assert (result.error, result.generation_id, result.leader_id, result.members) == (
        ErrorCode.NONE,
        2,
        a,
        [],
    )
    assert h.state() == GroupState.STABLE


def test_a_retried_join_replaces_the_held_one():
    h = Harness(delay=3000)
    a = h.new_member("a")
    assert h.join("a-retry", a) is None
    assert h.join_reply("a").error == ErrorCode.UNKNOWN_MEMBER_ID
    h.tick(3000)
    assert h.join_reply("a-retry").generation_id == 1


def test_a_rejoin_in_completing_rebalance_gets_the_same_answer():
    h = Harness(delay=3000)
    a = h.new_member("a")
    h.new_member("b")
    h.tick(3000)
    first = h.join_reply("a")
    again = h.join("a2", a)
    assert again == first
    assert h.state() == GroupState.COMPLETING_REBALANCE


# check_commit


def test_commit_rules_by_state():
    h = Harness(delay=3000)
    a, b = h.new_member("a"), h.new_member("b")
    assert h.commit(a, 0) == ErrorCode.NONE  # PreparingRebalance, current generation (0)
    h.tick(3000)
    assert h.state() == GroupState.COMPLETING_REBALANCE
    assert h.commit(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.commit(a, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.sync("as", a, 1, {a: b"", b: b""}) is None
    assert h.commit(a, 1) == ErrorCode.NONE  # Stable
    assert h.commit(b, 1) == ErrorCode.NONE
    assert h.commit(b, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.commit("nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.commit("", -1) == ErrorCode.UNKNOWN_MEMBER_ID  # outside the group: refused
    assert h.join("a2", a) is None  # PreparingRebalance
    assert h.commit(b, 1) == ErrorCode.NONE
    assert h.commit(b, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.commit("", -1) != ErrorCode.NONE


def test_commit_outside_membership_while_empty():
    h = Harness(delay=0)
    assert h.commit("", -1, group="simple") == ErrorCode.NONE  # creates an Empty group
    assert h.state("simple") == GroupState.EMPTY
    assert h.commit("", -1, group="simple") == ErrorCode.NONE
    a = h.new_member("a", group="simple")
    assert h.commit("", -1, group="simple") == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.leave(a, group="simple") == ErrorCode.NONE
    assert h.state("simple") == GroupState.EMPTY
    assert h.commit("", -1, group="simple") == ErrorCode.NONE
    assert h.commit(a, 1, group="simple") == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.commit("", -1, group="") == ErrorCode.INVALID_GROUP_ID


# delete


def test_delete_rules():
    h = Harness(delay=0)
    assert h.c.delete("g", h.now) == ErrorCode.GROUP_ID_NOT_FOUND
    a = h.new_member("a")
    assert h.c.delete("g", h.now) == ErrorCode.NON_EMPTY_GROUP  # CompletingRebalance
    assert h.sync("as", a, 1, {a: b""}) is None
    assert h.c.delete("g", h.now) == ErrorCode.NON_EMPTY_GROUP  # Stable
    assert h.join("a2", a) is None
    assert h.state() == GroupState.COMPLETING_REBALANCE
    assert h.leave(a) == ErrorCode.NONE
    assert h.state() == GroupState.EMPTY
    assert h.c.delete("g", h.now) == ErrorCode.NONE
    assert "g" not in h.c.groups
    assert h.c.delete("g", h.now) == ErrorCode.GROUP_ID_NOT_FOUND
    # a new group of the same name starts over
    h.new_member("b")
    assert h.join_reply("b").generation_id == 1


def test_delete_during_preparing_rebalance_is_refused():
    h = Harness(delay=3000)
    h.new_member("a")
    assert h.c.delete("g", h.now) == ErrorCode.NON_EMPTY_GROUP


# restore and next_deadline


def test_restore_without_members_keeps_the_generation():
    h = Harness(delay=0)
    h.c.restore("g", h.now, GroupMetadataValue(protocol_type="consumer", generation=7))
    assert h.state() == GroupState.EMPTY
    assert h.heartbeat("old", 7) == ErrorCode.UNKNOWN_MEMBER_ID
    h.new_member("a")
    assert h.join_reply("a").generation_id == 8


def test_restore_of_offsets_alone_is_an_empty_group():
    h = Harness(delay=0)
    h.c.restore("g", h.now)
    assert (h.state(), h.group().generation_id, h.group().protocol_type) == (
        GroupState.EMPTY, 0, None,
    )  # fmt: skip


def stored_member(member_id: str, instance: str | None = None, rebalance: int = REBALANCE):
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance,
        client_id="client",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=rebalance,
        session_timeout_ms=SESSION,
        subscription=b"sub-" + member_id.encode(),
        assignment=b"assigned-" + member_id.encode(),
    )


def restored_pair(h: Harness) -> None:
    """Group g as stored at generation 5: leader a, follower b (static instance "b-i")."""
    members = [stored_member("a", rebalance=-1), stored_member("b", instance="b-i")]
    h.c.restore(
        "g",
        h.now,
        GroupMetadataValue(
            protocol_type="consumer",
            generation=5,
            protocol="range",
            leader="a",
            current_state_timestamp_ms=T0,
            members=members,
        ),
    )


def test_restored_members_go_on_without_a_rebalance():
    h = Harness(delay=0)
    restored_pair(h)
    group = h.group()
    assert (h.state(), group.generation_id, group.protocol_name, group.leader_id) == (
        GroupState.STABLE, 5, "range", "a",
    )  # fmt: skip
    assert group.static_members == {"b-i": "b"}
    assert group.members["a"].rebalance_timeout_ms == SESSION  # value v0 had none
    assert h.heartbeat("a", 5) == ErrorCode.NONE
    assert h.heartbeat("b", 5, instance="b-i") == ErrorCode.NONE
    assert h.heartbeat("b", 4) == ErrorCode.ILLEGAL_GENERATION
    assert h.c.check_commit("g", 5, "a", None, h.now) == ErrorCode.NONE
    synced = h.sync("bs", "b", 5, instance="b-i")
    assert isinstance(synced, SyncResult)
    assert synced.assignment == b"assigned-b"
    # a follower rejoining with what it had gets the generation back
    rejoined = h.join("b5", "b", (("range", b"sub-b"),), instance="b-i")
    assert rejoined is not None and rejoined.generation_id == 5
    assert h.state() == GroupState.STABLE


def test_restored_members_that_stay_silent_expire():
    h = Harness(delay=0)
    restored_pair(h)
    h.tick(SESSION // 2)
    assert h.heartbeat("a", 5) == ErrorCode.NONE
    h.tick(SESSION // 2)  # b has not been heard from since the restore
    assert "b" not in h.group().members
    assert h.group().static_members == {}
    assert h.state() == GroupState.PREPARING_REBALANCE
    assert h.heartbeat("a", 5) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.join("a6", "a", (("range", b"sub-a"),)) is None
    result = h.join_reply("a6")
    assert (result.generation_id, [m.member_id for m in result.members]) == (6, ["a"])


def test_a_stored_leader_that_is_not_a_member_is_replaced():
    h = Harness(delay=0)
    stored = GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol="range",
        leader="gone",
        current_state_timestamp_ms=T0,
        members=[stored_member("a")],
    )
    h.c.restore("g", h.now, stored)
    assert h.group().leader_id == "a"


def test_next_deadline_values():
    h = Harness(delay=3000)
    assert h.c.next_deadline() is None
    first = h.join("p")
    assert first is not None
    assert h.c.next_deadline() == T0 + SESSION  # the pending member id
    h.join("a", first.member_id, rebalance=20_000)
    a = first.member_id
    assert h.c.next_deadline() == T0 + 3000  # the initial delay
    h.tick(3000)
    # CompletingRebalance: the session of the member
    assert h.c.next_deadline() == h.now + SESSION
    h.tick(2000)
    assert h.sync("as", a, 1, {a: b""}) is None
    assert h.c.next_deadline() == h.now + SESSION  # the sync renewed the session
    h.tick(1000)
    assert h.heartbeat(a, 1) == ErrorCode.NONE
    assert h.c.next_deadline() == h.now + SESSION
    assert h.join("a2", a) is None  # the leader alone rejoins: generation 2 at once
    assert h.join_reply("a2").generation_id == 2
    assert h.c.next_deadline() == h.now + SESSION


def test_next_deadline_in_a_rebalance_is_the_rebalance_timeout():
    h = Harness(delay=0)
    a, b = stable_pair(h, rebalance=20_000)
    h.tick(1000)
    assert h.heartbeat(b, 2) == ErrorCode.NONE
    assert h.join("a3", a, rebalance=20_000) is None  # A waits for B
    assert h.group().rebalance_deadline_ms == h.now + 20_000
    assert h.c.next_deadline() == h.now + SESSION  # B's session comes first
    h.tick(5000)
    assert h.heartbeat(b, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    h.tick(5000)
    assert h.heartbeat(b, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    h.tick(5000)
    assert h.heartbeat(b, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.c.next_deadline() == h.now - 15_000 + 20_000  # now the rebalance timeout
    assert h.join("b3", b, rebalance=20_000) is None
    assert h.c.next_deadline() == h.now + SESSION
    assert h.state() == GroupState.COMPLETING_REBALANCE


def test_next_deadline_leaves_out_waiting_members():
    h = Harness(delay=3000)
    h.new_member("a")
    b = h.new_member("b")
    h.tick(3000)
    h.tick(100)
    assert h.sync("bs", b, 1) is None  # B waits for the leader: no session deadline for it
    assert h.c.next_deadline() == h.now - 100 + SESSION  # A's, from the completed join
