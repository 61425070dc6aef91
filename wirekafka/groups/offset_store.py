"""Committed offsets of every group, in memory; ``__consumer_offsets`` keeps them on disk."""

from __future__ import annotations

from wirekafka.groups.offsets_topic import NO_VALUE, OffsetCommitValue

TopicPartition = tuple[str, int]
# A committed offset is what its __consumer_offsets record holds; only OffsetCommit v1-v4
# set an expire timestamp (their retention time).
CommittedOffset = OffsetCommitValue
NO_EXPIRY = NO_VALUE


class OffsetStore:
    def __init__(self) -> None:
        self._groups: dict[str, dict[TopicPartition, CommittedOffset]] = {}

    def groups(self) -> list[str]:
        return list(self._groups)

    def commit(self, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        self._groups.setdefault(group_id, {}).update(offsets)

    def remove(self, group_id: str, partition: TopicPartition) -> None:
        offsets = self._groups.get(group_id)
        if offsets is not None:
            offsets.pop(partition, None)
            if not offsets:
                del self._groups[group_id]

    def committed(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self._groups.get(group_id, {}))

    def get(self, group_id: str, partition: TopicPartition) -> CommittedOffset | None:
        return self._groups.get(group_id, {}).get(partition)

    def delete_group(self, group_id: str) -> list[TopicPartition]:
        return list(self._groups.pop(group_id, {}))

    def expired(
        self, now_ms: int, retention_ms: int, empty_since: dict[str, int]
    ) -> list[tuple[str, TopicPartition]]:
        """Offsets to drop: those past their own expiry time, and, for groups with
        no members (``empty_since``: group -> when it became empty; groups unknown
        to the coordinator count as empty since their newest commit), those whose
        group has been empty for ``retention_ms`` and whose commit is that old."""
        doomed = []
        for group_id, offsets in self._groups.items():
            empty_at = empty_since.get(group_id)
            for partition, committed in offsets.items():
                if committed.expire_timestamp_ms != NO_EXPIRY:
                    if committed.expire_timestamp_ms <= now_ms:
                        doomed.append((group_id, partition))
                    continue
                if empty_at is None:
                    continue
                since = max(empty_at, committed.commit_timestamp_ms)
                if now_ms - since >= retention_ms:
                    doomed.append((group_id, partition))
        return doomed
