"""The four codecs of Kafka record data: gzip, snappy, lz4 and zstd.

* gzip: gzip members (the standard library's zlib).
* snappy: Java clients write xerial's block framing (a magic header, then
  length-prefixed raw snappy blocks); librdkafka writes plain raw snappy.
  Both are read; xerial framing is written, as Kafka does.
* lz4: LZ4 frames with independent 64 KiB blocks and no content size, the
  shape Kafka's own reader accepts; magic 0 uses the broken header checksum
  (see :mod:`.lz4_legacy`).
* zstd: zstd frames (``zstandard``), with or without a content size.

Decompression streams: :func:`iter_decompressed` hands the output out in
chunks of at most ``chunk_bytes`` (one snappy block may be larger), so a
reader can look at the records of a batch without holding them all, and it
stops with :class:`DecompressedTooLarge` once the output passes ``max_bytes``,
so a small hostile input cannot exhaust memory or time. Corrupt or cut-off
data raise :class:`ProtocolError`.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Iterator

import cramjam
import lz4.frame
import zstandard

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records import lz4_legacy

DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 256 * 1024


class DecompressedTooLarge(ProtocolError):
    """The data inflate past the limit the reader set."""


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


def _too_big(max_bytes: int) -> DecompressedTooLarge:
    return DecompressedTooLarge(f"decompressed data exceeds {max_bytes} bytes")


# gzip


def _gzip_chunks(data: Buffer, max_bytes: int, chunk_bytes: int) -> Iterator[bytes]:
    pending = bytes(data)
    total = 0
    while pending:  # one gzip member after another
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            out = member.decompress(pending, chunk_bytes)
            pending = member.unconsumed_tail
            total += len(out)
            if total > max_bytes:
                raise _too_big(max_bytes)
            if out:
                yield out
            if member.eof or not (pending or out):
                break
        if not member.eof:
            raise ProtocolError("gzip data is cut off")
        pending = member.unused_data


# snappy


def _raw_snappy_length(block: Buffer) -> int:
    """The uncompressed length a raw snappy block announces (its varint preamble)."""
    length = 0
    for index in range(min(5, len(block))):
        byte = block[index]
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return length
    raise ProtocolError("snappy block has no valid length preamble")


def _raw_snappy_decompress(block: Buffer, budget: int, max_bytes: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise _too_big(max_bytes)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_chunks(data: Buffer, max_bytes: int) -> Iterator[bytes]:
    """Xerial blocks one at a time (Java writes them 32 KiB each); raw snappy,
    one block whose announced length is checked against the limit first."""
    raw = memoryview(data)
    if len(raw) < len(_XERIAL_HEADER) or raw[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        yield _raw_snappy_decompress(raw, max_bytes, max_bytes)
        return
    total = 0
    position = len(_XERIAL_HEADER)
    while position < len(raw):
        if position + 4 > len(raw):
            raise ProtocolError("xerial snappy block length is cut off")
        (size,) = _INT32.unpack_from(raw, position)
        position += 4
        if size < 0 or position + size > len(raw):
            raise ProtocolError(f"xerial snappy block of {size} bytes does not fit")
        out = _raw_snappy_decompress(raw[position : position + size], max_bytes - total, max_bytes)
        total += len(out)
        position += size
        if out:
            yield out


# lz4


def _lz4_chunks(
    data: Buffer, max_bytes: int, legacy_framing: bool, chunk_bytes: int
) -> Iterator[bytes]:
    frame = bytes(data)
    if legacy_framing:
        frame = lz4_legacy.repair_legacy_frame(frame)
    decompressor = lz4.frame.LZ4FrameDecompressor()
    total = 0
    out = decompressor.decompress(frame, max_length=chunk_bytes)
    while True:
        total += len(out)
        if total > max_bytes:
            raise _too_big(max_bytes)
        if out:
            yield out
        if decompressor.eof or decompressor.needs_input:
            break
        out = decompressor.decompress(b"", max_length=chunk_bytes)
    if not decompressor.eof:
        raise ProtocolError("LZ4 frame is cut off")
    if decompressor.unused_data:
        raise ProtocolError(f"{len(decompressor.unused_data)} bytes follow the LZ4 frame")


# zstd


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50  # the upper 28 bits; the low 4 are free
_ZSTD_MAX_BLOCK_BYTES = 128 * 1024
_UINT32_LE = struct.Struct("<I")


def _zstd_pieces(frames: memoryview, chunk_bytes: int) -> Iterator[memoryview]:
    """Cut zstd frames into pieces of whole blocks whose output is known to be
    at most ``chunk_bytes`` (or one block), by reading the frame and block
    headers; a frame that is cut off or malformed raises ProtocolError.

    A zstd decoder hands out all it can decode from what it was given, and an
    RLE block of 4 bytes may stand for 128 KiB: feeding it bounded pieces is
    what bounds each step's output.
    """
    position, end = 0, len(frames)
    while position < end:
        if position + 4 > end:
            raise ProtocolError("zstd frame magic is cut off")
        (magic,) = _UINT32_LE.unpack_from(frames, position)
        if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE_MAGIC:
            if position + 8 > end:
                raise ProtocolError("zstd skippable frame is cut off")
            position += 8 + _UINT32_LE.unpack_from(frames, position + 4)[0]
            continue
        if magic != _ZSTD_MAGIC:
            raise ProtocolError(f"not a zstd frame (magic {magic:#010x})")
        piece_start = position
        if position + 5 > end:
            raise ProtocolError("zstd frame header is cut off")
        descriptor = frames[position + 4]
        single_segment = descriptor & 0x20
        content_size_bytes = (0, 2, 4, 8)[descriptor >> 6] or (1 if single_segment else 0)
        dictionary_id_bytes = (0, 1, 2, 4)[descriptor & 0x03]
        position += 5 + (0 if single_segment else 1) + dictionary_id_bytes + content_size_bytes
        checksum_bytes = 4 if descriptor & 0x04 else 0
        bound = 0
        while True:
            if position + 3 > end:
                raise ProtocolError("zstd block header is cut off")
            block = frames[position] | frames[position + 1] << 8 | frames[position + 2] << 16
            last, kind, size = block & 1, (block >> 1) & 3, block >> 3
            if kind == 3:
                raise ProtocolError("zstd block of the reserved type")
            stored = 1 if kind == 1 else size
            output = size if kind != 2 else _ZSTD_MAX_BLOCK_BYTES
            if bound and bound + output > chunk_bytes:
                yield frames[piece_start:position]
                piece_start, bound = position, 0
            position += 3 + stored
            bound += output
            if position > end:
                raise ProtocolError("zstd block is cut off")
            if last:
                break
        position += checksum_bytes
        if position > end:
            raise ProtocolError("zstd frame checksum is cut off")
        yield frames[piece_start:position]


def _zstd_chunks(data: Buffer, max_bytes: int, chunk_bytes: int) -> Iterator[bytes]:
    decompressor = None
    total = 0
    for piece in _zstd_pieces(memoryview(data), chunk_bytes):
        if decompressor is None or decompressor.eof:  # a frame starts with this piece
            decompressor = zstandard.ZstdDecompressor().decompressobj()
        out = decompressor.decompress(piece)
        total += len(out)
        if total > max_bytes:
            raise _too_big(max_bytes)
        if out:
            yield out
    if decompressor is not None and not decompressor.eof:
        raise ProtocolError("zstd frame is cut off")


def iter_decompressed(
    codec: CompressionType,
    data: Buffer,
    *,
    legacy_lz4: bool = False,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Iterator[bytes]:
    """The decompressed bytes of ``data``, in chunks; malformed or oversized
    input raises ProtocolError (:class:`DecompressedTooLarge` past ``max_bytes``)
    when the reader gets to it."""
    try:
        if codec == CompressionType.GZIP:
            yield from _gzip_chunks(data, max_bytes, chunk_bytes)
        elif codec == CompressionType.SNAPPY:
            yield from _snappy_chunks(data, max_bytes)
        elif codec == CompressionType.LZ4:
            yield from _lz4_chunks(data, max_bytes, legacy_lz4, chunk_bytes)
        elif codec == CompressionType.ZSTD:
            yield from _zstd_chunks(data, max_bytes, chunk_bytes)
        elif len(data) > max_bytes:
            raise _too_big(max_bytes)
        elif len(data):
            yield bytes(data)
    except (zlib.error, cramjam.DecompressionError, RuntimeError, zstandard.ZstdError) as exc:
        raise ProtocolError(f"{codec.name.lower()} data is corrupt: {exc}") from exc


class Compressor:
    """Compresses data handed in piece by piece into one payload of ``codec``.

    ``compress`` returns what is ready, ``flush`` the rest; together they are
    what :func:`compress` gives for the whole. Snappy is written in xerial's
    framing (32 KiB blocks, as Java writes), LZ4 as a frame of independent
    64 KiB blocks without a content size (``legacy_lz4``: magic 0's framing).
    """

    def __init__(self, codec: CompressionType, *, legacy_lz4: bool = False) -> None:
        self.codec = codec
        self._pending = bytearray()  # snappy: input not yet a whole block
        self._started = False
        if codec == CompressionType.GZIP:
            self._gzip = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        elif codec == CompressionType.LZ4:
            self._lz4 = lz4.frame.LZ4FrameCompressor(
                block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False
            )
            self._legacy_lz4 = legacy_lz4
        elif codec == CompressionType.ZSTD:
            self._zstd = zstandard.ZstdCompressor(level=3).compressobj()

    def _start(self) -> bytes:
        self._started = True
        if self.codec == CompressionType.SNAPPY:
            return _XERIAL_HEADER
        if self.codec == CompressionType.LZ4:
            header = self._lz4.begin()
            return lz4_legacy.make_legacy_frame(header) if self._legacy_lz4 else header
        return b""

    def _snappy_blocks(self, everything: bool) -> bytes:
        parts: list[bytes] = []
        pending = self._pending
        while len(pending) >= _XERIAL_BLOCK_BYTES or (everything and pending):
            block = bytes(cramjam.snappy.compress_raw(bytes(pending[:_XERIAL_BLOCK_BYTES])))
            parts += (_INT32.pack(len(block)), block)
            del pending[:_XERIAL_BLOCK_BYTES]
        return b"".join(parts)

    def compress(self, data: Buffer) -> bytes:
        head = b"" if self._started else self._start()
        if self.codec == CompressionType.GZIP:
            return self._gzip.compress(data)
        if self.codec == CompressionType.SNAPPY:
            self._pending += data
            return head + self._snappy_blocks(everything=False)
        if self.codec == CompressionType.LZ4:
            block: bytes = self._lz4.compress(data)
            return head + block
        if self.codec == CompressionType.ZSTD:
            return self._zstd.compress(data)
        return bytes(data)

    def flush(self) -> bytes:
        head = b"" if self._started else self._start()
        if self.codec == CompressionType.GZIP:
            return self._gzip.flush()
        if self.codec == CompressionType.SNAPPY:
            return head + self._snappy_blocks(everything=True)
        if self.codec == CompressionType.LZ4:
            tail: bytes = self._lz4.flush()
            return head + tail
        if self.codec == CompressionType.ZSTD:
            return self._zstd.flush()
        return b""


def compress(codec: CompressionType, data: Buffer, *, legacy_lz4: bool = False) -> bytes:
    """Compress ``data``; ``legacy_lz4`` writes magic 0's LZ4 framing."""
    if codec == CompressionType.ZSTD:  # in one go, the frame says its content size
        return zstandard.ZstdCompressor(level=3).compress(data)
    compressor = Compressor(codec, legacy_lz4=legacy_lz4)
    return compressor.compress(data) + compressor.flush()


def decompress(
    codec: CompressionType,
    data: Buffer,
    *,
    legacy_lz4: bool = False,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """Decompress ``data`` whole; malformed or oversized input raises ProtocolError."""
    chunks = iter_decompressed(
        codec, data, legacy_lz4=legacy_lz4, max_bytes=max_bytes, chunk_bytes=max_bytes + 1
    )
    return b"".join(chunks)
