"""The classic group coordinator, sans-IO.

Calls take a request's fields and the current time and answer at once, or,
for JoinGroup and SyncGroup, may hold the reply: the caller passes an opaque
``reply_to`` token, and held replies come out later through :meth:`take_replies`
after another call or :meth:`advance` completes the rebalance. Timers
(session timeouts, rebalance timeouts, the initial rebalance delay) are
deadlines the caller honours by calling :meth:`advance` at
:meth:`next_deadline`. Nothing here blocks, sleeps or touches a socket.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from dataclasses import dataclass, field

from wirekafka.groups.group import Group, Member
from wirekafka.groups.offsets_topic import GroupMetadataValue
from wirekafka.groups.state import GroupState
from wirekafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

NO_GENERATION = -1
NO_MEMBER = ""


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = NO_MEMBER
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = NO_MEMBER
    members: list[JoinedMember] = field(default_factory=list)  # the leader's answer only
    skip_assignment: bool = False  # JoinGroup v9+: a leader that must not assign (KIP-814)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True  # JoinGroup v4+
    supports_skip_assignment: bool = True  # JoinGroup v9+


class GroupCoordinator:
    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self.config = config or CoordinatorConfig()
        self.groups: dict[str, Group] = {}
        self._replies: list[tuple[object, JoinResult | SyncResult]] = []
        self.stored: list[str] = []  # groups whose metadata changed: the caller persists them

    # outputs

    def take_replies(self) -> list[tuple[object, JoinResult | SyncResult]]:
        replies, self._replies = self._replies, []
        return replies

    def take_stored(self) -> list[str]:
        stored, self.stored = self.stored, []
        return stored

    def next_deadline(self) -> int | None:
        deadlines = []
        for group in self.groups.values():
            if group.rebalance_deadline_ms is not None:
                deadlines.append(group.rebalance_deadline_ms)
            deadlines.extend(group.pending_members.values())
            for member in group.members.values():
                if member.join_reply is None and member.sync_reply is None:
                    deadlines.append(member.heartbeat_deadline_ms)
        return min(deadlines, default=None)

    # JoinGroup

    def join(self, request: JoinRequest, now_ms: int, reply_to: object) -> JoinResult | None:
        """The answer now, or None when the reply is held until the rebalance completes."""
        config = self.config
        if not request.group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID)
        if (
            not config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= config.max_session_timeout_ms
        ):
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(request.group_id)
        if group is None:
            if request.member_id != NO_MEMBER and request.group_instance_id is None:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.groups[request.group_id] = Group(
                request.group_id, state_timestamp_ms=now_ms
            )
        if not group.supports(request.protocol_type, [name for name, _ in request.protocols]):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if request.member_id == NO_MEMBER:
            return self._join_new(group, request, now_ms, reply_to)
        return self._join_known(group, request, now_ms, reply_to)

    def _new_member_id(self, request: JoinRequest) -> str:
        prefix = request.group_instance_id or request.client_id or "member"
        return f"{prefix}-{uuid.uuid4()}"

    def _join_new(
        self, group: Group, request: JoinRequest, now_ms: int, reply_to: object
    ) -> JoinResult | None:
        instance = request.group_instance_id
        if instance is not None and instance in group.static_members:
            return self._replace_static(group, request, now_ms, reply_to)
        member_id = self._new_member_id(request)
        if instance is None and request.require_known_member_id:
            # The client must come back with this id: a lost response leaves no ghost member.
            group.pending_members[member_id] = now_ms + request.session_timeout_ms
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        self._add_member(group, member_id, request, now_ms, reply_to)
        return None

    def _replace_static(
        self, group: Group, request: JoinRequest, now_ms: int, reply_to: object
    ) -> JoinResult | None:
        """A restarted static member takes its old place; the old id is fenced."""
        assert request.group_instance_id is not None
        old_id = group.static_members[request.group_instance_id]
        previous_leader = group.leader_id
        old = group.members.get(old_id)
        new_id = self._new_member_id(request)
        if old is None:
            del group.static_members[request.group_instance_id]
            self._add_member(group, new_id, request, now_ms, reply_to)
            return None
        if old.join_reply is not None:
            self._reply(old.join_reply, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        if old.sync_reply is not None:
            self._reply(old.sync_reply, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        # The new id takes the old one's place in the join order (which breaks protocol ties).
        members = list(group.members.items())
        group.members.clear()
        group.members.update((new_id if m == old_id else m, each) for m, each in members)
        old.member_id = new_id
        old.join_reply = old.sync_reply = None
        old.client_id, old.client_host = request.client_id, request.client_host
        old.session_timeout_ms = request.session_timeout_ms
        old.rebalance_timeout_ms = request.rebalance_timeout_ms
        group.static_members[request.group_instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        old.touch(now_ms)
        # Its metadata may differ from what the old id last sent (the Java client's
        # carries its generation and owned partitions, which a restarted member lacks):
        # as in Kafka, only a change of the protocol the group would select rebalances.
        old.protocols, old.protocol_type = list(request.protocols), request.protocol_type
        if group.state == GroupState.STABLE and group.select_protocol() == group.protocol_name:
            # No rebalance: it gets the current generation back and syncs its old
            # assignment. A restarted leader must not hand in an assignment a Stable
            # group would not pass on. From JoinGroup v9 it is told it leads, with
            # every member, and to skip the assignment (KIP-814), so it goes on
            # watching the group's topics for changes that need a rebalance, as a
            # leader does; before v9 it is named the leader from before the swap, so
            # it takes itself for a follower (as Kafka answers both).
            self.stored.append(group.group_id)
            leads = group.leader_id == new_id
            if leads and request.supports_skip_assignment:
                result = self._join_result(group, old, leader_view=True)
                return dataclasses.replace(result, skip_assignment=True)
            result = self._join_result(group, old, leader_view=False)
            return dataclasses.replace(result, leader_id=previous_leader or result.leader_id)
        old.join_reply = reply_to
        self._rebalance(group, now_ms, f"static member {new_id} replaced {old_id}")
        return None

    def _add_member(
        self, group: Group, member_id: str, request: JoinRequest, now_ms: int, reply_to: object
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=list(request.protocols),
            join_reply=reply_to,
            heartbeat_deadline_ms=now_ms + request.session_timeout_ms,
        )
        if not group.members:
            group.protocol_type = request.protocol_type
        group.members[member_id] = member
        group.pending_members.pop(member_id, None)
        if request.group_instance_id is not None:
            group.static_members[request.group_instance_id] = member_id
        if group.state == GroupState.PREPARING_REBALANCE and group.initial_delay_ms:
            # A new group's first rebalance waits a little longer for each newcomer.
            limit = group.rebalance_started_ms + request.rebalance_timeout_ms
            group.rebalance_deadline_ms = min(now_ms + group.initial_delay_ms, max(limit, now_ms))
        self._rebalance(group, now_ms, f"member {member_id} joined")

    def _join_known(
        self, group: Group, request: JoinRequest, now_ms: int, reply_to: object
    ) -> JoinResult | None:
        member_id = request.member_id
        if member_id in group.pending_members:
            self._add_member(group, member_id, request, now_ms, reply_to)
            return None
        member = group.members.get(member_id)
        fenced = self._fenced(group, member_id, request.group_instance_id)
        if fenced is not None:
            return JoinResult(fenced, member_id=member_id)
        if member is None:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
        if member.join_reply is not None:  # a retried join replaces the waiting one
            self._reply(
                member.join_reply, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id)
            )
        unchanged = member.protocols == request.protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.touch(now_ms)
        if group.state == GroupState.COMPLETING_REBALANCE and unchanged:
            return self._join_result(group, member, leader_view=member_id == group.leader_id)
        if group.state == GroupState.STABLE and unchanged and member_id != group.leader_id:
            return self._join_result(group, member, leader_view=False)
        why = "its metadata changed" if not unchanged else "it leads the group"
        if group.state == GroupState.PREPARING_REBALANCE:
            why = "the group is rebalancing"
        member.protocols = list(request.protocols)
        member.join_reply = reply_to
        self._rebalance(group, now_ms, f"member {member_id} rejoined: {why}")
        return None

    def _member_of(
        self, group_id: str, generation_id: int, member_id: str, instance: str | None
    ) -> tuple[Group, Member] | ErrorCode:
        """The group and member a SyncGroup, Heartbeat or OffsetCommit speaks for,
        or why it speaks for none: an unknown member, a fenced instance, a stale
        generation."""
        group = self.groups.get(group_id)
        if group is None or group.state == GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        fenced = self._fenced(group, member_id, instance)
        if fenced is not None:
            return fenced
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return group, member

    def _fenced(self, group: Group, member_id: str, instance: str | None) -> ErrorCode | None:
        if instance is None:
            return None
        known = group.static_members.get(instance)
        if known is not None and known != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        return None

    # rebalancing

    def _rebalance(self, group: Group, now_ms: int, reason: str) -> None:
        """Enter (or stay in) PreparingRebalance and complete the join when all are in."""
        if group.state != GroupState.PREPARING_REBALANCE:
            log.info(
                "group %s: rebalancing from %s at generation %d (%s)",
                group.group_id,
                group.state.value,
                group.generation_id,
                reason,
            )
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            for member in group.members.values():
                if member.sync_reply is not None:
                    self._reply(member.sync_reply, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                    member.sync_reply = None
                    # its session restarts now: it was waiting, not silent
                    member.touch(now_ms)
            group.transition(GroupState.PREPARING_REBALANCE, now_ms)
            group.initial_delay_ms = 0
            group.rebalance_started_ms = now_ms
            group.rebalance_deadline_ms = now_ms + self._rebalance_timeout(group)
        elif group.state == GroupState.EMPTY:
            group.transition(GroupState.PREPARING_REBALANCE, now_ms)
            group.rebalance_started_ms = now_ms
            delay = self.config.initial_rebalance_delay_ms
            if delay > 0:  # wait for more members before the first assignment
                group.initial_delay_ms = delay
                group.rebalance_deadline_ms = now_ms + min(delay, self._rebalance_timeout(group))
                return
            group.initial_delay_ms = 0
            group.rebalance_deadline_ms = now_ms + self._rebalance_timeout(group)
        if self._ready_to_complete(group):
            self._complete_join(group, now_ms)

    @staticmethod
    def _ready_to_complete(group: Group) -> bool:
        """Every member has rejoined and no initial delay is running."""
        return (
            group.state == GroupState.PREPARING_REBALANCE
            and not group.initial_delay_ms
            and group.all_joined()
        )

    def _rebalance_timeout(self, group: Group) -> int:
        return max((m.rebalance_timeout_ms for m in group.members.values()), default=0)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        for member in [m for m in group.members.values() if m.join_reply is None]:
            log.info(
                "group %s: member %s did not rejoin within the rebalance; removed",
                group.group_id,
                member.member_id,
            )
            self._remove(group, member)
        group.pending_members.clear()
        group.rebalance_deadline_ms = None
        group.initial_delay_ms = 0
        group.generation_id += 1
        if not group.members:  # Empty keeps its protocol type, as Kafka's group does
            group.protocol_name = None
            group.leader_id = None
            group.transition(GroupState.EMPTY, now_ms)
            self.stored.append(group.group_id)
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        log.info(
            "group %s: generation %d with %d members, leader %s, protocol %s",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.leader_id,
            group.protocol_name,
        )
        for member in group.members.values():
            member.assignment = b""
            reply, member.join_reply = member.join_reply, None
            member.touch(now_ms)
            self._reply(
                reply,
                self._join_result(group, member, leader_view=member.member_id == group.leader_id),
            )

    def _join_result(self, group: Group, member: Member, *, leader_view: bool) -> JoinResult:
        assert group.protocol_name is not None and group.leader_id is not None
        members = []
        if leader_view:
            members = [
                JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                for m in group.members.values()
            ]
        return JoinResult(
            ErrorCode.NONE,
            member_id=member.member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id,
            members=members,
        )

    def _remove(self, group: Group, member: Member) -> None:
        del group.members[member.member_id]
        if group.leader_id == member.member_id:  # the next member to have joined leads
            group.leader_id = next(iter(group.members), None)
        if (
            member.group_instance_id is not None
            and group.static_members.get(member.group_instance_id) == member.member_id
        ):
            del group.static_members[member.group_instance_id]
        if member.join_reply is not None:
            self._reply(
                member.join_reply,
                JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member.member_id),
            )
        if member.sync_reply is not None:
            self._reply(member.sync_reply, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_reply = member.sync_reply = None

    def _member_gone(self, group: Group, member: Member, now_ms: int, reason: str) -> None:
        """A member left or timed out: the others rebalance without it."""
        self._remove(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._rebalance(group, now_ms, f"member {member.member_id} {reason}")
            return
        log.info("group %s: member %s %s", group.group_id, member.member_id, reason)
        if group.state == GroupState.PREPARING_REBALANCE and (
            (not group.members and not group.pending_members) or self._ready_to_complete(group)
        ):
            self._complete_join(group, now_ms)

    def _reply(self, reply_to: object, result: JoinResult | SyncResult) -> None:
        self._replies.append((reply_to, result))

    # SyncGroup

    def sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        now_ms: int,
        reply_to: object,
    ) -> SyncResult | None:
        found = self._member_of(group_id, generation_id, member_id, group_instance_id)
        if isinstance(found, ErrorCode):
            return SyncResult(found)
        group, member = found
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state == GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member.touch(now_ms)
        if group.state == GroupState.STABLE:
            return self._sync_result(group, member)
        # CompletingRebalance: wait for the leader's assignment
        if member.sync_reply is not None:
            self._reply(member.sync_reply, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_reply = reply_to
        if member_id == group.leader_id:
            for each in group.members.values():
                each.assignment = assignments.get(each.member_id, b"")
            group.transition(GroupState.STABLE, now_ms)
            log.info(
                "group %s: generation %d stable, assignment from leader %s",
                group.group_id,
                group.generation_id,
                member_id,
            )
            self.stored.append(group.group_id)
            for each in group.members.values():
                reply, each.sync_reply = each.sync_reply, None
                each.touch(now_ms)
                if reply is not None:
                    self._reply(reply, self._sync_result(group, each))
        return None

    def _sync_result(self, group: Group, member: Member) -> SyncResult:
        return SyncResult(
            ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
        )

    # Heartbeat, LeaveGroup

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode:
        found = self._member_of(group_id, generation_id, member_id, group_instance_id)
        if isinstance(found, ErrorCode):
            return found
        group, member = found
        member.touch(now_ms)
        if group.state == GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, member_id: str, group_instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_id == NO_MEMBER and group_instance_id is not None:
            member_id = group.static_members.get(group_instance_id, NO_MEMBER)
        fenced = self._fenced(group, member_id, group_instance_id)
        if fenced is not None:
            return fenced
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            if self._ready_to_complete(group):
                self._complete_join(group, now_ms)
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._member_gone(group, member, now_ms, "left")
        return ErrorCode.NONE

    # offsets

    def check_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode:
        """Whether an OffsetCommit may store offsets for this group."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if generation_id < 0 and member_id == NO_MEMBER:
            # a simple consumer (or pykafka) storing offsets outside group membership
            if group is None:
                self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms)
                return ErrorCode.NONE
            return (
                ErrorCode.NONE if group.state == GroupState.EMPTY else ErrorCode.UNKNOWN_MEMBER_ID
            )
        if group is None and not member_id:
            return ErrorCode.ILLEGAL_GENERATION
        found = self._member_of(group_id, generation_id, member_id, group_instance_id)
        if isinstance(found, ErrorCode):
            return found
        group, member = found
        if group.state == GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        member.touch(now_ms)
        return ErrorCode.NONE

    # admin

    def delete(self, group_id: str, now_ms: int) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state != GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        group.transition(GroupState.DEAD, now_ms)
        del self.groups[group_id]
        return ErrorCode.NONE

    def restore(self, group_id: str, now_ms: int, stored: GroupMetadataValue | None = None) -> None:
        """A group read back from ``__consumer_offsets``, as Kafka loads it.

        With members it comes back Stable at its generation, each member with
        the protocol chosen, its subscription and its assignment, and a session
        that starts now: members that go on heartbeating keep their partitions
        without a rebalance, the others expire. Without members (or with only
        committed offsets, ``stored`` None) it comes back Empty.
        """
        if stored is None:
            self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms)
            return
        group = self.groups[group_id] = Group(
            group_id,
            generation_id=stored.generation,
            protocol_type=stored.protocol_type or None,
            state_timestamp_ms=now_ms,
        )
        if not stored.members or stored.protocol is None:
            return
        group.state = GroupState.STABLE
        group.protocol_name = stored.protocol
        for m in stored.members:
            group.members[m.member_id] = Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout_ms=m.session_timeout_ms,
                # value version 0 has none; Kafka's loader uses the session timeout
                rebalance_timeout_ms=(
                    m.rebalance_timeout_ms if m.rebalance_timeout_ms >= 0 else m.session_timeout_ms
                ),
                protocol_type=stored.protocol_type,
                protocols=[(stored.protocol, m.subscription)],
                assignment=m.assignment,
                heartbeat_deadline_ms=now_ms + m.session_timeout_ms,
            )
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        group.leader_id = (
            stored.leader if stored.leader in group.members else next(iter(group.members))
        )

    # time

    def advance(self, now_ms: int) -> None:
        """Expire sessions, pending member ids and rebalance timeouts due by ``now_ms``."""
        for group in list(self.groups.values()):
            for member_id, deadline in list(group.pending_members.items()):
                if deadline <= now_ms:
                    del group.pending_members[member_id]
            if (
                group.rebalance_deadline_ms is not None
                and group.rebalance_deadline_ms <= now_ms
                and group.state == GroupState.PREPARING_REBALANCE
            ):
                self._complete_join(group, now_ms)
            for member in list(group.members.values()):
                if member.member_id not in group.members:
                    continue
                waiting = member.join_reply is not None or member.sync_reply is not None
                if not waiting and member.heartbeat_deadline_ms <= now_ms:
                    silent = f"sent no heartbeat in {member.session_timeout_ms} ms"
                    self._member_gone(group, member, now_ms, silent)
            if group.members and self._ready_to_complete(group):
                self._complete_join(group, now_ms)
