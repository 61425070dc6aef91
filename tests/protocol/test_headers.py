"""Request and response headers, and Kafka's quirks."""

from __future__ import annotations

import random

import pytest

from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.codec import skip_tagged_fields
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.headers import (
    RequestHeader,
    peek_request_prefix,
    read_request_header,
    request_header_version,
    response_header_version,
    write_request_header,
)
from wirekafka.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from wirekafka.protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)
from wirekafka.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from wirekafka.protocol.messages.metadata import MetadataRequest
from wirekafka.protocol.primitives import Reader, Writer


def test_header_versions_follow_flexibility():
    assert request_header_version(ApiKey.METADATA, 8, flexible=False) == 1
    assert request_header_version(ApiKey.METADATA, 9, flexible=True) == 2
    assert request_header_version(7, 0, flexible=False) == 0  # ControlledShutdown v0
    assert response_header_version(ApiKey.METADATA, flexible=True) == 1
    assert response_header_version(ApiKey.METADATA, flexible=False) == 0


def test_client_id_stays_an_int16_string_in_header_v2():
    header = RequestHeader(ApiKey.HEARTBEAT, 4, 0x01020304, "cli")
    frame = rpc.encode_request(header, HeartbeatRequest(group_id="g"))
    # key, version, correlation id, then int16 length 3 and "cli", then 0 tagged fields
    assert frame[:14] == b"\x00\x0c\x00\x04\x01\x02\x03\x04\x00\x03cli\x00"
    assert frame[14:16] == b"\x02g"  # the body's strings are compact


def test_controlled_shutdown_bytes_as_kafkas_specs_lay_them_out():
    # v0: header v0 (no client id), then the broker id
    v0 = rpc.encode_request(
        RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 0, 3, "ignored"),
        ControlledShutdownRequest(broker_id=2),
    )
    assert v0 == b"\x00\x07\x00\x00\x00\x00\x00\x03" + b"\x00\x00\x00\x02"
    assert rpc.decode_request(v0).header == RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 0, 3, None)
    # v2 adds the broker epoch; v3 is flexible: header v2, tagged-field sections
    v2 = rpc.encode_request(
        RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 2, 3, "c"),
        ControlledShutdownRequest(broker_id=2, broker_epoch=0x1234),
    )
    assert v2[8:] == b"\x00\x01c" + b"\x00\x00\x00\x02" + (0x1234).to_bytes(8, "big")
    v3 = rpc.encode_request(
        RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 3, 3, "c"),
        ControlledShutdownRequest(broker_id=2, broker_epoch=0x1234),
    )
    assert v3[8:] == b"\x00\x01c\x00" + b"\x00\x00\x00\x02" + (0x1234).to_bytes(8, "big") + b"\x00"
    response = ControlledShutdownResponse(
        error_code=0, remaining_partitions=[RemainingPartition(topic_name="t", partition_index=1)]
    )
    # v0-v2: error code, int32 count, int16 string, int32; v3 compact, with tagged fields
    assert rpc.encode_response(ApiKey.CONTROLLED_SHUTDOWN, 1, 3, response)[4:] == (
        b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x01"
    )
    assert rpc.encode_response(ApiKey.CONTROLLED_SHUTDOWN, 3, 3, response)[4:] == (
        b"\x00" + b"\x00\x00" + b"\x02" + b"\x02t" + b"\x00\x00\x00\x01\x00" + b"\x00"
    )


def test_null_client_id():
    header = RequestHeader(ApiKey.HEARTBEAT, 0, 9, None)
    frame = rpc.encode_request(header, HeartbeatRequest(group_id="g"))
    assert frame[8:10] == b"\xff\xff"
    assert rpc.decode_request(frame).header == header


def test_api_versions_response_uses_header_v0_even_when_flexible():
    body = ApiVersionsResponse(api_keys=[ApiVersion(api_key=0, min_version=0, max_version=9)])
    frame = rpc.encode_response(ApiKey.API_VERSIONS, 3, 77, body)
    # correlation id, then straight into the body: error code 0 (no tagged-field byte)
    assert frame[:6] == b"\x00\x00\x00\x4d\x00\x00"
    assert rpc.decode_response(ApiKey.API_VERSIONS, 3, frame)[1] == body


def test_flexible_responses_use_header_v1():
    frame = rpc.encode_response(ApiKey.HEARTBEAT, 4, 5, HeartbeatResponse())
    assert frame[:5] == b"\x00\x00\x00\x05\x00"  # correlation id, empty tagged fields


def test_peek_reads_unknown_versions():
    frame = rpc.encode_request(RequestHeader(ApiKey.API_VERSIONS, 3, 42, "c"), ApiVersionsRequest())
    future = frame[:2] + b"\x00\x63" + frame[4:]  # ApiVersions v99
    assert peek_request_prefix(future) == (ApiKey.API_VERSIONS, 99, 42)
    with pytest.raises(ProtocolError, match="not served"):
        rpc.decode_request(future)


def test_unknown_api_key_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="unknown api key"):
        rpc.decode_request(b"\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff")


def test_truncated_header_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        peek_request_prefix(b"\x00\x03\x00")


def test_trailing_bytes_after_a_request_are_ignored():
    # librdkafka 2.16 sends Metadata v12 with three stray bytes; Kafka ignores them.
    frame = rpc.encode_request(RequestHeader(ApiKey.METADATA, 12, 3, "rdkafka"), MetadataRequest())
    request = rpc.decode_request(frame + b"\x01\x00\x00")
    assert request.body == MetadataRequest()
    assert request.header.correlation_id == 3


def _field_by_field(reader: Reader, header_version: int) -> RequestHeader:
    """The request header as read before the one-read path (the oracle)."""
    api_key, api_version, correlation_id = reader.int16(), reader.int16(), reader.int32()
    client_id = reader.nullable_string() if header_version >= 1 else None
    if header_version >= 2:
        skip_tagged_fields(reader)
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def _outcome(read, data: bytes, header_version: int):
    reader = Reader(data)
    try:
        return read(reader, header_version), reader.pos
    except ProtocolError as exc:
        return "ProtocolError", str(exc)


def _headers() -> list[bytes]:
    frames = []
    for client_id in (None, "", "rdkafka", "é" * 70):
        for version in (1, 2):
            writer = Writer()
            write_request_header(writer, RequestHeader(0, 9, 7, client_id), version)
            frames.append(writer.getvalue() + b"body")
    return frames


@pytest.mark.parametrize("header_version", [0, 1, 2])
def test_headers_read_at_once_as_field_by_field(header_version):
    rng = random.Random(header_version)
    edges = [b"\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"\xc3(", b"\xff\xfe", b"\x00\x00\x01"]
    for frame in _headers():
        cases = [frame[:cut] for cut in range(len(frame) + 1)]
        for at in range(min(len(frame), 16)):
            cases += [frame[:at] + edge + frame[at + len(edge) :] for edge in edges]
        cases += [frame[:14] + b"\x02\x07\x01x\x00\x00" + frame[15:], rng.randbytes(20)]
        for data in cases:
            expected = _outcome(_field_by_field, data, header_version)
            assert _outcome(read_request_header, data, header_version) == expected, data.hex()
