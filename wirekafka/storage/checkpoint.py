"""Offset checkpoint files: ``recovery-point-offset-checkpoint`` and friends.

Kafka's text format: a version line (0), a count line, then one
``<topic> <partition> <offset>`` line per partition. Files are replaced
atomically, so a reader sees the whole old file or the whole new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from wirekafka.storage.files import write_atomically
from wirekafka.worker_threads import blocking

CHECKPOINT_VERSION = 0

TopicPartition = tuple[str, int]


class CorruptCheckpointError(ValueError):
    pass


@blocking
def write_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines += [
        f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())
    ]
    write_atomically(path, ("\n".join(lines) + "\n").encode())


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """The offsets in a checkpoint file; an absent file holds none."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    try:
        if int(lines[0]) != CHECKPOINT_VERSION:
            raise CorruptCheckpointError(f"{path}: unknown version {lines[0]!r}")
        count = int(lines[1])
        offsets = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.split()
            offsets[(topic, int(partition))] = int(offset)
    except (IndexError, ValueError) as exc:
        raise CorruptCheckpointError(f"{path}: malformed checkpoint ({exc})") from exc
    if len(offsets) != count:
        raise CorruptCheckpointError(f"{path}: expected {count} entries, found {len(offsets)}")
    return offsets
