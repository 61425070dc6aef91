"""The group coordinator on trio: held replies become waits, deadlines become a
timer task, and changes are written to ``__consumer_offsets``.

The coordinator's state lives on the event loop. Writes to
``__consumer_offsets`` (which may create the topic, roll a segment or flush)
run in worker threads, one at a time and in the order they were asked for,
so the log holds a group's changes in the order they happened; a write goes
on to its end even if the request that asked for it is cancelled. A reply the
coordinator completes is handed out once the group's metadata it changed is
written, as Kafka's coordinator answers SyncGroup after its append.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import AsyncIterator, Callable
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
from wirekafka.worker_threads import LOG_DIRS, METADATA, blocking, run_blocking

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
        self._writes = trio.Lock()  # one write to __consumer_offsets at a time, in order

    @blocking
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

    async def coordinator_id(self, group_id: str) -> int | ErrorCode:
        """The group's coordinator: the leader of its ``__consumer_offsets``
        partition (-1 when leaderless), the topic created first (in a worker
        thread) if it is missing; COORDINATOR_NOT_AVAILABLE when it cannot be."""
        if not self.offsets_log.exists():
            created = await run_blocking(METADATA, self.offsets_log.ensure_topic)
            if created != ErrorCode.NONE:
                return created
        return self.offsets_log.leader_of(group_id)

    async def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this broker coordinates the group; NOT_COORDINATOR on a broker
        of a cluster that does not; COORDINATOR_NOT_AVAILABLE when
        ``__consumer_offsets`` is missing and cannot be created now."""
        coordinator = await self.coordinator_id(group_id)
        if isinstance(coordinator, ErrorCode):
            return coordinator
        if coordinator != self.offsets_log.topics.broker_id:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """The turn to write to ``__consumer_offsets`` (in worker threads): one
        writer at a time, in the order they asked. A writer changes what it keeps
        in memory in its turn too, so memory and the log change in the same
        order. Shielded: a write is never left half done."""
        with trio.CancelScope(shield=True):
            async with self._writes:
                yield

    async def _write(self, write: Callable[[], ErrorCode]) -> ErrorCode:
        async with self._writing():
            written = await run_blocking(LOG_DIRS, write)
        return written

    # calls into the coordinator

    async def held(self, call: Callable[[object], R | None]) -> R:
        """Run a JoinGroup/SyncGroup call; wait if the coordinator holds the reply."""
        reply = _Reply()
        result = call(reply)
        await self.deliver()
        if result is not None:
            return result
        await reply.event.wait()
        assert reply.result is not None
        return reply.result  # type: ignore[return-value]

    async def deliver(self) -> None:
        """Persist the groups the last calls changed, then hand out the replies they
        completed, and re-arm the timer."""
        replies = self.coordinator.take_replies()
        stored = [
            (group_id, group_metadata(group))
            for group_id in self.coordinator.take_stored()
            if (group := self.coordinator.groups.get(group_id)) is not None
        ]
        try:
            for group_id, metadata in stored:
                await self._write(
                    functools.partial(self.offsets_log.write_group, group_id, metadata)
                )
        finally:
            for reply_to, result in replies:
                if isinstance(reply_to, _Reply):
                    reply_to.result = result
                    reply_to.event.set()
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
            await self.deliver()

    # offsets

    async def commit(
        self, group_id: str, offsets: dict[tuple[str, int], CommittedOffset]
    ) -> ErrorCode:
        written: dict[tuple[str, int], CommittedOffset | None] = dict(offsets)
        async with self._writing():
            error = await run_blocking(LOG_DIRS, self.offsets_log.write_offsets, group_id, written)
            if error == ErrorCode.NONE:
                self.offsets.commit(group_id, offsets)
        return error

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> ErrorCode:
        """Delete the group's committed offsets of ``partitions`` (those it has)."""
        async with self._writing():
            committed = self.offsets.committed(group_id)
            doomed: dict[tuple[str, int], CommittedOffset | None] = {
                tp: None for tp in partitions if tp in committed
            }
            if not doomed:
                return ErrorCode.NONE
            error = await run_blocking(LOG_DIRS, self.offsets_log.write_offsets, group_id, doomed)
            if error == ErrorCode.NONE:
                for tp in doomed:
                    self.offsets.remove(group_id, tp)
        return error

    async def delete_group(self, group_id: str) -> ErrorCode:
        async with self._writing():
            error = self.coordinator.delete(group_id, self.clock())
            if error == ErrorCode.GROUP_ID_NOT_FOUND and self.offsets.committed(group_id):
                error = ErrorCode.NONE  # only offsets are left: deleting them is deleting the group
            if error != ErrorCode.NONE:
                return error
            removed = self.offsets.delete_group(group_id)
            tombstones: dict[tuple[str, int], CommittedOffset | None] = dict.fromkeys(removed)
            await run_blocking(LOG_DIRS, self.offsets_log.write_offsets, group_id, tombstones)
            await run_blocking(LOG_DIRS, self.offsets_log.write_group, group_id, None)
        return ErrorCode.NONE

    async def expire_offsets(self) -> int:
        async with self._writing():
            return await self._expire_offsets()

    async def _expire_offsets(self) -> int:
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
            written = await run_blocking(
                LOG_DIRS, self.offsets_log.write_offsets, group_id, partitions
            )
            if written == ErrorCode.NONE:
                for partition in partitions:
                    self.offsets.remove(group_id, partition)
        return len(doomed)
