"""The four codecs of Kafka record data: gzip, snappy, lz4 and zstd.

* gzip: gzip members (the standard library's zlib).
* snappy: Java clients write xerial's block framing (a magic header, then
  length-prefixed raw snappy blocks); librdkafka writes plain raw snappy.
  Both are read; xerial framing is written, as Kafka does.
* lz4: LZ4 frames with independent 64 KiB blocks and no content size, the
  shape Kafka's own reader accepts; magic 0 uses the broken header checksum
  (see :mod:`.lz4_legacy`).
* zstd: zstd frames (``zstandard``), with or without a content size.

Decompression stops with a :class:`ProtocolError` once the output passes
``max_bytes``, so a small hostile input cannot exhaust memory.
"""

from __future__ import annotations

import enum
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records import lz4_legacy

DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024


class CompressionType(enum.IntEnum):
    """The codec in the low three bits of a batch's or message's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


COMPRESSION_MASK = 0x07

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_BYTES = 32 * 1024
_INT32 = struct.Struct(">i")


def compression_of(attributes: int) -> CompressionType:
    codec = attributes & COMPRESSION_MASK
    try:
        return CompressionType(codec)
    except ValueError:
        raise ProtocolError(f"unknown compression codec {codec}") from None


def _too_big(max_bytes: int) -> ProtocolError:
    return ProtocolError(f"decompressed data exceeds {max_bytes} bytes")


# gzip


def _gzip_compress(data: Buffer) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _gzip_decompress(data: Buffer, max_bytes: int) -> bytes:
    out = bytearray()
    pending = bytes(data)
    while pending:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += member.decompress(pending, max_bytes + 1 - len(out))
        if len(out) > max_bytes or member.unconsumed_tail:
            raise _too_big(max_bytes)
        if not member.eof:
            raise ProtocolError("gzip data is cut off")
        pending = member.unused_data  # another member may follow
    return bytes(out)


# snappy


def _raw_snappy_length(block: bytes) -> int:
    """The uncompressed length a raw snappy block announces (its varint preamble)."""
    length = 0
    for index in range(min(5, len(block))):
        byte = block[index]
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return length
    raise ProtocolError("snappy block has no valid length preamble")


def _raw_snappy_decompress(block: bytes, budget: int, max_bytes: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise _too_big(max_bytes)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_BYTES]))
        parts += (_INT32.pack(len(block)), block)
    return b"".join(parts)


def _snappy_decompress(data: Buffer, max_bytes: int) -> bytes:
    raw = bytes(data)
    if not raw.startswith(_XERIAL_MAGIC) or len(raw) < len(_XERIAL_HEADER):
        return _raw_snappy_decompress(raw, max_bytes, max_bytes)
    out = bytearray()
    position = len(_XERIAL_HEADER)
    while position < len(raw):
        if position + 4 > len(raw):
            raise ProtocolError("xerial snappy block length is cut off")
        (size,) = _INT32.unpack_from(raw, position)
        position += 4
        if size < 0 or position + size > len(raw):
            raise ProtocolError(f"xerial snappy block of {size} bytes does not fit")
        block = raw[position : position + size]
        out += _raw_snappy_decompress(block, max_bytes - len(out), max_bytes)
        position += size
    return bytes(out)


# lz4


def _lz4_compress(data: Buffer, legacy_framing: bool) -> bytes:
    frame = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    return lz4_legacy.make_legacy_frame(frame) if legacy_framing else frame


def _lz4_decompress(data: Buffer, max_bytes: int, legacy_framing: bool) -> bytes:
    frame = bytes(data)
    if legacy_framing:
        frame = lz4_legacy.repair_legacy_frame(frame)
    decompressor = lz4.frame.LZ4FrameDecompressor()
    out = decompressor.decompress(frame, max_length=max_bytes + 1)
    if len(out) > max_bytes:
        raise _too_big(max_bytes)
    if not decompressor.eof:
        raise ProtocolError("LZ4 frame is cut off")
    return out


# zstd


def _zstd_compress(data: Buffer) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(data)


def _zstd_decompress(data: Buffer, max_bytes: int) -> bytes:
    # Kafka's writers (zstd-jni, librdkafka, kafka-python) emit a single frame.
    frame = bytes(data)
    content_size = zstandard.frame_content_size(frame)
    if content_size > max_bytes:
        raise _too_big(max_bytes)
    try:
        return zstandard.ZstdDecompressor().decompress(
            frame, max_output_size=max_bytes, allow_extra_data=False
        )
    except zstandard.ZstdError as exc:
        if content_size == -1:  # no size in the header: the cap may be what stopped it
            raise ProtocolError(
                f"zstd frame is corrupt or its output exceeds {max_bytes} bytes: {exc}"
            ) from exc
        raise


def compress(codec: CompressionType, data: Buffer, *, legacy_lz4: bool = False) -> bytes:
    """Compress ``data``; ``legacy_lz4`` writes magic 0's LZ4 framing."""
    if codec == CompressionType.GZIP:
        return _gzip_compress(data)
    if codec == CompressionType.SNAPPY:
        return _snappy_compress(data)
    if codec == CompressionType.LZ4:
        return _lz4_compress(data, legacy_lz4)
    if codec == CompressionType.ZSTD:
        return _zstd_compress(data)
    return bytes(data)


def decompress(
    codec: CompressionType,
    data: Buffer,
    *,
    legacy_lz4: bool = False,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """Decompress ``data``; malformed or oversized input raises ProtocolError."""
    try:
        if codec == CompressionType.GZIP:
            return _gzip_decompress(data, max_bytes)
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(data, max_bytes)
        if codec == CompressionType.LZ4:
            return _lz4_decompress(data, max_bytes, legacy_lz4)
        if codec == CompressionType.ZSTD:
            return _zstd_decompress(data, max_bytes)
    except (zlib.error, cramjam.DecompressionError, RuntimeError, zstandard.ZstdError) as exc:
        raise ProtocolError(f"{codec.name.lower()} data is corrupt: {exc}") from exc
    return bytes(data)
