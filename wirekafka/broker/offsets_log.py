"""``__consumer_offsets``: where committed offsets and group metadata are kept.

Each group's records go to partition ``abs(hash(group)) % offsets.topic.num.partitions``
(Kafka's string hash), in Kafka's key/value layout, so Kafka's tools and any
consumer of the topic read them as Kafka's. Only the broker creates the topic,
compacted, with ``offsets.topic.num.partitions`` partitions. At startup it is
read back to rebuild the offsets and the groups' generations; what cannot be
read there (a batch whose records do not parse, a record of unknown layout) is
logged and passed over, never a reason not to start.

Writing to the topic (creating it, appending, possibly rolling and flushing)
blocks: those methods run in worker threads (:class:`GroupRuntime` sends
them through the seam, one at a time); :meth:`OffsetsLog.exists` and the
coordinator's placement never block.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from wirekafka.broker.topics import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS, TopicManager
from wirekafka.groups.offset_store import CommittedOffset
from wirekafka.groups.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata,
    encode_offset_commit,
    partition_for_group,
)
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch, iter_batches
from wirekafka.storage.log import Clock, PartitionLog, ReadResult, StorageError
from wirekafka.worker_threads import blocking

__all__ = [
    "OFFSETS_TOPIC",
    "OFFSETS_TOPIC_CONFIGS",
    "LoadedGroup",
    "LoadedOffset",
    "OffsetsLog",
    "readable_records",
]

log = logging.getLogger("wirekafka.groups")

_READ_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class LoadedOffset:
    group_id: str
    topic: str
    partition: int
    committed: CommittedOffset | None  # None: deleted


@dataclass(frozen=True, slots=True)
class LoadedGroup:
    group_id: str
    metadata: GroupMetadataValue | None  # None: deleted


class OffsetsLog:
    def __init__(self, topics: TopicManager, partitions: int, clock: Clock) -> None:
        self.topics = topics
        self.partitions = partitions
        self.clock = clock

    def exists(self) -> bool:
        existing = self.topics.topic(OFFSETS_TOPIC)
        if existing is not None:
            self.partitions = existing.partitions  # the topic's count rules once it exists
        return existing is not None

    @blocking
    def ensure_topic(self) -> ErrorCode:
        """Create the topic if it is missing: NONE, or COORDINATOR_NOT_AVAILABLE
        when it cannot be recorded (clients look for the coordinator again)."""
        if self.exists():
            return ErrorCode.NONE
        failed = self.topics.create_internal_topic(OFFSETS_TOPIC, self.partitions)
        if failed is not None and failed.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self.exists()  # another broker's count, when it created the topic first
        return ErrorCode.NONE

    def leader_of(self, group_id: str) -> int:
        """The group's coordinator, once the topic exists: the leader of its
        partition (-1 when leaderless)."""
        return self.topics.cluster.leader(OFFSETS_TOPIC, self.partition_of(group_id))

    def partition_of(self, group_id: str) -> int:
        return partition_for_group(group_id, self.partitions)

    @blocking
    def _append(self, group_id: str, entries: list[tuple[bytes, bytes | None]]) -> ErrorCode:
        if not entries:
            return ErrorCode.NONE
        if self.ensure_topic() != ErrorCode.NONE:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        found = self.topics.open_log(OFFSETS_TOPIC, self.partition_of(group_id))
        if isinstance(found, ErrorCode):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        now = self.clock()
        records = [Record(i, now, key, value) for i, (key, value) in enumerate(entries)]
        try:
            found.append(bytearray(encode_batch(records)))
        except StorageError as exc:  # the commit is not stored
            log.error("writing to %s failed: %s", OFFSETS_TOPIC, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE

    @blocking
    def write_offsets(
        self, group_id: str, offsets: dict[tuple[str, int], CommittedOffset | None]
    ) -> ErrorCode:
        entries = []
        for (topic, partition), committed in offsets.items():
            key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
            entries.append(encode_offset_commit(key, committed))
        return self._append(group_id, entries)

    @blocking
    def write_group(self, group_id: str, metadata: GroupMetadataValue | None) -> ErrorCode:
        return self._append(
            group_id, [encode_group_metadata(GroupMetadataKey(group=group_id), metadata)]
        )

    @blocking
    def load(self) -> Iterator[LoadedOffset | LoadedGroup]:
        """Every readable record of the topic, partition by partition, oldest first."""
        for partition in range(self.partitions):
            found = self.topics.logs.get_log(OFFSETS_TOPIC, partition)  # the ones kept here
            if found is None:
                continue
            for record in readable_records(found):
                loaded = _decode(record)
                if loaded is not None:
                    yield loaded


def readable_records(partition_log: PartitionLog) -> Iterator[Record]:
    """Every record of the log that can be parsed, oldest first.

    A batch whose records do not parse (its CRC matched: a client wrote
    junk) is reported once and skipped. Where the log cannot be read (a disk
    error, or a batch header that is not one) it is read again a batch at a
    time, up to the batch that cannot be read; the rest of that segment is
    reported and skipped: reading goes on at the next segment.
    """
    offset = partition_log.log_start_offset
    one_at_a_time = False  # after a read failed: find the last batch that reads
    while offset < partition_log.log_end_offset:
        try:
            read = partition_log.read(offset, 0 if one_at_a_time else _READ_BYTES)
            if not isinstance(read, ReadResult) or not read.spans:
                return
            data = b"".join(span.read_bytes() for span in read.spans)
            batches = list(iter_batches(data))
        except (StorageError, OSError, ProtocolError) as exc:
            if not one_at_a_time:
                one_at_a_time = True
                continue
            one_at_a_time = False
            following = [s.base_offset for s in partition_log.segments if s.base_offset > offset]
            log.error(
                "%s-%d: cannot read from offset %d (%s); %s",
                partition_log.topic, partition_log.partition, offset, exc,
                f"going on at offset {following[0]}" if following else "skipping the rest",
            )  # fmt: skip
            if not following:
                return
            offset = following[0]
            continue
        for position, header in batches:
            for record in partition_log.parsed_records(data, header, position) or ():
                if record.offset >= offset:
                    yield record
            offset = header.next_offset


def _decode(record: Record) -> LoadedOffset | LoadedGroup | None:
    if record.key is None:
        return None
    try:
        key = decode_key(record.key)
        if isinstance(key, OffsetCommitKey):
            committed = None
            if record.value is not None:
                committed = decode_offset_commit_value(record.value)
            return LoadedOffset(key.group, key.topic, key.partition, committed)
        metadata = None if record.value is None else decode_group_metadata_value(record.value)
        return LoadedGroup(key.group, metadata)
    except ProtocolError as exc:
        log.warning(
            "skipping an unreadable %s record at offset %d: %s", OFFSETS_TOPIC, record.offset, exc
        )
        return None
