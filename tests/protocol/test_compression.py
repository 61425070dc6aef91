"""The four codecs, their framings, and bounds on decompression."""

from __future__ import annotations

import gzip
import random

import cramjam
import lz4.frame
import pytest
import xxhash
import zstandard

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records import lz4_legacy
from wirekafka.protocol.records.compression import CompressionType, compress, decompress

CODECS = [c for c in CompressionType if c != CompressionType.NONE]
PAYLOADS = [b"", b"a", b"kafka " * 20_000, random.Random(1).randbytes(100_000)]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("payload", PAYLOADS, ids=["empty", "one", "text", "random"])
def test_round_trip(codec, payload):
    assert decompress(codec, compress(codec, payload)) == payload


def test_gzip_is_standard_gzip_and_concatenated_members_are_read():
    data = b"hello " * 100
    assert gzip.decompress(compress(CompressionType.GZIP, data)) == data
    assert decompress(CompressionType.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_snappy_writes_xerial_framing_and_reads_raw_snappy_too():
    data = b"x" * 100_000
    framed = compress(CompressionType.SNAPPY, data)
    assert framed.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_lz4_frames_have_independent_blocks_and_no_content_size():
    frame = compress(CompressionType.LZ4, b"y" * 200_000)
    info = lz4.frame.get_frame_info(frame)
    assert info["block_linked"] is False
    assert info["content_size"] == 0
    assert info["block_size"] == 64 * 1024


def test_xxh32_matches_the_reference():
    rng = random.Random(7)
    for length in range(70):
        data = rng.randbytes(length)
        assert lz4_legacy.xxh32(data) == xxhash.xxh32_intdigest(data)
        assert lz4_legacy.xxh32(data, 99) == xxhash.xxh32_intdigest(data, 99)


def test_magic0_lz4_framing_has_the_broken_header_checksum():
    data = b"legacy " * 1000
    legacy = compress(CompressionType.LZ4, data, legacy_lz4=True)
    standard = compress(CompressionType.LZ4, data)
    # Same frame but for the HC byte, computed over magic + descriptor (KAFKA-3160).
    assert legacy[:6] == standard[:6] and legacy[7:] == standard[7:]
    assert legacy[6] == (xxhash.xxh32_intdigest(legacy[:6]) >> 8) & 0xFF
    assert legacy[6] != standard[6]
    with pytest.raises(ProtocolError):
        decompress(CompressionType.LZ4, legacy)  # a standard reader refuses it
    assert decompress(CompressionType.LZ4, legacy, legacy_lz4=True) == data


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_decompression_is_bounded(codec):
    bomb = compress(codec, b"\x00" * 5_000_000)
    with pytest.raises(ProtocolError, match="exceeds"):
        decompress(codec, bomb, max_bytes=1_000_000)
    assert len(decompress(codec, bomb, max_bytes=5_000_000)) == 5_000_000


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_corrupt_and_truncated_data_raise_protocol_error(codec):
    good = compress(codec, b"some data " * 500)
    for bad in (good[: len(good) // 2], b"\x00" * 20, good[:3]):
        with pytest.raises(ProtocolError):
            decompress(codec, bad)


def test_zstd_frames_without_a_content_size_are_read_and_bounded():
    data = b"z" * 3_000_000
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.frame_content_size(streamed) == -1
    assert decompress(CompressionType.ZSTD, streamed) == data
    with pytest.raises(ProtocolError, match="exceeds"):
        decompress(CompressionType.ZSTD, streamed, max_bytes=1_000_000)
