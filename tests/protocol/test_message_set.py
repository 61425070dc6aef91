"""Message sets (magic 0 and 1), compressed wrappers included."""

from __future__ import annotations

import struct
import zlib

import pytest

from tests.protocol.records_gen import sample_records
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.compression import CompressionType, compress
from wirekafka.protocol.records.message_set import decode_message_set, encode_message_set
from wirekafka.protocol.records.record import NO_TIMESTAMP, Record, TimestampType


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_round_trip_keeps_offsets_keys_values_and_timestamps(magic, codec):
    records = sample_records(5, base_offset=300, with_headers=False)
    messages = decode_message_set(encode_message_set(records, magic=magic, compression=codec))
    assert [m.offset for m in messages] == [r.offset for r in records]
    assert [(m.key, m.value) for m in messages] == [(r.key, r.value) for r in records]
    expected_times = [r.timestamp if magic == 1 else NO_TIMESTAMP for r in records]
    assert [m.timestamp for m in messages] == expected_times
    assert {m.magic for m in messages} == {magic}
    assert {m.compression for m in messages} == {codec}


def test_uncompressed_message_layout_magic1():
    data = encode_message_set([Record(7, 1000, b"k", b"val")], magic=1)
    offset, size, crc, magic, attributes, timestamp = struct.unpack_from(">qiIbbq", data)
    assert (offset, size, magic, attributes, timestamp) == (7, len(data) - 12, 1, 0, 1000)
    assert crc == zlib.crc32(data[16:])
    assert data[26:] == b"\x00\x00\x00\x01k\x00\x00\x00\x03val"


def test_magic1_wrapper_holds_relative_inner_offsets():
    records = [Record(100 + i, 10 + i, None, b"v") for i in range(3)]
    data = encode_message_set(records, magic=1, compression=CompressionType.GZIP)
    (wrapper_offset,) = struct.unpack_from(">q", data)
    assert wrapper_offset == 102
    inner = zlib.decompress(data[34:], 16 + zlib.MAX_WBITS)  # after the wrapper's value length
    assert struct.unpack_from(">q", inner)[0] == 0  # first inner offset is relative


def test_magic0_wrapper_holds_absolute_inner_offsets():
    records = [Record(100 + i, 0, None, b"v") for i in range(3)]
    data = encode_message_set(records, magic=0, compression=CompressionType.GZIP)
    inner = zlib.decompress(data[26:], 16 + zlib.MAX_WBITS)
    assert struct.unpack_from(">q", inner)[0] == 100


def test_log_append_time_wrapper_stamps_its_records():
    records = [Record(i, 5, None, b"v") for i in range(2)]
    data = encode_message_set(
        records, magic=1, compression=CompressionType.SNAPPY, log_append_time_ms=999
    )
    messages = decode_message_set(data)
    assert [m.timestamp for m in messages] == [999, 999]
    assert {m.timestamp_type for m in messages} == {TimestampType.LOG_APPEND_TIME}


def test_crc_mismatch_raises():
    data = bytearray(encode_message_set([Record(0, 0, None, b"value")], magic=0))
    data[-1] ^= 1
    with pytest.raises(ProtocolError, match="CRC"):
        decode_message_set(data)
    assert decode_message_set(data, verify_crc=False)[0].value != b"value"


def test_partial_tail_is_dropped_only_when_allowed():
    data = encode_message_set(sample_records(3, with_headers=False), magic=1)
    with pytest.raises(ProtocolError):
        decode_message_set(data[:-4])
    assert len(decode_message_set(data[:-4], allow_partial_tail=True)) == 2


def _message(offset: int, attributes: int, value: bytes) -> bytes:
    body = struct.pack(">bbqi", 1, attributes, 0, -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def test_nested_compression_is_refused():
    gzip_codec = int(CompressionType.GZIP)
    innermost = _message(0, 0, b"v")
    middle = _message(0, gzip_codec, compress(CompressionType.GZIP, innermost))
    outer = _message(0, gzip_codec, compress(CompressionType.GZIP, middle))
    assert decode_message_set(middle)[0].value == b"v"
    with pytest.raises(ProtocolError, match="compressed message holds"):
        decode_message_set(outer)


@pytest.mark.parametrize("magic", [2, 7, -1])
def test_unknown_magic_raises(magic):
    data = bytearray(encode_message_set([Record(0, 0, None, b"v")], magic=0))
    data[16] = magic & 0xFF
    with pytest.raises(ProtocolError):
        decode_message_set(data, verify_crc=False)
