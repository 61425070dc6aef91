"""A hypothesis state machine over the group coordinator: a few clients in two
groups join (v4: MEMBER_ID_REQUIRED first), sync, heartbeat, leave, commit,
crash and restart, while a fake clock jumps ahead (past session and rebalance
timeouts too) and the timers fire as the runtime fires them, at
``next_deadline()``.

Every ``Group.transition`` is recorded (monkeypatched) and checked against
``ALLOWED_TRANSITIONS``; after every step the invariants below must hold.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from wirekafka.groups.coordinator import (
    CoordinatorConfig,
    GroupCoordinator,
    JoinRequest,
    JoinResult,
    SyncResult,
)
from wirekafka.groups.group import Group
from wirekafka.groups.state import ALLOWED_TRANSITIONS, GroupState
from wirekafka.protocol.errors import ErrorCode

GROUPS = ("g1", "g2")
# (group, static instance id, session timeout, rebalance timeout)
CLIENTS = [
    ("g1", None, 10_000, 20_000),
    ("g1", None, 6_000, 15_000),
    ("g1", "s1", 10_000, 30_000),
    ("g2", None, 10_000, 20_000),
    ("g2", "s2", 8_000, 20_000),
]
T0 = 1_000_000

# filled by the patched Group.transition: (group object, old state, new state)
TRANSITIONS: list[tuple[Group, GroupState, GroupState]] = []

STEP = st.one_of(
    st.sampled_from([0, 1, 2_999, 3_000, 5_000, 5_999, 6_000, 9_999, 10_000, 15_000, 20_001]),
    st.integers(min_value=0, max_value=45_000),
)


@dataclass
class Client:
    group: str
    instance: str | None
    session: int
    rebalance: int
    member_id: str = ""
    generation: int = -1
    metadata: int = 0
    latest: int | None = None  # the token of its newest held request
    leader_of: tuple[int, int, list[str]] | None = None  # (epoch, generation, member ids)

    def reset(self) -> None:
        self.member_id, self.generation, self.leader_of = "", -1, None


@dataclass
class Held:
    kind: str  # "join" or "sync"
    client: int
    group: str
    member_id: str
    generation: int


class CoordinatorMachine(RuleBasedStateMachine):
    strict_leader = False  # the leader is a member in PreparingRebalance too
    strict_deadlines = False  # next_deadline() is never in the past

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.tokens = itertools.count()
        self.held: dict[int, Held] = {}
        self.clients = [Client(g, inst, s, r) for g, inst, s, r in CLIENTS]
        self.objects: list[Group] = []  # every group object seen, for epochs
        self.seen: dict[str, tuple[Group, int]] = {}  # group id -> (object, generation)
        self.states: dict[str, GroupState] = {}
        # (epoch, generation) -> the leader's assignments
        self.expected: dict[tuple[int, int], dict[str, bytes]] = {}
        self.c = GroupCoordinator(CoordinatorConfig())
        TRANSITIONS.clear()

    @initialize(delay=st.sampled_from([0, 3_000]))
    def configure(self, delay: int) -> None:
        self.c = GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=delay))

    # helpers

    def epoch(self, group: Group) -> int:
        for i, known in enumerate(self.objects):
            if known is group:
                return i
        self.objects.append(group)
        return len(self.objects) - 1

    def group(self, group_id: str) -> Group | None:
        return self.c.groups.get(group_id)

    def collect(self) -> None:
        for token, result in self.c.take_replies():
            assert isinstance(token, int)
            assert token in self.held, f"reply for {token}, which is not held (or twice)"
            held = self.held.pop(token)
            client = self.clients[held.client]
            latest = client.latest == token
            if latest:
                client.latest = None
            if held.kind == "join":
                assert isinstance(result, JoinResult), result
                self.joined(client, result, update=latest)
            else:
                assert isinstance(result, SyncResult), result
                self.synced(client, held, result, update=latest)

    def joined(self, client: Client, result: JoinResult, *, update: bool) -> None:
        group = self.group(client.group)
        if result.error == ErrorCode.NONE:
            assert group is not None
            assert result.member_id
            assert 0 < result.generation_id <= group.generation_id
            assert result.leader_id
            if result.members:
                assert result.member_id == result.leader_id
                assert result.member_id in [m.member_id for m in result.members]
            if update:
                client.member_id, client.generation = result.member_id, result.generation_id
                client.leader_of = None
                if result.members:
                    client.leader_of = (
                        self.epoch(group),
                        result.generation_id,
                        [m.member_id for m in result.members],
                    )
        elif result.error == ErrorCode.MEMBER_ID_REQUIRED:
            assert result.member_id
            if update:
                client.member_id, client.generation = result.member_id, -1
        elif update:
            client.reset()

    def synced(self, client: Client, held: Held, result: SyncResult, *, update: bool) -> None:
        if result.error == ErrorCode.NONE:
            group = self.group(held.group)
            assert group is not None
            given = self.expected.get((self.epoch(group), held.generation))
            assert given is not None, "a sync answered before the leader assigned"
            assert result.assignment == given.get(held.member_id, b"")
        elif update and result.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            client.reset()

    def hold(self, kind: str, index: int, member_id: str, generation: int) -> int:
        token = next(self.tokens)
        self.held[token] = Held(kind, index, self.clients[index].group, member_id, generation)
        self.clients[index].latest = token
        return token

    def stale(self, client: Client) -> bool:
        group = self.group(client.group)
        return group is None or client.generation != group.generation_id

    def run_timers(self, target: int) -> None:
        """As GroupRuntime.run_timers does: advance at each deadline up to ``target``."""
        for _ in range(1000):
            deadline = self.c.next_deadline()
            if deadline is None or deadline > target:
                break
            at = max(deadline, self.now)
            waiting = {
                m.member_id
                for g in self.c.groups.values()
                for m in g.members.values()
                if m.join_reply is not None or m.sync_reply is not None
            }
            self.c.advance(at)
            if self.strict_deadlines:
                # a member waiting on the coordinator is answered, not expired, at a deadline
                # (Kafka reschedules its heartbeat expiration when it answers it)
                members = {m for g in self.c.groups.values() for m in g.members}
                assert waiting <= members, waiting - members
            self.collect()
            self.now = at
            after = self.c.next_deadline()
            if self.strict_deadlines:  # (a zero rebalance timeout may fire again at once)
                assert after is None or after >= at, (at, after)
        else:
            raise AssertionError("the timers never settle")
        self.now = target
        self.c.advance(target)
        self.collect()

    # rules

    @rule(index=st.integers(0, len(CLIENTS) - 1), change=st.booleans())
    def join(self, index: int, change: bool) -> None:
        client = self.clients[index]
        if change:
            client.metadata += 1
        request = JoinRequest(
            group_id=client.group,
            member_id=client.member_id,
            group_instance_id=client.instance,
            session_timeout_ms=client.session,
            rebalance_timeout_ms=client.rebalance,
            protocol_type="consumer",
            protocols=[("range", b"m%d" % client.metadata), ("roundrobin", b"r")],
            client_id=f"c{index}",
        )
        group = self.group(client.group)
        old_static = (
            group.static_members.get(client.instance)
            if group is not None and client.instance is not None and not client.member_id
            else None
        )
        was_stable = group is not None and group.state == GroupState.STABLE
        token = self.hold("join", index, client.member_id, client.generation)
        result = self.c.join(request, self.now, token)
        if result is not None:
            del self.held[token]
            client.latest = None
            if client.member_id == "" and client.instance is None:
                assert result.error == ErrorCode.MEMBER_ID_REQUIRED
            if old_static is not None and result.error == ErrorCode.NONE and was_stable:
                # a static member took its old place: its assignment goes with it
                group = self.group(client.group)
                assert group is not None
                given = self.expected[(self.epoch(group), group.generation_id)]
                given[result.member_id] = given.get(old_static, b"")
            self.joined(client, result, update=True)
        self.collect()

    @precondition(lambda self: any(c.member_id for c in self.clients))
    @rule(index=st.integers(0, len(CLIENTS) - 1))
    def sync(self, index: int) -> None:
        client = self.clients[index]
        if not client.member_id:
            return
        group = self.group(client.group)
        assignments: dict[str, bytes] = {}
        if client.leader_of is not None and group is not None:
            epoch, generation, members = client.leader_of
            if epoch == self.epoch(group) and generation == client.generation:
                assignments = {m: f"{m[:12]}@{generation}".encode() for m in members}
        before = group.state if group is not None else None
        stale = self.stale(client)
        token = self.hold("sync", index, client.member_id, client.generation)
        result = self.c.sync(
            client.group,
            client.generation,
            client.member_id,
            client.instance,
            "consumer",
            None,
            assignments,
            self.now,
            token,
        )
        if stale:
            assert result is not None and result.error != ErrorCode.NONE, result
        group = self.group(client.group)
        if (
            before == GroupState.COMPLETING_REBALANCE
            and group is not None
            and group.state == GroupState.STABLE
        ):
            assert client.member_id == group.leader_id
            self.expected[(self.epoch(group), group.generation_id)] = dict(assignments)
        if result is not None:
            del self.held[token]
            client.latest = None
            self.synced(client, Held("sync", index, client.group, client.member_id,
                                     client.generation), result, update=True)  # fmt: skip
        self.collect()

    @precondition(lambda self: any(c.member_id for c in self.clients))
    @rule(index=st.integers(0, len(CLIENTS) - 1))
    def heartbeat(self, index: int) -> None:
        client = self.clients[index]
        if not client.member_id:
            return
        stale = self.stale(client)
        error = self.c.heartbeat(
            client.group, client.generation, client.member_id, client.instance, self.now
        )
        self.collect()
        if stale:
            assert error != ErrorCode.NONE
        if error == ErrorCode.NONE:
            group = self.group(client.group)
            assert group is not None and client.member_id in group.members
            assert group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            client.reset()

    @precondition(lambda self: any(c.member_id for c in self.clients))
    @rule(index=st.integers(0, len(CLIENTS) - 1), by_instance=st.booleans())
    def leave(self, index: int, by_instance: bool) -> None:
        client = self.clients[index]
        if not client.member_id and client.instance is None:
            return
        member_id = "" if by_instance and client.instance else client.member_id
        error = self.c.leave(client.group, member_id, client.instance, self.now)
        self.collect()
        if error == ErrorCode.NONE:
            group = self.group(client.group)
            assert group is None or client.member_id not in group.members
            client.reset()
            client.latest = None

    @precondition(lambda self: any(c.member_id for c in self.clients))
    @rule(index=st.integers(0, len(CLIENTS) - 1))
    def commit(self, index: int) -> None:
        client = self.clients[index]
        if not client.member_id:
            return
        stale = self.stale(client)
        error = self.c.check_commit(
            client.group, client.generation, client.member_id, client.instance, self.now
        )
        self.collect()
        if stale:
            assert error != ErrorCode.NONE
        if error == ErrorCode.NONE:
            group = self.group(client.group)
            assert group is not None and client.member_id in group.members
            assert group.state in (GroupState.PREPARING_REBALANCE, GroupState.STABLE)

    @rule(group_id=st.sampled_from(GROUPS))
    def simple_commit(self, group_id: str) -> None:
        group = self.group(group_id)
        empty = group is None or group.state == GroupState.EMPTY
        error = self.c.check_commit(group_id, -1, "", None, self.now)
        assert (error == ErrorCode.NONE) == empty, (error, group)

    @rule(index=st.integers(0, len(CLIENTS) - 1))
    def crash(self, index: int) -> None:
        """The client restarts: it forgets its member id (a static one keeps its instance)."""
        client = self.clients[index]
        client.reset()
        client.latest = None

    @rule(group_id=st.sampled_from(GROUPS))
    def delete(self, group_id: str) -> None:
        group = self.group(group_id)
        state = None if group is None else group.state
        error = self.c.delete(group_id, self.now)
        if state is None:
            assert error == ErrorCode.GROUP_ID_NOT_FOUND
        elif state == GroupState.EMPTY:
            assert error == ErrorCode.NONE
            assert group_id not in self.c.groups
        else:
            assert error == ErrorCode.NON_EMPTY_GROUP

    @rule(step=STEP)
    def advance(self, step: int) -> None:
        self.run_timers(self.now + step)

    # invariants

    @invariant()
    def consistent(self) -> None:
        self.check_transitions()
        for group_id in GROUPS:
            group = self.group(group_id)
            if group is not None:
                self.check_group(group)
        self.check_held()
        deadline = self.c.next_deadline()
        if self.strict_deadlines:
            assert deadline is None or deadline >= self.now, (deadline, self.now)

    def check_transitions(self) -> None:
        steps, TRANSITIONS[:] = list(TRANSITIONS), []
        for _, old, new in steps:
            assert new in ALLOWED_TRANSITIONS[old], f"{old} -> {new}"
        for group_id in GROUPS:
            group = self.group(group_id)
            seen = self.seen.get(group_id)
            objects = [] if seen is None else [seen[0]]
            if group is not None and (seen is None or seen[0] is not group):
                objects.append(group)
            for obj in objects:
                moves = [(old, new) for o, old, new in steps if o is obj]
                is_old = seen is not None and obj is seen[0]
                start = self.states[group_id] if is_old else GroupState.EMPTY
                generation = seen[1] if is_old and seen is not None else 0
                for old, new in moves:  # each move starts where the last ended
                    assert old == start, (group_id, moves)
                    start = new
                completed = sum(
                    1
                    for old, new in moves
                    if old == GroupState.PREPARING_REBALANCE
                    and new in (GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)
                )
                if obj is group:
                    assert start == group.state, (group_id, moves, group.state)
                    # one more generation per completed join, never fewer
                    assert group.generation_id == generation + completed, (
                        group_id,
                        generation,
                        completed,
                        group.generation_id,
                    )
                else:
                    assert start == GroupState.DEAD, (group_id, moves)
            if group is None:
                self.seen.pop(group_id, None)
                self.states.pop(group_id, None)
            else:
                self.seen[group_id] = (group, group.generation_id)
                self.states[group_id] = group.state

    def check_group(self, group: Group) -> None:
        state = group.state
        members = group.members.values()
        if state == GroupState.EMPTY:
            assert not group.members
            assert group.leader_id is None or group.generation_id == 0
        if state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or (
            self.strict_leader
            and state == GroupState.PREPARING_REBALANCE
            and group.leader_id is not None
        ):
            assert group.leader_id in group.members, (state, group.leader_id, list(group.members))
        if state == GroupState.COMPLETING_REBALANCE:
            assert all(m.join_reply is None for m in members)
            assert group.protocol_name is not None
        if state == GroupState.PREPARING_REBALANCE:
            assert all(m.sync_reply is None for m in members)
        if state == GroupState.STABLE:
            given = self.expected.get((self.epoch(group), group.generation_id))
            assert given is not None
            for m in members:
                assert m.join_reply is None and m.sync_reply is None
                assert m.assignment == given.get(m.member_id, b""), m.member_id
        for instance, member_id in group.static_members.items():
            assert group.members[member_id].group_instance_id == instance

    def check_held(self) -> None:
        """Every held request is still held by a member (so it can be answered once)."""
        refs: list[object] = []
        for group in self.c.groups.values():
            for m in group.members.values():
                refs.extend(r for r in (m.join_reply, m.sync_reply) if r is not None)
        assert len(refs) == len(set(refs)), "a reply token held twice"
        assert set(refs) == set(self.held), (sorted(refs), sorted(self.held))  # type: ignore[type-var]

    def teardown(self) -> None:
        # let every timer run out: all groups end Empty, every held request answered
        for _ in range(6):
            self.run_timers(self.now + 10_000_000)
        self.check_transitions()
        assert self.held == {}, self.held
        for group in self.c.groups.values():
            assert group.state == GroupState.EMPTY, group


class StrictLeaderMachine(CoordinatorMachine):
    strict_leader = True


class StrictDeadlineMachine(CoordinatorMachine):
    strict_deadlines = True


SETTINGS = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# the strict machines fail today (see their docstrings): stop at the first bug found
# (no shrinking, to keep the run short: test_coordinator.py has the minimal sequences)
STRICT = settings(
    SETTINGS,
    max_examples=150,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)


@pytest.fixture
def recording(monkeypatch):
    original = Group.transition

    def transition(self: Group, new: GroupState, now_ms: int) -> None:
        TRANSITIONS.append((self, self.state, new))
        original(self, new, now_ms)

    monkeypatch.setattr(Group, "transition", transition)
    TRANSITIONS.clear()
    yield
    TRANSITIONS.clear()


def test_coordinator_rules(recording):
    run_state_machine_as_test(CoordinatorMachine, settings=SETTINGS)


def test_the_leader_is_always_a_member(recording):
    """Strict: also in PreparingRebalance (Kafka's GroupMetadata.remove re-elects at once)."""
    run_state_machine_as_test(StrictLeaderMachine, settings=STRICT)


def test_no_deadline_is_ever_in_the_past(recording):
    """Strict: a member is never left with an expired session it was not given back
    (Kafka reschedules the heartbeat expiration whenever it answers a held sync)."""
    run_state_machine_as_test(StrictDeadlineMachine, settings=STRICT)
