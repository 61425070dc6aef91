"""``__consumer_offsets``: where committed offsets and group metadata are kept.

Each group's records go to partition ``abs(hash(group)) % offsets.topic.num.partitions``
(Kafka's string hash), in Kafka's key/value layout, so Kafka's tools and any
consumer of the topic read them as Kafka's. The topic is compacted; at startup
it is read back to rebuild the offsets and the groups' generations.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

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
from wirekafka.handlers.topics import TopicManager
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import decode_batches, encode_batch
from wirekafka.storage.log import Clock, ReadResult, StorageError

log = logging.getLogger("wirekafka.groups")

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "104857600",  # offsets.topic.segment.bytes
}
NO_VALUE = -1
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

    def ensure_topic(self) -> None:
        if self.exists():
            return
        failed = self.topics.create_topic(OFFSETS_TOPIC, self.partitions, 1, OFFSETS_TOPIC_CONFIGS)
        if failed is not None:
            raise RuntimeError(f"cannot create {OFFSETS_TOPIC}: {failed.message}")

    def coordinator_id(self, group_id: str) -> int:
        """The group's coordinator: the leader of its partition (-1 when leaderless)."""
        self.ensure_topic()
        return self.topics.cluster.leader(OFFSETS_TOPIC, self.partition_of(group_id))

    def leads(self, group_id: str) -> bool:
        """Whether this broker coordinates the group."""
        return self.coordinator_id(group_id) == self.topics.broker_id

    def partition_of(self, group_id: str) -> int:
        return partition_for_group(group_id, self.partitions)

    def _append(self, group_id: str, entries: list[tuple[bytes, bytes | None]]) -> ErrorCode:
        if not entries:
            return ErrorCode.NONE
        self.ensure_topic()
        found = self.topics.partition_log(OFFSETS_TOPIC, self.partition_of(group_id))
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

    def write_offsets(
        self, group_id: str, offsets: dict[tuple[str, int], CommittedOffset | None]
    ) -> ErrorCode:
        entries = []
        for (topic, partition), committed in offsets.items():
            key = OffsetCommitKey(group_id, topic, partition)
            entries.append(encode_offset_commit(key, committed))
        return self._append(group_id, entries)

    def write_group(self, group_id: str, metadata: GroupMetadataValue | None) -> ErrorCode:
        return self._append(group_id, [encode_group_metadata(GroupMetadataKey(group_id), metadata)])

    def load(self) -> Iterator[LoadedOffset | LoadedGroup]:
        """Every record of the topic, partition by partition, oldest first."""
        for partition in range(self.partitions):
            found = self.topics.logs.get_log(OFFSETS_TOPIC, partition)  # the ones kept here
            if found is None:
                continue
            offset = found.log_start_offset
            while offset < found.log_end_offset:
                read = found.read(offset, _READ_BYTES)
                if not isinstance(read, ReadResult) or not read.spans:
                    break
                data = b"".join(span.read_bytes() for span in read.spans)
                for batch in decode_batches(data):
                    for record in batch.records:
                        loaded = _decode(record)
                        if loaded is not None:
                            yield loaded
                    offset = batch.header.next_offset


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
