"""Shared helpers for storage tests: batches, a settable clock, reading a log back."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    CRC_OFFSET,
    HEADER_BYTES,
    MAGIC_OFFSET,
    RecordBatch,
    compute_crc,
    decode_batches,
    encode_batch,
    iter_batches,
    read_batch_header,
    set_base_offset,
)
from wirekafka.storage.log import PartitionLog, ReadResult

BASE_TIME_MS = 1_700_000_000_000


@dataclass
class FakeClock:
    now_ms: int = BASE_TIME_MS

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def make_batch(
    index: int,
    *,
    records: int = 3,
    value_bytes: int = 100,
    timestamp: int | None = None,
    key: bytes | None = None,
    compression: CompressionType = CompressionType.NONE,
) -> bytes:
    """A batch whose contents follow from ``index`` (offsets are assigned on append)."""
    rng = random.Random(index)
    when = BASE_TIME_MS + index * 10 if timestamp is None else timestamp
    return encode_batch(
        [
            Record(
                i,
                when + i,
                key if key is not None else b"key-%06d" % index,
                rng.randbytes(value_bytes),
            )
            for i in range(records)
        ],
        compression=compression,
    )


def with_base_offset(batch: bytes, base_offset: int) -> bytes:
    patched = bytearray(batch)
    set_base_offset(patched, 0, base_offset)
    return bytes(patched)


def read_all(log: PartitionLog, start: int = 0, max_bytes: int = 1 << 20) -> bytes:
    """Every byte from ``start`` to the log end, read span by span."""
    out = bytearray()
    offset = start
    while offset < log.log_end_offset:
        result = log.read(offset, max_bytes)
        assert isinstance(result, ReadResult), result
        if not result.spans:
            break
        data = b"".join(span.read_bytes() for span in result.spans)
        out += data
        last = None
        for _, header in iter_batches(data):
            last = header
        assert last is not None
        offset = last.next_offset
    return bytes(out)


def read_batches(log: PartitionLog, start: int = 0) -> list[RecordBatch]:
    return decode_batches(read_all(log, start))


def unparsable_batch(
    keys: Sequence[bytes | None] = (b"junk",), *, timestamp: int = BASE_TIME_MS
) -> bytes:
    """A batch whose header and CRC are sound but whose records do not parse, as a
    client could write one: ``encode_batch``'s records overwritten with 0xff bytes
    (varints that never end), the CRC computed again."""
    batch = bytearray(
        encode_batch([Record(i, timestamp + i, key, b"value") for i, key in enumerate(keys)])
    )
    batch[HEADER_BYTES:] = b"\xff" * (len(batch) - HEADER_BYTES)
    header = read_batch_header(batch)
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(batch, 0, header.size_bytes))
    return bytes(batch)


def spoil_header(log: PartitionLog, offset: int) -> None:
    """Overwrite the magic byte of the batch holding ``offset`` in its segment file,
    so its header no longer reads as one."""
    for segment in log.segments:
        found = segment.find_batch(offset)
        if found is not None:
            with segment.log_path.open("r+b") as file:
                file.seek(found.position + MAGIC_OFFSET)
                file.write(b"\x07")
            return
    raise AssertionError(f"no batch holds offset {offset}")


def run_child(script: str, directory: Path, *, timeout_s: float = 120) -> dict:
    """Run ``script`` (Python) in a child process, from the repository's root,
    with ``directory`` as its argument; what it printed, as JSON. Used where a
    test needs a process of its own: resource limits, a crash."""
    out = subprocess.run(
        [sys.executable, "-c", script, str(directory)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
