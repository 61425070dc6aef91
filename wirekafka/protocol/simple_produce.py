"""The produce request most producers send, read without the codec: one topic, one
partition, one batch of records, no transactional id (Produce v3-v9).

Such a request is read with a few ``struct`` unpacks into one small object
instead of a tree of structs; a producer sends thousands a second. Whatever
this reader does not take (another shape or version, a transactional id,
null records, tagged fields, bytes that do not parse) it leaves to the codec
(:func:`~wirekafka.protocol.rpc.decode_request`), which reads it or names
what is wrong. What it does take, the codec would read the same way: the
same fields, and bytes after the request ignored.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from wirekafka.protocol.codegen import read_uvarint

FIRST_VERSION = 3  # from v3 a partition's data is one record batch, and there is a transactional id
FIRST_FLEXIBLE_VERSION = 9
LAST_VERSION = 9

_PREFIX = struct.Struct(">hhih")  # api key, version, correlation id, client id length
# non-flexible: transactional id length (-1: null), acks, timeout, topic count, name length
_REQUIREMENTS = struct.Struct(">hhiih")
_PARTITION = struct.Struct(">iii")  # partition count, index, records length (non-flexible)
_ACKS_TIMEOUT = struct.Struct(">hi")
_INDEX = struct.Struct(">i")


class SimpleProduce(NamedTuple):
    """A produce request of one topic and one partition (see the module)."""

    api_version: int
    correlation_id: int
    client_id: str | None
    acks: int
    timeout_ms: int
    topic: str
    partition: int
    records: memoryview  # a view of the frame


_new = tuple.__new__  # a SimpleProduce without the call through its __new__


def read_simple_produce(frame: bytearray | bytes) -> SimpleProduce | None:
    """``frame`` (a request body, without its size prefix) as a SimpleProduce, or None
    if it is not one this reader takes (the codec then reads it)."""
    end = len(frame)
    if end < 30:
        return None
    api_key, version, correlation_id, length = _PREFIX.unpack_from(frame)
    if api_key != 0 or not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    pos = 10
    client_id = None
    if length >= 0:
        if pos + length > end:
            return None
        client_id = _text(frame, pos, length)
        if client_id is None:
            return None
        pos += length
    elif length != -1:
        return None
    if version >= FIRST_FLEXIBLE_VERSION:
        return _flexible(frame, pos, end, version, correlation_id, client_id)
    if end - pos < 14:
        return None
    transaction, acks, timeout_ms, topics, length = _REQUIREMENTS.unpack_from(frame, pos)
    if transaction != -1 or topics != 1:
        return None
    pos += 14
    if length < 0 or end - pos < length + 12:
        return None
    topic = _text(frame, pos, length)
    if topic is None:
        return None
    pos += length
    partitions, index, size = _PARTITION.unpack_from(frame, pos)
    pos += 12
    if partitions != 1 or size < 0 or end - pos < size:
        return None
    records = memoryview(frame)[pos : pos + size]
    return _new(
        SimpleProduce,
        (version, correlation_id, client_id, acks, timeout_ms, topic, index, records),
    )


def _flexible(
    frame: bytearray | bytes,
    pos: int,
    end: int,
    version: int,
    correlation_id: int,
    client_id: str | None,
) -> SimpleProduce | None:
    """The rest of a flexible (v9+) request, after its client id: compact strings and
    arrays, and every tagged-field section empty."""
    # the header's tagged fields (none), a null transactional id, acks, timeout, one topic
    if end - pos < 10 or frame[pos] != 0 or frame[pos + 1] != 0 or frame[pos + 8] != 2:
        return None
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos + 2)
    length = frame[pos + 9] - 1  # a name under 127 bytes: its length in one byte
    pos += 10
    if not 0 <= length < 0x7F or end - pos < length + 6:
        return None
    topic = _text(frame, pos, length)
    if topic is None:
        return None
    pos += length
    if frame[pos] != 2:  # one partition
        return None
    index = _INDEX.unpack_from(frame, pos + 1)[0]
    pos += 5
    size, pos = read_uvarint(frame, pos, end)  # the records' length + 1, as the codec reads it
    size -= 1  # -1: null records, left to the codec (the handler refuses them); -2: unreadable
    if size < 0 or end - pos < size + 3:
        return None
    records_at = pos
    pos += size
    if frame[pos] or frame[pos + 1] or frame[pos + 2]:  # partition, topic, request tags
        return None
    records = memoryview(frame)[records_at : records_at + size]
    return _new(
        SimpleProduce,
        (version, correlation_id, client_id, acks, timeout_ms, topic, index, records),
    )


def _text(frame: bytearray | bytes, pos: int, length: int) -> str | None:
    """The UTF-8 string of ``length`` bytes at ``pos``; None if it is not UTF-8."""
    try:
        return str(frame[pos : pos + length], "utf-8")
    except UnicodeDecodeError:
        return None
