"""The LZ4 framing quirk of magic-0 message sets.

Kafka before 0.10 computed the frame descriptor's header checksum (HC) over
the frame's magic number as well as the descriptor, so magic-0 LZ4 data
carries a "wrong" HC byte (KAFKA-3160). Readers of magic 0 must accept that
byte and writers of magic 0 must produce it; magic 1 and 2 use correct frames.

The HC is the second byte of XXH32 over the descriptor, so this module holds a
small XXH32 of its own (the inputs are a few bytes long).
"""

from __future__ import annotations

import struct

from wirekafka.protocol.errors import ProtocolError

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204, little-endian

_PRIME1 = 0x9E3779B1
_PRIME2 = 0x85EBCA77
_PRIME3 = 0xC2B2AE3D
_PRIME4 = 0x27D4EB2F
_PRIME5 = 0x165667B1
_MASK = 0xFFFFFFFF


def _rotl(value: int, count: int) -> int:
    return ((value << count) | (value >> (32 - count))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _PRIME2) & _MASK
    return (_rotl(acc, 13) * _PRIME1) & _MASK


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (the reference algorithm, for short inputs)."""
    length = len(data)
    pos = 0
    if length >= 16:
        v1 = (seed + _PRIME1 + _PRIME2) & _MASK
        v2 = (seed + _PRIME2) & _MASK
        v3 = seed & _MASK
        v4 = (seed - _PRIME1) & _MASK
        while pos + 16 <= length:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 16
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
    else:
        acc = (seed + _PRIME5) & _MASK
    acc = (acc + length) & _MASK
    while pos + 4 <= length:
        (lane,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl((acc + lane * _PRIME3) & _MASK, 17) * _PRIME4) & _MASK
        pos += 4
    while pos < length:
        acc = (_rotl((acc + data[pos] * _PRIME5) & _MASK, 11) * _PRIME1) & _MASK
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _PRIME2) & _MASK
    acc ^= acc >> 13
    acc = (acc * _PRIME3) & _MASK
    acc ^= acc >> 16
    return acc


def _header_checksum_position(frame: bytes) -> int:
    """Where the HC byte sits: after magic, FLG, BD and the optional fields."""
    if len(frame) < 7 or frame[:4] != LZ4_FRAME_MAGIC:
        raise ProtocolError("LZ4 data does not start with a frame header")
    flags = frame[4]
    position = 6
    if flags & 0x08:  # content size present
        position += 8
    if flags & 0x01:  # dictionary id present
        position += 4
    if len(frame) <= position:
        raise ProtocolError("LZ4 frame header is cut off")
    return position


def _with_header_checksum(frame: bytes, covered_from: int) -> bytes:
    position = _header_checksum_position(frame)
    checksum = (xxh32(frame[covered_from:position]) >> 8) & 0xFF
    return frame[:position] + bytes([checksum]) + frame[position + 1 :]


def repair_legacy_frame(frame: bytes) -> bytes:
    """A magic-0 LZ4 frame with its HC byte made correct, for a standard reader."""
    return _with_header_checksum(frame, covered_from=4)


def make_legacy_frame(frame: bytes) -> bytes:
    """A standard LZ4 frame given the HC byte magic-0 readers expect."""
    return _with_header_checksum(frame, covered_from=0)
