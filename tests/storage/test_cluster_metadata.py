"""cluster-metadata.json: topics and producer-id blocks, kept across restarts."""

from __future__ import annotations

import json
import os

import pytest
import trio

from wirekafka.broker.producers import PRODUCER_ID_BLOCK_SIZE, ProducerIds
from wirekafka.storage.cluster_metadata import (
    CLUSTER_METADATA_FILE,
    ClusterMetadata,
    ClusterMetadataError,
    MetadataSaveError,
    TopicDefinition,
)


@pytest.fixture
def path(tmp_path):
    return tmp_path / CLUSTER_METADATA_FILE


def test_a_missing_file_is_an_empty_cluster(path):
    metadata = ClusterMetadata(path)
    assert metadata.topics() == {}
    assert metadata.allocate_producer_ids(10) == range(0, 10)
    assert path.exists()


def test_topics_round_trip_across_reopen(path):
    metadata = ClusterMetadata(path)
    metadata.put_topics(
        [
            TopicDefinition("orders", 3, {"retention.ms": "1000", "cleanup.policy": "compact"}),
            TopicDefinition("logs", 1),
        ]
    )
    metadata.put_topics([TopicDefinition("orders", 4, {"retention.ms": "2000"})])  # replaced
    metadata.put_topics([TopicDefinition("gone", 2)])
    assert metadata.remove_topic("gone") is True
    assert metadata.remove_topic("gone") is False
    reopened = ClusterMetadata(path)
    assert reopened.topics() == {
        "orders": TopicDefinition("orders", 4, {"retention.ms": "2000"}),
        "logs": TopicDefinition("logs", 1, {}),
    }
    assert reopened.topic("orders") == TopicDefinition("orders", 4, {"retention.ms": "2000"})
    assert reopened.topic("gone") is None


def test_the_file_is_a_version_1_json_document(path):
    metadata = ClusterMetadata(path)
    metadata.put_topics([TopicDefinition("t", 2, {"segment.bytes": "1024"})])
    metadata.allocate_producer_ids(1000)
    assert json.loads(path.read_text()) == {
        "version": 1,
        "topics": {"t": {"partitions": 2, "configs": {"segment.bytes": "1024"}}},
        "producer_id_block_end": 1000,
    }


def test_writes_leave_no_temp_file_behind(path):
    metadata = ClusterMetadata(path)
    for index in range(3):
        metadata.put_topics([TopicDefinition(f"t{index}", 1)])
    metadata.allocate_producer_ids(5)
    assert sorted(p.name for p in path.parent.iterdir()) == [CLUSTER_METADATA_FILE]


def test_a_failed_write_leaves_the_old_file_whole(path, monkeypatch):
    metadata = ClusterMetadata(path)
    metadata.put_topics([TopicDefinition("kept", 1)])
    before = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(MetadataSaveError, match="No space left on device"):
        metadata.put_topics([TopicDefinition("lost", 1)])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert ClusterMetadata(path).topics() == {"kept": TopicDefinition("kept", 1, {})}


def test_a_failed_save_changes_nothing_in_memory(path, full_disk):
    metadata = ClusterMetadata(path)
    metadata.put_topics([TopicDefinition("kept", 2, {"retention.ms": "1000"})])
    assert metadata.allocate_producer_ids(10) == range(0, 10)
    before = path.read_bytes()
    full_disk["full"] = True
    with pytest.raises(MetadataSaveError):
        metadata.put_topics([TopicDefinition("lost", 1), TopicDefinition("kept", 9)])
    with pytest.raises(MetadataSaveError):
        metadata.remove_topic("kept")
    with pytest.raises(MetadataSaveError):
        metadata.set_topic_configs("kept", {"cleanup.policy": "compact"})
    with pytest.raises(MetadataSaveError):
        metadata.allocate_producer_ids(10)
    assert metadata.topics() == {"kept": TopicDefinition("kept", 2, {"retention.ms": "1000"})}
    assert path.read_bytes() == before
    full_disk["full"] = False
    # the block that could not be recorded was never handed out: the next one starts there
    assert metadata.allocate_producer_ids(10) == range(10, 20)
    assert metadata.remove_topic("kept") is True
    assert ClusterMetadata(path).topics() == {}


def test_put_topics_with_nothing_does_not_write(path):
    ClusterMetadata(path).put_topics([])
    assert not path.exists()


def test_producer_id_blocks_never_repeat_across_reopen(path):
    seen: list[int] = []

    async def take(ids: ProducerIds, count: int) -> None:
        for _ in range(count):
            seen.append(await ids.next_id())  # a new block is recorded in a worker thread

    for _ in range(3):
        trio.run(take, ProducerIds(ClusterMetadata(path)), PRODUCER_ID_BLOCK_SIZE + 2)
    assert len(seen) == len(set(seen)) == 3 * (PRODUCER_ID_BLOCK_SIZE + 2)
    assert seen[:3] == [0, 1, 2]
    assert seen[PRODUCER_ID_BLOCK_SIZE + 2] == 2 * PRODUCER_ID_BLOCK_SIZE
    assert ClusterMetadata(path).allocate_producer_ids(1) == range(
        6 * PRODUCER_ID_BLOCK_SIZE, 6 * PRODUCER_ID_BLOCK_SIZE + 1
    )


def test_allocated_blocks_are_recorded_before_use(path):
    metadata = ClusterMetadata(path)
    assert metadata.allocate_producer_ids(7) == range(0, 7)
    assert json.loads(path.read_text())["producer_id_block_end"] == 7
    assert metadata.allocate_producer_ids(3) == range(7, 10)
    assert ClusterMetadata(path).allocate_producer_ids(1) == range(10, 11)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{not json",
        "[]",
        '"text"',
        '{"topics": {}, "producer_id_block_end": 0}',
        '{"version": 2, "topics": {}, "producer_id_block_end": 0}',
        '{"version": 1, "producer_id_block_end": 0}',
        '{"version": 1, "topics": {}}',
        '{"version": 1, "topics": [], "producer_id_block_end": 0}',
        '{"version": 1, "topics": {"t": {}}, "producer_id_block_end": 0}',
        '{"version": 1, "topics": {"t": []}, "producer_id_block_end": 0}',
        '{"version": 1, "topics": {"t": {"partitions": "x"}}, "producer_id_block_end": 0}',
        '{"version": 1, "topics": {"t": {"partitions": 1, "configs": []}},'
        ' "producer_id_block_end": 0}',
        '{"version": 1, "topics": {}, "producer_id_block_end": null}',
        '{"version": 1, "topics": {}, "producer_id_block_end": "many"}',
    ],
)
def test_a_malformed_file_is_a_cluster_metadata_error(path, text):
    path.write_text(text)
    with pytest.raises(ClusterMetadataError, match=CLUSTER_METADATA_FILE):
        ClusterMetadata(path)


def test_an_unreadable_path_is_a_cluster_metadata_error(path):
    path.mkdir()  # a directory where the file should be
    with pytest.raises(ClusterMetadataError):
        ClusterMetadata(path)
