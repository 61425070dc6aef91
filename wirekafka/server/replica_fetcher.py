"""Followers fetch from their leaders, as Kafka's replica fetcher threads do.

One task per leader broker that this broker follows partitions of: it keeps a
connection to that leader and sends Fetch requests with ``replica_id`` set to
this broker's id for every partition followed from it, each at the local log
end. What comes back is appended as it is (the leader's offsets and epochs,
:meth:`~wirekafka.storage.log.PartitionLog.append_as_follower`) and the local
high watermark follows the leader's.

Before a partition's first fetch at a new leader epoch, the follower asks the
leader where its own latest epoch ends (OffsetForLeaderEpoch, KIP-101/279) and
truncates what the leader does not have.

An answer is used only while the partition is still followed as it was when it
was asked for (:meth:`~wirekafka.broker.replication.ReplicaManager.still_followed`):
a fetcher goes on while this broker follows other partitions from the same
leader, and a Fetch in flight when the partition moved to another leader (or
epoch) may come back later, with records its old leader appended after it lost
leadership. Appended after the truncation for the new epoch, they would stay
in this replica's log and nowhere else.
"""

from __future__ import annotations

import logging

import trio

from wirekafka.broker.cluster import ClusterView
from wirekafka.broker.replication import Followed, ReplicaManager
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
)
from wirekafka.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from wirekafka.protocol.records.record_batch import iter_batches
from wirekafka.server.inter_broker import BrokerConnection
from wirekafka.server.inter_broker_connector import InterBrokerConnector
from wirekafka.storage.log import RollDue, StorageError
from wirekafka.worker_threads import LOG_DIRS, run_blocking

log = logging.getLogger("wirekafka.replication")

FETCH_VERSION = 11  # replica_id, current_leader_epoch, log_start_offset; not flexible
OFFSET_FOR_LEADER_EPOCH_VERSION = 3  # with replica_id
RETRY_BACKOFF_S = 0.5  # Kafka's replica.fetch.backoff.ms, after a failed round
CONNECT_TIMEOUT_S = 5.0
CLIENT_ID = "wirekafka-replica-fetcher"


