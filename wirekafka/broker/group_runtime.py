"""The group coordinator on trio: held replies become waits, deadlines become a
timer task, and changes are written to ``__consumer_offsets``."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TypeVar

import trio

from wirekafka.broker.offsets_log import OFFSETS_TOPIC, LoadedGroup, LoadedOffset, OffsetsLog
from wirekafka.groups.coordinator import GroupCoordinator, JoinResult, SyncResult
from wirekafka.groups.group import Group
from wirekafka.groups.offset_store import CommittedOffset, OffsetStore
from wirekafka.groups.offsets_topic import GroupMetadataValue, MemberMetadata
from wirekafka.groups.state import GroupState
from wirekafka.protocol.errors import ErrorCode
from wirekafka.storage.log import Clock

log = logging.getLogger("wirekafka.groups")

R = TypeVar("R", JoinResult, SyncResult)


class _Reply:
    """Where a held JoinGroup or SyncGroup reply lands."""

    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: JoinResult | SyncResult | None = None


def group_metadata(group: Group) -> GroupMetadataValue:
    protocol = group.protocol_name
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp_ms=group.state_timestamp_ms,
        members=[
            MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata_for(protocol) if protocol else b"",
                assignment=m.assignment,
            )
            for m in group.members.values()
        ],
    )


class GroupRuntime:
    def __init__(
        self,
        coordinator: GroupCoordinator,
        offsets: OffsetStore,
        offsets_log: OffsetsLog,
        clock: Clock,
        *,
        offsets_retention_ms: int,
        offset_metadata_max_bytes: int,
    ) -> None:
        self.coordinator = coordinator
        self.offsets = offsets
        self.offsets_log = offsets_log
        self.clock = clock
        self.offsets_retention_ms = offsets_retention_ms
        self.offset_metadata_max_bytes = offset_metadata_max_bytes
        self._wake = trio.Event()

    def load(self) -> None:
        """Rebuild committed offsets and groups (with their members) from ``__consumer_offsets``
        (created, as in Kafka, when a client first looks for a coordinator)."""
        if not self.offsets_log.exists():
            return
        stored_groups: dict[str, GroupMetadataValue | None] = {}
        offsets = 0
        for item in self.offsets_log.load():
            if isinstance(item, LoadedOffset):
                if item.committed is None:
                    self.offsets.remove(item.group_id, (item.topic, item.partition))
                else:
                    self.offsets.commit(
                        item.group_id, {(item.topic, item.partition): item.committed}
                    )
                    offsets += 1
            elif isinstance(item, LoadedGroup):
                stored_groups[item.group_id] = item.metadata
        now = self.clock()
        for group_id, metadata in stored_groups.items():
            if metadata is not None:
                self.coordinator.restore(group_id, now, metadata)
        for group_id in self.offsets.groups():  # offsets alone: an Empty group, as Kafka loads it
            if group_id not in self.coordinator.groups:
                self.coordinator.restore(group_id, now)
        if offsets or stored_groups:
            log.info(
                "loaded %d groups and the offsets of %d from %s",
                len(self.coordinator.groups),
                len(self.offsets.groups()),
                OFFSETS_TOPIC,
            )

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this broker coordinates the group; NOT_COORDINATOR on a broker
        of a cluster that does not; COORDINATOR_NOT_AVAILABLE when
        ``__consumer_offsets`` is missing and cannot be created now."""
        return self.offsets_log.coordinator_error(group_id)

    # calls into the coordinator

    async def held(self, call: Callable[[object], R | None]) -> R:
        """Run a JoinGroup/SyncGroup call; wait if the coordinator holds the reply."""
        reply = _Reply()
        result = call(reply)
        self.deliver()
        if result is not None:
            return result
        await reply.event.wait()
        assert reply.result is not None
        return reply.result  # type: ignore[return-value]

    def deliver(self) -> None:
        """Hand out replies the last call completed, persist changed groups, re-arm the timer."""
        for reply_to, result in self.coordinator.take_replies():
            if isinstance(reply_to, _Reply):
                reply_to.result = result
                reply_to.event.set()
        for group_id in self.coordinator.take_stored():
            group = self.coordinator.groups.get(group_id)
            if group is not None:
                self.offsets_log.write_group(group_id, group_metadata(group))
        self._wake.set()

    async def run_timers(self) -> None:
        """Advance the coordinator at each deadline (session and rebalance timeouts)."""
        while True:
            deadline = self.coordinator.next_deadline()
            wait_s = math.inf if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = trio.Event()
            with trio.move_on_after(wait_s):
                await self._wake.wait()
            self.coordinator.advance(self.clock())
            self.deliver()

    # offsets

    def commit(self, group_id: str, offsets: dict[tuple[str, int], CommittedOffset]) -> ErrorCode:
        error = self.offsets_log.write_offsets(group_id, dict(offsets))
        if error == ErrorCode.NONE:
            self.offsets.commit(group_id, offsets)
        return error

    def delete_group(self, group_id: str) -> ErrorCode:
        error = self.coordinator.delete(group_id, self.clock())
        if error == ErrorCode.GROUP_ID_NOT_FOUND and self.offsets.committed(group_id):
            error = ErrorCode.NONE  # only offsets are left: deleting them is deleting the group
        if error != ErrorCode.NONE:
            return error
        removed = self.offsets.delete_group(group_id)
        self.offsets_log.write_offsets(group_id, {tp: None for tp in removed})
        self.offsets_log.write_group(group_id, None)
        return ErrorCode.NONE

    def expire_offsets(self) -> int:
        now = self.clock()
        empty_since = {}
        for group_id in self.offsets.groups():
            group = self.coordinator.groups.get(group_id)
            if group is None:
                empty_since[group_id] = 0
            elif group.state == GroupState.EMPTY:
                empty_since[group_id] = group.state_timestamp_ms
        doomed = self.offsets.expired(now, self.offsets_retention_ms, empty_since)
        by_group: dict[str, dict[tuple[str, int], CommittedOffset | None]] = {}
        for group_id, partition in doomed:
            by_group.setdefault(group_id, {})[partition] = None
        for group_id, partitions in by_group.items():
            if self.offsets_log.write_offsets(group_id, partitions) == ErrorCode.NONE:
                for partition in partitions:
                    self.offsets.remove(group_id, partition)
        return len(doomed)
