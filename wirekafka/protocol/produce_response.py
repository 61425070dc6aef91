"""Produce responses written straight from their fields, the codec's bytes without its
writer: every produce request is answered, so this runs once per request.

From v8 on, where a partition's answer carries record errors and an error
message, a response in which any has them (a refusal) goes to the codec
(:func:`~wirekafka.protocol.rpc.encode_response_parts`), as do versions
beyond those this module knows. The answer to a request read as a
:class:`~wirekafka.protocol.simple_produce.SimpleProduce` is its one partition's
answer, packed between the bytes every such response to its topic and version
holds (:func:`answer_parts`).
"""

from __future__ import annotations

import struct
from typing import Any

from wirekafka.protocol.messages.produce import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from wirekafka.protocol.primitives import string_bytes, unsigned_varint_bytes
from wirekafka.protocol.rpc import Request, encode_response_parts
from wirekafka.protocol.simple_produce import SimpleProduce

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
# (version, topic name) -> how to pack a response to a SimpleProduce, and the bytes
# before and after its partition's answer (see _one_partition_frame)
_one_partition_frames: dict[tuple[int, str], tuple[struct.Struct, bytes, bytes]] = {}
_MAX_CACHED_NAMES = 4096


def produce_response_parts(
    api_version: int, correlation_id: int, response: ProduceResponse
) -> list[Any]:
    """The whole response, size prefix included, as parts to send in order."""
    frame = _frame(api_version, correlation_id, response)
    if frame is None:
        return encode_response_parts(_API_KEY, api_version, correlation_id, response)
    return [frame]


def answer_parts(
    request: Request | SimpleProduce, answer: ProduceResponse | PartitionProduceResponse
) -> list[Any]:
    """The answer to ``request`` (as :func:`produce_response_parts`): a ProduceResponse,
    or, to a SimpleProduce, its one partition's answer."""
    if type(request) is not SimpleProduce:
        header = request.header  # type: ignore[union-attr]
        return produce_response_parts(header.api_version, header.correlation_id, answer)  # type: ignore[arg-type]
    assert type(answer) is PartitionProduceResponse, "a SimpleProduce's partition's answer"
    version = request.api_version
    if not 0 <= version <= LAST_KNOWN_VERSION or _codec_writes(version, answer):
        whole = ProduceResponse(
            responses=[TopicProduceResponse(name=request.topic, partition_responses=[answer])]
        )
        return produce_response_parts(version, request.correlation_id, whole)
    packer, before, after = _one_partition_frame(version, request.topic)
    size, correlation_id = packer.size - 4, request.correlation_id
    index, error_code, base_offset = answer.index, answer.error_code, answer.base_offset
    if version >= 5:
        return [
            packer.pack(
                size, correlation_id, before, index, error_code, base_offset,
                answer.log_append_time_ms, answer.log_start_offset, after,
            )
        ]  # fmt: skip
    if version >= 2:
        return [
            packer.pack(
                size, correlation_id, before, index, error_code, base_offset,
                answer.log_append_time_ms, after,
            )
        ]  # fmt: skip
    return [packer.pack(size, correlation_id, before, index, error_code, base_offset, after)]


def _one_partition_frame(version: int, topic: str) -> tuple[struct.Struct, bytes, bytes]:
    """A response of one topic and one partition: the struct that packs its size,
    correlation id, the bytes before the partition's answer, the answer's fields and
    the bytes after them (the partition's tail, then the response's end); and
    those two byte strings."""
    key = (version, topic)
    found = _one_partition_frames.get(key)
    if found is None:
        flexible = version >= FIRST_FLEXIBLE_VERSION
        one = _count(1, flexible)
        before = (b"\x00" if flexible else b"") + one + _name(topic, flexible) + one
        after = _PARTITION_TAIL.get(version, b"")
        after += (b"\x00" if flexible else b"") + (_I32.pack(0) if version >= 1 else b"")
        if flexible:
            after += b"\x00"
        fields = (_V5 if version >= 5 else _V2 if version >= 2 else _V0).format[1:]
        packer = struct.Struct(f">ii{len(before)}s{fields}{len(after)}s")
        if len(_one_partition_frames) >= _MAX_CACHED_NAMES:
            _one_partition_frames.clear()
        found = _one_partition_frames[key] = (packer, before, after)
    return found


def _frame(version: int, correlation_id: int, response: ProduceResponse) -> bytearray | None:
    if version > LAST_KNOWN_VERSION or version < 0:
        return None
    flexible = version >= FIRST_FLEXIBLE_VERSION
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
            partition = _partition(version, answer)
            if partition is None:
                return None
            out += partition
        if flexible:
            out += b"\x00"
    if version >= 1:
        out += _I32.pack(response.throttle_time_ms)
    if flexible:
        out += b"\x00"
    _SIZE_AND_CORRELATION.pack_into(out, 0, len(out) - 4, correlation_id)
    return out


def _partition(version: int, answer: PartitionProduceResponse) -> bytes | None:
    """A partition's answer at ``version`` (known here); None if the codec writes it
    (:func:`_codec_writes`)."""
    if _codec_writes(version, answer):
        return None
    tail = _PARTITION_TAIL.get(version, b"")
    if version >= 5:
        return (
            _V5.pack(
                answer.index,
                answer.error_code,
                answer.base_offset,
                answer.log_append_time_ms,
                answer.log_start_offset,
            )
            + tail
        )
    if version >= 2:
        return (
            _V2.pack(answer.index, answer.error_code, answer.base_offset, answer.log_append_time_ms)
            + tail
        )
    return _V0.pack(answer.index, answer.error_code, answer.base_offset)


def _codec_writes(version: int, answer: PartitionProduceResponse) -> bool:
    """Whether the answer has fields of v8 on (record errors, an error message) at a
    version that carries them: those the codec writes."""
    return version in _PARTITION_TAIL and (
        bool(answer.record_errors) or answer.error_message is not None
    )


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
