"""Whole requests and responses: header plus body, for both ends of a connection.

Frames here are bodies without their 4-byte size prefix (see :mod:`.framing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from wirekafka.protocol.api_table import Api, api_for
from wirekafka.protocol.codec import decode_struct, encode_struct
from wirekafka.protocol.codegen import ReadFunction, WriteFunction, struct_codec
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.framing import frame_prefix
from wirekafka.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    peek_request_prefix,
    read_request_header,
    read_response_header,
    read_usual_header,
    request_header_version,
    response_header_bytes,
    response_header_version,
    write_request_header,
)
from wirekafka.protocol.primitives import Buffer, Reader, Writer


@dataclass(slots=True)
class Request:
    """A decoded request, and who sent it: what Kafka's RequestContext carries (the
    client's address, the principal it authenticated as, the listener it came in on).
    Not frozen: a frozen dataclass costs four times as much to build."""

    header: RequestHeader
    api: Api
    body: Any
    client_host: str = ""  # the peer's address as Kafka shows it, "/127.0.0.1"; "" if unknown
    principal: str = "User:ANONYMOUS"  # Type:name, as in Kafka's ACLs
    listener_name: str = ""  # the listener's name (PLAINTEXT, SASL_SSL, or one mapped to those)

    @property
    def version(self) -> int:
        return self.header.api_version


def _served_api(api_key: int, api_version: int) -> Api:
    api = api_for(api_key)
    if api is None:
        raise ProtocolError(f"unknown api key {api_key}")
    if not api.supports(api_version):
        raise ProtocolError(
            f"{api.name} v{api_version} is not served (v{api.min_version}-v{api.max_version} are)"
        )
    return api


def _expect_end(reader: Reader, what: str) -> None:
    if reader.remaining:
        raise ProtocolError(f"{reader.remaining} unexpected bytes after {what}")


class _Served(NamedTuple):
    """What reading a request and writing the response of one API version take,
    looked up once per (api key, version) a client uses."""

    api: Api
    request_header_version: int
    read_request: ReadFunction
    response_header_version: int
    write_response: WriteFunction


_served: dict[tuple[int, int], _Served] = {}


def _served_version(api_key: int, api_version: int) -> _Served:
    found = _served.get((api_key, api_version))
    if found is None:
        api = _served_api(api_key, api_version)  # only served versions are kept
        flexible = api.is_flexible(api_version)
        found = _Served(
            api,
            request_header_version(api.key, api_version, flexible),
            struct_codec(api.request, api_version, flexible).read,
            response_header_version(api_key, flexible),
            struct_codec(api.response, api_version, flexible).write,
        )
        _served[(api_key, api_version)] = found
    return found


def decode_request(
    frame: Buffer, client_host: str = "", principal: str = "User:ANONYMOUS", listener_name: str = ""
) -> Request:
    """Decode a request frame that ``client_host`` sent; an unknown api or
    version is a ProtocolError.

    Bytes after the body are ignored (Kafka ignores them too).

    Callers that must answer unknown versions (ApiVersions) look at
    :func:`~.headers.peek_request_prefix` first.
    """
    api_key, api_version, _ = peek_request_prefix(frame)
    served = _served.get((api_key, api_version)) or _served_version(api_key, api_version)
    api, header_version, read, _, _ = served
    buf = memoryview(frame)
    if buf.format != "B":
        buf = buf.cast("B")
    end = len(buf)
    read_header = read_usual_header(buf, 0, end, header_version) if header_version else None
    if read_header is None:  # field by field: its error names the field that is wrong
        reader = Reader(buf)
        header = read_request_header(reader, header_version)
        pos = reader.pos
    else:
        header, pos = read_header
    body, _ = read(buf, pos, end)
    # Bytes after the body are ignored, as Kafka ignores them: librdkafka 2.16
    # sends three stray bytes after some Metadata v12 requests.
    return Request(header, api, body, client_host, principal, listener_name)


def encode_request(header: RequestHeader, body: Any) -> bytes:
    api = _served_api(header.api_key, header.api_version)
    if not isinstance(body, api.request):
        raise TypeError(f"{type(body).__name__} is not a {api.request.__name__}")
    flexible = api.is_flexible(header.api_version)
    writer = Writer()
    write_request_header(
        writer, header, request_header_version(api.key, header.api_version, flexible)
    )
    encode_struct(body, header.api_version, flexible, writer)
    return writer.getvalue()


def _response_writer(api_key: int, api_version: int, correlation_id: int, body: Any) -> Writer:
    served = _served.get((api_key, api_version)) or _served_version(api_key, api_version)
    api, _, _, header_version, write = served
    if not isinstance(body, api.response):
        raise TypeError(f"{type(body).__name__} is not a {api.response.__name__}")
    writer = Writer()
    writer.raw(response_header_bytes(correlation_id, header_version))
    write(writer, body)
    return writer


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A response frame body as one byte string."""
    return _response_writer(api_key, api_version, correlation_id, body).getvalue()


def encode_response_parts(
    api_key: int, api_version: int, correlation_id: int, body: Any
) -> list[Any]:
    """A whole response, size prefix included, as parts to send in order.

    Record data given as external parts (file spans) stays a part of its own,
    so the sender can move it without copying; a response without such parts
    is one bytearray.
    """
    writer = _response_writer(api_key, api_version, correlation_id, body)
    if writer.in_one_buffer:
        return [writer.prefixed()]
    return [frame_prefix(len(writer)), *writer.parts()]


def decode_response(api_key: int, api_version: int, frame: Buffer) -> tuple[ResponseHeader, Any]:
    api = _served_api(api_key, api_version)
    flexible = api.is_flexible(api_version)
    reader = Reader(frame)
    header = read_response_header(reader, response_header_version(api_key, flexible))
    body: Any = decode_struct(api.response, api_version, flexible, reader)
    _expect_end(reader, f"{api.name} v{api_version} response")
    return header, body
