"""Sample records for record-format tests."""

from __future__ import annotations

import random

from wirekafka.protocol.records.record import Record


def _payload(rng: random.Random, size: int) -> bytes:
    """Compressible but not constant bytes, so every codec really compresses."""
    return bytes(rng.choice(b"abcd\x00\xff") for _ in range(size))


def sample_records(
    count: int = 6, *, base_offset: int = 0, with_headers: bool = True, seed: int = 0
) -> list[Record]:
    """Records with null and empty keys/values, headers, and uneven timestamps."""
    rng = random.Random(seed)
    records = []
    for index in range(count):
        key = None if index % 3 == 0 else f"key-{index}".encode()
        value = None if index % 4 == 2 else _payload(rng, rng.choice([0, 5, 300]))
        headers = [("trace", b"t%d" % index), ("empty", None)] if with_headers and index % 2 else []
        records.append(
            Record(
                base_offset + index,
                1_700_000_000_000 + rng.randint(-5000, 5000),
                key,
                value,
                headers,
            )
        )
    return records
