"""A consumer group and its members, as the coordinator keeps them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from wirekafka.groups.state import GroupState, check_transition


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata), in the member's order of preference
    assignment: bytes = b""
    join_reply: object | None = None  # set while its JoinGroup waits for the rebalance
    sync_reply: object | None = None  # set while its SyncGroup waits for the leader
    heartbeat_deadline_ms: int = 0

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def touch(self, now_ms: int) -> None:
        """A sign of life: the session runs for another ``session_timeout_ms``."""
        self.heartbeat_deadline_ms = now_ms + self.session_timeout_ms


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # in joining order
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> deadline (ms)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    rebalance_deadline_ms: int | None = None
    initial_delay_ms: int = 0  # > 0 while a new group's first rebalance waits for more members
    rebalance_started_ms: int = 0
    state_timestamp_ms: int = -1

    def transition(self, new: GroupState, now_ms: int) -> None:
        check_transition(self.state, new)
        self.state = new
        self.state_timestamp_ms = now_ms

    def supports(self, protocol_type: str, protocol_names: list[str]) -> bool:
        """Whether a member with these protocols may join (Kafka's compatibility rule).

        An Empty group takes any protocol type (its next first member sets the
        group's, which it kept from its last members); otherwise the type must be
        the group's and a protocol must be one every member supports.
        """
        if not protocol_names or not protocol_type:
            return False
        if self.state == GroupState.EMPTY:
            return True
        if protocol_type != self.protocol_type:
            return False
        return not self.members or bool(self._candidates() & set(protocol_names))

    def _candidates(self) -> set[str]:
        members = iter(self.members.values())
        first = next(members, None)
        if first is None:
            return set()
        common = set(first.protocol_names)
        for member in members:
            common &= set(member.protocol_names)
        return common

    def select_protocol(self) -> str:
        """Each member votes for its first protocol among those all support; most votes win."""
        candidates = self._candidates()
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(name for name in member.protocol_names if name in candidates)] += 1
        best = max(votes.values())
        # ties go to the protocol listed first by the earliest member
        first = next(iter(self.members.values()))
        return next(name for name in first.protocol_names if votes.get(name) == best)

    def all_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_reply is not None for m in self.members.values()
        )
