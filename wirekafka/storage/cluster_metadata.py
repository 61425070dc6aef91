"""What the embedded default (no ZooKeeper) knows beyond the partitions' logs.

Topics (partition count and per-topic config overrides) and the highest
producer id handed out live in ``cluster-metadata.json`` in the first log dir,
rewritten atomically (temp file, fsync, rename) on every change. With
ZooKeeper the same facts live in its znodes instead.

A change that cannot be written (a full disk, no file descriptor left) raises
:class:`MetadataSaveError` and changes nothing: what is in memory is always
what the file says.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirekafka.storage.files import write_atomically
from wirekafka.worker_threads import blocking

CLUSTER_METADATA_FILE = "cluster-metadata.json"
FORMAT_VERSION = 1


class ClusterMetadataError(ValueError):
    """The metadata file cannot be read."""


class MetadataSaveError(Exception):
    """A change to the topics or producer ids could not be recorded; nothing changed.

    Raised by every store of topic metadata (this file, or ZooKeeper)."""


@dataclass(frozen=True, slots=True)
class TopicDefinition:
    """A topic: its partition count, config overrides and replicas per partition
    (always 1 in this file, whose one broker holds every partition; ZooKeeper
    keeps the replicas themselves). ``assignment``: each partition's replicas as
    a client asked for them at creation (CreateTopics' assignments); empty when
    the cluster places them."""

    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    replication_factor: int = 1
    assignment: tuple[tuple[int, ...], ...] = ()


class ClusterMetadata:
    """The topics of the cluster and the producer-id high-water mark, on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._topics: dict[str, TopicDefinition] = {}
        self._producer_id_block_end = 0
        # Changes are written from worker threads, one at a time; readers on the
        # event loop see the dict before or after a change, never half of one.
        self._write_lock = threading.Lock()
        self._load()

    def _load(self) -> None:
        try:
            document: Any = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise ClusterMetadataError(f"{self.path}: {exc}") from exc
        if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
            raise ClusterMetadataError(f"{self.path}: not a version {FORMAT_VERSION} document")
        try:
            for name, entry in document["topics"].items():
                configs = {str(k): str(v) for k, v in entry.get("configs", {}).items()}
                self._topics[name] = TopicDefinition(name, int(entry["partitions"]), configs)
            self._producer_id_block_end = int(document["producer_id_block_end"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ClusterMetadataError(f"{self.path}: malformed: {exc!r}") from exc

    def _save(self, topics: dict[str, TopicDefinition], producer_id_block_end: int) -> None:
        """Write this state to the file; MetadataSaveError when it cannot be."""
        document = {
            "version": FORMAT_VERSION,
            "topics": {
                name: {"partitions": topic.partitions, "configs": topic.configs}
                for name, topic in sorted(topics.items())
            },
            "producer_id_block_end": producer_id_block_end,
        }
        try:
            write_atomically(self.path, json.dumps(document, indent=1).encode() + b"\n")
        except OSError as exc:
            raise MetadataSaveError(f"writing {self.path} failed: {exc}") from exc

    # topics

    def topics(self) -> dict[str, TopicDefinition]:
        return dict(self._topics)

    def topic(self, name: str) -> TopicDefinition | None:
        return self._topics.get(name)

    @blocking
    def put_topics(self, topics: list[TopicDefinition]) -> None:
        """Add or replace topics, in one write."""
        if not topics:
            return
        with self._write_lock:
            changed = dict(self._topics)
            for topic in topics:
                changed[topic.name] = topic
            self._save(changed, self._producer_id_block_end)
            self._topics = changed

    @blocking
    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a known topic's config overrides."""
        topic = self._topics[name]
        self.put_topics([TopicDefinition(name, topic.partitions, dict(configs))])

    @blocking
    def add_partitions(self, name: str, partitions: int, brokers: list[list[int]]) -> None:
        """Raise a known topic's partition count (every partition is this broker's:
        ``brokers`` names no other)."""
        topic = self._topics[name]
        self.put_topics([TopicDefinition(name, partitions, topic.configs)])

    @blocking
    def remove_topic(self, name: str) -> bool:
        with self._write_lock:
            if name not in self._topics:
                return False
            changed = {key: topic for key, topic in self._topics.items() if key != name}
            self._save(changed, self._producer_id_block_end)
            self._topics = changed
            return True

    # producer ids

    @blocking
    def allocate_producer_ids(self, count: int) -> range:
        """A block of producer ids never handed out before, recorded before use."""
        with self._write_lock:
            start = self._producer_id_block_end
            self._save(self._topics, start + count)
            self._producer_id_block_end = start + count
            return range(start, start + count)
