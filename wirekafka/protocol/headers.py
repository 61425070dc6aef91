"""Request and response headers, with Kafka's quirks.

* Request header v0: api key, api version, correlation id. v1 adds the client
  id, v2 a tagged-field section. The client id is an int16-length string even
  in v2, where every other string is compact.
* Response header v0: the correlation id. v1 adds a tagged-field section.
  Which header a message uses follows from whether its version is flexible,
  except that ApiVersions responses always use v0 (a client must be able to
  read the answer before it knows what the broker speaks).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from wirekafka.protocol.codec import skip_tagged_fields, write_empty_tagged_fields
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer, Reader, Writer

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7

_HEADER_PREFIX = struct.Struct(">hhi")
_HEADER_V1_PREFIX = struct.Struct(">hhih")  # and the client id's length


# Not frozen: a frozen dataclass costs four times as much to build, once per request.
@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


@dataclass(slots=True)
class ResponseHeader:
    correlation_id: int


def request_header_version(api_key: int, api_version: int, flexible: bool) -> int:
    if flexible:
        return 2
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0  # the one request that predates the client id
    return 1


def response_header_version(api_key: int, flexible: bool) -> int:
    return 1 if flexible and api_key != API_VERSIONS_KEY else 0


def peek_request_prefix(frame: Buffer) -> tuple[int, int, int]:
    """The key, version and correlation id that open every request.

    They sit at fixed places in all header versions, so they can be read
    before knowing whether the broker supports the request.
    """
    if len(frame) < _HEADER_PREFIX.size:
        raise ProtocolError(f"request of {len(frame)} bytes is too short for a header")
    prefix: tuple[int, int, int] = _HEADER_PREFIX.unpack_from(frame)
    return prefix


def read_request_header(reader: Reader, header_version: int) -> RequestHeader:
    if header_version >= 1:
        read = read_usual_header(reader.buf, reader.pos, reader.end, header_version)
        if read is not None:
            header, reader.pos = read
            return header
    api_key = reader.int16()
    api_version = reader.int16()
    correlation_id = reader.int32()
    client_id = reader.nullable_string() if header_version >= 1 else None
    if header_version >= 2:
        skip_tagged_fields(reader)
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def read_usual_header(
    buf: memoryview, pos: int, end: int, header_version: int
) -> tuple[RequestHeader, int] | None:
    """A v1 or v2 header read at once, and the position after it, if it is whole,
    its client id UTF-8 and (v2) its tagged-field section empty; else None, for
    the field-by-field read of :func:`read_request_header` to read it or raise
    its error."""
    if end - pos < _HEADER_V1_PREFIX.size:
        return None
    api_key, api_version, correlation_id, length = _HEADER_V1_PREFIX.unpack_from(buf, pos)
    pos += _HEADER_V1_PREFIX.size
    client_id = None
    if 0 <= length <= end - pos:
        try:
            client_id = str(buf[pos : pos + length], "utf-8")
        except UnicodeDecodeError:
            return None
        pos += length
    elif length != -1:
        return None
    if header_version >= 2:
        if pos >= end or buf[pos] != 0:
            return None
        pos += 1
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def write_request_header(writer: Writer, header: RequestHeader, header_version: int) -> None:
    writer.int16(header.api_key)
    writer.int16(header.api_version)
    writer.int32(header.correlation_id)
    if header_version >= 1:
        writer.nullable_string(header.client_id)
    if header_version >= 2:
        write_empty_tagged_fields(writer)


def read_response_header(reader: Reader, header_version: int) -> ResponseHeader:
    correlation_id = reader.int32()
    if header_version >= 1:
        skip_tagged_fields(reader)
    return ResponseHeader(correlation_id)


def response_header_bytes(correlation_id: int, header_version: int) -> bytes:
    """A response header, v0 or v1 (with an empty tagged-field section), encoded."""
    return _RESPONSE_HEADERS[header_version].pack(correlation_id)


_RESPONSE_HEADERS = (struct.Struct(">i"), struct.Struct(">ix"))  # v0; v1: no tagged fields


def write_response_header(writer: Writer, header: ResponseHeader, header_version: int) -> None:
    writer.int32(header.correlation_id)
    if header_version >= 1:
        write_empty_tagged_fields(writer)
