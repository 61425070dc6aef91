"""What tools/produce_floor.py wrote to a partition's file, read back for its tests."""

from __future__ import annotations

from pathlib import Path

from wirekafka.storage.segment_reader import LogEnd, LogEntry, scan_log


def floor_batches(segment: Path) -> tuple[bytes, list[LogEntry]]:
    """The file's bytes and its record batches, read by dump-log's reader; asserts
    that every batch is sound (its CRC too) and that only zeros, which the file
    is grown by, follow the last."""
    data = segment.read_bytes()
    *entries, end = scan_log(lambda position, size: data[position : position + size], len(data))
    assert all(type(entry) is LogEntry for entry in entries), entries
    assert type(end) is LogEnd and end.valid_bytes + end.zero_bytes == len(data), end
    return data, entries  # type: ignore[return-value]
