"""Record batches made byte by byte: records the way clients write them, and
the ways a hostile or broken client gets them wrong, with a valid CRC.

Used by the validator's unit tests and by the interop tests that send them to
a broker.
"""

from __future__ import annotations

import struct

from wirekafka.protocol.primitives import zigzag_encode
from wirekafka.protocol.records.compression import CompressionType, compress
from wirekafka.protocol.records.record_batch import CRC_OFFSET, HEADER_BYTES, compute_crc

_HEADER = struct.Struct(">qiibIhiqqqhii")
BASE_TIMESTAMP = 1_700_000_000_000


def varint(value: int) -> bytes:
    raw = zigzag_encode(value)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def record_bytes(
    offset_delta: int,
    *,
    key: bytes | None = b"k",
    value: bytes | None = b"value",
    headers: list[tuple[bytes, bytes | None]] = (),  # type: ignore[assignment]
    timestamp_delta: int = 0,
    attributes: int = 0,
    length_change: int = 0,
) -> bytes:
    body = bytes([attributes]) + varint(timestamp_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for header_key, header_value in headers:
        body += varint(len(header_key)) + header_key
        body += varint(-1) if header_value is None else varint(len(header_value)) + header_value
    return varint(len(body) + length_change) + body


def batch_of(
    records: bytes,
    count: int,
    codec: CompressionType = CompressionType.NONE,
    *,
    raw: bool = False,
    last_offset_delta: int | None = None,
    max_timestamp_delta: int | None = None,
) -> bytes:
    """A batch holding ``records`` (compressed with ``codec`` unless ``raw``: then
    they are the payload as they are), its header saying ``count`` records, a
    last offset delta of ``count - 1`` and a max timestamp as far past the base
    as the largest timestamp delta of the records, unless given."""
    payload = records if raw or codec == CompressionType.NONE else compress(codec, records)
    batch = bytearray(HEADER_BYTES) + payload
    if last_offset_delta is None:
        last_offset_delta = max(count - 1, 0)
    if max_timestamp_delta is None:
        max_timestamp_delta = largest_timestamp_delta(records) if not raw else 0
    _HEADER.pack_into(
        batch, 0, 0, len(batch) - 12, -1, 2, 0, int(codec), last_offset_delta,
        BASE_TIMESTAMP, BASE_TIMESTAMP + max_timestamp_delta, -1, -1, -1, count,
    )  # fmt: skip
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(batch, 0, len(batch)))
    return bytes(batch)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    raw, shift = 0, 0
    while True:
        byte = data[pos]
        raw |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def largest_timestamp_delta(records: bytes) -> int:
    """The largest timestamp delta among ``records`` (0 if none can be read): the
    records are walked by their lengths alone, as far as that goes."""
    largest, pos = None, 0
    try:
        while pos < len(records):
            length, body = _read_varint(records, pos)
            if length <= 0:
                break
            delta, _ = _read_varint(records, body + 1)
            largest = delta if largest is None else max(largest, delta)
            pos = body + length
    except (IndexError, ValueError):
        pass
    return 0 if largest is None else largest


def uniform(count: int, *, size: int = 100, key: bytes | None = b"key1") -> list[bytes]:
    return [
        record_bytes(i, key=key, value=bytes([i % 251]) * size, timestamp_delta=i // 3)
        for i in range(count)
    ]


# Records that do not parse, or do not fit their batch's header: (records, header count).
BAD_RECORDS: dict[str, tuple[bytes, int]] = {
    "count says more": (record_bytes(0) + record_bytes(1), 3),
    "count says fewer": (record_bytes(0) + record_bytes(1), 1),
    "trailing junk": (record_bytes(0) + b"\x00\x01\x02", 1),
    "length past the end": (record_bytes(0, length_change=5), 1),
    "length short of the fields": (record_bytes(0, length_change=-2) + b"\x00\x00", 1),
    "negative length": (varint(-3) + b"\x00" * 8, 1),
    "tiny length": (varint(2) + b"\x00\x00", 1),
    "overlong length varint": (b"\xff" * 6 + b"\x00" * 8, 1),
    "offset delta out of place": (record_bytes(0) + record_bytes(0), 2),
    "offset delta skips": (record_bytes(0) + record_bytes(2), 2),
    "negative key length": (
        record_bytes(0, key=b"ab")[:1] + b"\x00\x00\x00" + varint(-5) + b"ab\x0avalue\x00",
        1,
    ),
    "key past the record": (
        varint(8) + b"\x00\x00\x00" + varint(50) + b"ab\x00\x00",
        1,
    ),
    "value past the record": (
        varint(8) + b"\x00\x00\x00" + varint(-1) + varint(60) + b"ab\x00",
        1,
    ),
    "negative value length": (
        varint(7) + b"\x00\x00\x00" + varint(-1) + varint(-4) + b"\x00\x00",
        1,
    ),
    "negative header count": (varint(6) + b"\x00\x00\x00\x01\x01" + varint(-1), 1),
    "header count past the record": (record_bytes(0)[:-1] + varint(3), 1),
    "negative header key length": (
        record_bytes(0, headers=[(b"k", b"v")]).replace(b"\x02k\x02v", b"\x01k\x02v"),
        1,
    ),
    "header key not UTF-8": (record_bytes(0, headers=[(b"\xff\xfe", b"v")]), 1),
    "attributes with the top bit": (record_bytes(0, attributes=0x80), 1),
    "overlong timestamp delta": (
        varint(16) + b"\x00" + b"\xff" * 11 + b"\x00\x01\x01\x00",
        1,
    ),
    "empty payload": (b"", 1),
    "timestamps past the header's max": (
        record_bytes(0, timestamp_delta=5) + record_bytes(1, timestamp_delta=9),
        2,
    ),
}
# The header of this case claims a max timestamp 3 ms past the base: not what the records say.
_MAX_TIMESTAMP_DELTAS = {"timestamps past the header's max": 3}


def bad_batch(case: str, codec: CompressionType = CompressionType.NONE) -> bytes:
    """The batch of one of :data:`BAD_RECORDS`, compressed with ``codec``."""
    records, count = BAD_RECORDS[case]
    return batch_of(records, count, codec, max_timestamp_delta=_MAX_TIMESTAMP_DELTAS.get(case))