class ReplicaFetchers:
    """Start and stop one fetcher per followed leader (a task of the broker's nursery)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        cluster: ClusterView,
        connector: InterBrokerConnector,
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
    ) -> None:
        self.replicas = replicas
        self.cluster = cluster
        self.connector = connector
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self._running: dict[int, trio.CancelScope] = {}

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                wanted = self.replicas.leaders_followed()
                for leader_id in list(self._running):
                    if leader_id not in wanted:
                        self._running.pop(leader_id).cancel()
                for leader_id in wanted - self._running.keys():
                    scope = trio.CancelScope()
                    self._running[leader_id] = scope
                    nursery.start_soon(self._fetch_from, leader_id, scope)
                await self.replicas.followers_changed.wait()

    async def _fetch_from(self, leader_id: int, scope: trio.CancelScope) -> None:
        with scope:
            while True:
                try:
                    await self._session(leader_id)
                except (OSError, ConnectionError, trio.BrokenResourceError, trio.TooSlowError,
                        ProtocolError) as exc:  # fmt: skip
                    log.warning("fetching from broker %d: %s", leader_id, exc)
                await trio.sleep(RETRY_BACKOFF_S)

    async def _session(self, leader_id: int) -> None:
        endpoint = next((b for b in self.cluster.brokers() if b.node_id == leader_id), None)
        if endpoint is None:
            raise ConnectionError(f"broker {leader_id} is not registered")
        connection = await self.connector.connect(
            endpoint.host, endpoint.port, leader_id, CLIENT_ID, CONNECT_TIMEOUT_S
        )
        async with connection:
            while True:
                partitions = self.replicas.followed_from(leader_id)
                if not partitions:  # none, or each waits out a refusal
                    with trio.move_on_after(RETRY_BACKOFF_S):
                        await self.replicas.followers_changed.wait()
                    continue
                untruncated = [f for f in partitions if not f.truncated]
                if untruncated:
                    await self._truncate(connection, untruncated)
                await self._fetch(connection, [f for f in partitions if f.truncated])

    async def _truncate(self, connection: BrokerConnection, partitions: list[Followed]) -> None:
        """Drop what the leader does not have: each partition's log past the end
        the leader gives for the follower's latest epoch."""
        asked = []
        for waiting in partitions:
            if waiting.log.leader_epochs.latest_epoch >= 0:
                asked.append(waiting)
            else:  # no epochs to ask about: Kafka's fallback, the high watermark
                await self._truncate_to(waiting, waiting.log.high_watermark)
        if not asked:
            return
        topics: dict[str, list[OffsetForLeaderPartition]] = {}
        for f in asked:
            topics.setdefault(f.topic, []).append(
                OffsetForLeaderPartition(
                    partition=f.partition,
                    current_leader_epoch=f.leader_epoch,
                    leader_epoch=f.log.leader_epochs.latest_epoch,
                )
            )
        request = OffsetForLeaderEpochRequest(
            replica_id=self.replicas.broker_id,
            topics=[OffsetForLeaderTopic(topic=t, partitions=p) for t, p in topics.items()],
        )
        response = await connection.call(
            ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, request, 30.0
        )
        assert isinstance(response, OffsetForLeaderEpochResponse)
        by_key = {(f.topic, f.partition): f for f in asked}
        for topic in response.topics:
            for answer in topic.partitions:
                followed = by_key.get((topic.topic, answer.partition))
                if followed is None or not self.replicas.still_followed(followed):
                    continue
                if answer.error_code != ErrorCode.NONE:
                    log.info(
                        "%s-%d: the leader answered OffsetForLeaderEpoch with %s",
                        followed.topic,
                        followed.partition,
                        ErrorCode(answer.error_code).name,
                    )
                    followed.retry_later()
                    continue
                partition_log = followed.log
                if answer.end_offset < 0:  # the leader knows no such epoch: Kafka's fallback
                    await self._truncate_to(followed, partition_log.high_watermark)
                    continue
                end = min(answer.end_offset, partition_log.log_end_offset)
                epochs = partition_log.leader_epochs
                if answer.leader_epoch < epochs.latest_epoch:
                    # the leader lacks this log's latest epoch: this log's records of the
                    # epoch the leader answered for end where the next epoch starts here
                    own_end = epochs.end_offset_for(
                        answer.leader_epoch, partition_log.log_end_offset
                    )[1]
                    if own_end >= 0:
                        end = min(end, own_end)
                await self._truncate_to(followed, end)

    async def _truncate_to(self, followed: Followed, offset: int) -> None:
        partition_log = followed.log
        if not self.replicas.still_followed(followed):
            return
        if offset < partition_log.log_end_offset:
            log.info(
                "%s-%d: truncating from %d to %d to match leader %d at epoch %d",
                followed.topic,
                followed.partition,
                partition_log.log_end_offset,
                offset,
                followed.leader_id,
                followed.leader_epoch,
            )
            await run_blocking(LOG_DIRS, partition_log.truncate_to, offset)
        followed.truncated = True

    async def _fetch(self, connection: BrokerConnection, partitions: list[Followed]) -> None:
        if not partitions:
            return
        topics: dict[str, list[FetchPartition]] = {}
        for f in partitions:
            topics.setdefault(f.topic, []).append(
                FetchPartition(
                    partition=f.partition,
                    current_leader_epoch=f.leader_epoch,
                    fetch_offset=f.log.log_end_offset,
                    log_start_offset=f.log.log_start_offset,
                    partition_max_bytes=self.max_bytes,
                )
            )
        request = FetchRequest(
            replica_id=self.replicas.broker_id,
            max_wait_ms=self.max_wait_ms,
            min_bytes=self.min_bytes,
            max_bytes=max(self.max_bytes, 1),
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchTopic(topic=t, partitions=p) for t, p in topics.items()],
        )
        timeout_s = self.max_wait_ms / 1000 + 30.0
        response = await connection.call(ApiKey.FETCH, FETCH_VERSION, request, timeout_s)
        assert isinstance(response, FetchResponse)
        by_key = {(f.topic, f.partition): f for f in partitions}
        for topic in response.responses:
            for data in topic.partitions:
                followed = by_key.get((topic.topic, data.partition_index))
                if followed is not None:
                    await self._apply(followed, data)

    async def _apply(self, followed: Followed, data: PartitionData) -> None:
        partition_log = followed.log
        if not self.replicas.still_followed(followed):
            return  # moved while the fetch was in flight: its records are not the new leader's
        if data.error_code != ErrorCode.NONE:
            if data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                # the leader's log ends before this one: what is past it goes
                await self._truncate_to(followed, max(0, data.high_watermark))
            else:
                followed.retry_later()
                log.info(
                    "%s-%d: the leader answered the fetch with %s",
                    followed.topic,
                    followed.partition,
                    ErrorCode(data.error_code).name,
                )
            return
        records = data.records
        if isinstance(records, (bytes, bytearray, memoryview)) and len(records):
            whole = _whole_batches_bytes(records)
            if whole:
                payload = bytearray(memoryview(records)[:whole])
                try:
                    while True:
                        try:
                            info = partition_log.append_as_follower(payload, roll=False)
                            break
                        except RollDue:
                            await run_blocking(LOG_DIRS, partition_log.roll_when_due)
                            if not self.replicas.still_followed(followed):
                                return  # moved during the roll
                    if info.flush_due:
                        await run_blocking(LOG_DIRS, partition_log.flush)
                except (StorageError, ProtocolError) as exc:
                    log.error("%s-%d: appending the leader's batches failed: %s",
                              followed.topic, followed.partition, exc)  # fmt: skip
                    followed.retry_later()
                    return
        partition_log.set_high_watermark(min(data.high_watermark, partition_log.log_end_offset))


def _whole_batches_bytes(records: bytes | bytearray | memoryview) -> int:
    """The length of the whole batches at the start of ``records`` (a fetch may end
    in a batch cut short by its byte budget)."""
    end = 0
    for position, header in iter_batches(records, allow_partial_tail=True):
        end = position + header.size_bytes
    return end
