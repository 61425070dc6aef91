"""Produce responses written straight from their fields, the codec's bytes without its
writer: every produce request is answered, so this runs once per request.

From v8 on, where a partition's answer carries record errors and an error
message, a response in which any has them (a refusal) goes to the codec
(:func:`~wirekafka.protocol.rpc.encode_response_parts`), as do versions
beyond those this module knows.
"""

from __future__ import annotations

import struct
from typing import Any

from wirekafka.protocol.messages.produce import ProduceResponse
from wirekafka.protocol.primitives import string_bytes, unsigned_varint_bytes
from wirekafka.protocol.rpc import encode_response_parts

FIRST_FLEXIBLE_VERSION = 9
LAST_KNOWN_VERSION = 9
_API_KEY = 0

# A partition's answer: index, error code, base offset, then the log append time
# (v2+) and the log start offset (v5+); from v8 an empty record_errors array and
# a null error_message follow, from v9 compact, and no tagged fields.
_V0 = struct.Struct(">ihq")
_V2 = struct.Struct(">ihqq")
_V5 = struct.Struct(">ihqqq")
_PARTITION_TAIL = {8: b"\x00\x00\x00\x00\xff\xff", 9: b"\x01\x00\x00"}
_I32 = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
# topic name -> its length-prefixed bytes, by whether compact (bounded: names recur)
_names: dict[tuple[str, bool], bytes] = {}
_MAX_CACHED_NAMES = 4096


def produce_response_parts(
    api_version: int, correlation_id: int, response: ProduceResponse
) -> list[Any]:
    """The whole response, size prefix included, as parts to send in order."""
    frame = _frame(api_version, correlation_id, response)
    if frame is None:
        return encode_response_parts(_API_KEY, api_version, correlation_id, response)
    return [frame]


def _frame(version: int, correlation_id: int, response: ProduceResponse) -> bytearray | None:
    if version > LAST_KNOWN_VERSION or version < 0:
        return None
    flexible = version >= FIRST_FLEXIBLE_VERSION
    tail = _PARTITION_TAIL.get(version, b"")
    out = bytearray(8)  # the size and correlation id, packed last
    if flexible:
        out += b"\x00"  # the response header's tagged fields
    topics = response.responses
    out += _count(len(topics), flexible)
    for topic in topics:
        out += _name(topic.name, flexible)
        partitions = topic.partition_responses
        out += _count(len(partitions), flexible)
        for answer in partitions:
            if tail and (answer.record_errors or answer.error_message is not None):
                return None  # fields of v8 on
            if version >= 5:
                out += _V5.pack(
                    answer.index,
                    answer.error_code,
                    answer.base_offset,
                    answer.log_append_time_ms,
                    answer.log_start_offset,
                )
            elif version >= 2:
                out += _V2.pack(
                    answer.index, answer.error_code, answer.base_offset, answer.log_append_time_ms
                )
            else:
                out += _V0.pack(answer.index, answer.error_code, answer.base_offset)
            out += tail
        if flexible:
            out += b"\x00"
    if version >= 1:
        out += _I32.pack(response.throttle_time_ms)
    if flexible:
        out += b"\x00"
    _SIZE_AND_CORRELATION.pack_into(out, 0, len(out) - 4, correlation_id)
    return out


def _count(count: int, flexible: bool) -> bytes:
    """An array's length: an int32, or compact (an unsigned varint of count + 1)."""
    return unsigned_varint_bytes(count + 1) if flexible else _I32.pack(count)


def _name(name: str, flexible: bool) -> bytes:
    key = (name, flexible)
    found = _names.get(key)
    if found is None:
        data = string_bytes(name)
        prefix = unsigned_varint_bytes(len(data) + 1) if flexible else len(data).to_bytes(2, "big")
        if len(_names) >= _MAX_CACHED_NAMES:
            _names.clear()
        found = _names[key] = prefix + data
    return found
