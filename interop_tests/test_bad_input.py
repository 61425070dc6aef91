"""Malformed input closes only the connection it came on.

Each case opens a raw socket to the live broker, sends something no client
should, and expects the broker to close that connection (the socket reads
EOF). Meanwhile a well-behaved kafka-python producer, on its own
connection, produces before and after every case, and its records must all
be acknowledged at consecutive offsets. An ApiVersions request of a version
the broker does not serve is not malformed: it gets error 35 in the v0 body
format (with the supported ranges) and the connection stays usable.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import uuid
from collections.abc import Iterator

import pytest
from kafka import KafkaProducer

from interop_tests.broker import Broker
from interop_tests.protocol_client import ProtocolClient
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import API_TABLE, ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

MAX_REQUEST_BYTES = 104_857_600  # socket.request.max.bytes, Kafka's default
TIMEOUT_S = 10.0


def header_v1(api_key: int, api_version: int, correlation_id: int, client_id: bytes) -> bytes:
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def api_versions_v99() -> bytes:
    """An ApiVersions request as a client from the future would send it: header v2, compact body."""
    name, version = b"future-client", b"99.0"
    body = bytes([len(name) + 1]) + name + bytes([len(version) + 1]) + version + b"\x00"
    return frame(header_v1(ApiKey.API_VERSIONS, 99, 7, b"future") + b"\x00" + body)


BAD_INPUTS: dict[str, bytes] = {
    # A size prefix one past socket.request.max.bytes: closed before any body arrives.
    "oversized-size-prefix": struct.pack(">i", MAX_REQUEST_BYTES + 1) + b"\x00" * 64,
    "maximum-int32-size-prefix": struct.pack(">i", 2**31 - 1) + b"\x00" * 64,
    "negative-size-prefix": struct.pack(">i", -1) + b"\x00" * 64,
    # Frames whose content is not a request.
    "garbage-frame": frame(bytes(range(256)) * 4),
    "frame-shorter-than-a-header": frame(b"\x00\x12"),
    "unknown-api-key": frame(header_v1(9999, 0, 1, b"bad-client")),
    "unknown-api-key-negative": frame(header_v1(-2, 0, 1, b"bad-client")),
    "unserved-produce-version": frame(header_v1(ApiKey.PRODUCE, 99, 1, b"bad-client")),
    "produce-with-garbage-body": frame(
        header_v1(ApiKey.PRODUCE, 8, 1, b"bad-client") + b"\xff" * 40
    ),
    "metadata-with-truncated-body": frame(
        header_v1(ApiKey.METADATA, 1, 1, b"bad-client") + b"\x00\x00"
    ),
    "client-id-longer-than-frame": frame(struct.pack(">hhih", ApiKey.METADATA, 1, 1, 500) + b"ab"),
}


class WellBehavedProducer:
    """A kafka-python 3 producer that must keep working throughout."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        self.next_offset = 0

    def produce_some(self, count: int = 20) -> None:
        futures = [
            self.producer.send(self.topic, key=b"k%d" % i, value=b"v" * i, partition=0)
            for i in range(count)
        ]
        self.producer.flush(timeout=TIMEOUT_S)
        offsets = [future.get(timeout=TIMEOUT_S).offset for future in futures]
        assert offsets == list(range(self.next_offset, self.next_offset + count))
        self.next_offset += count

    def close(self) -> None:
        self.producer.close(timeout=5)


@pytest.fixture(scope="module")
def producer(broker: Broker) -> Iterator[WellBehavedProducer]:
    well_behaved = WellBehavedProducer(broker.bootstrap, "bad-input-well-behaved")
    try:
        well_behaved.produce_some()
        yield well_behaved
    finally:
        well_behaved.close()


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the broker sends until it closes the connection (fails if it does not)."""
    received = b""
    sock.settimeout(TIMEOUT_S)
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return received
        except TimeoutError:
            pytest.fail(f"the broker kept the connection open for {TIMEOUT_S} s (got {received!r})")
        if not data:
            return received
        received += data


def assert_broker_answers(broker: Broker) -> None:
    with ProtocolClient(broker.host or "", broker.port or 0, timeout_s=TIMEOUT_S) as client:
        assert client.api_versions(3)[ApiKey.PRODUCE][0] == 0


@pytest.mark.parametrize("payload", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_bad_input_closes_only_its_connection(
    broker: Broker, producer: WellBehavedProducer, payload: bytes
) -> None:
    producer.produce_some()
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(payload)  # the broker may close while this is still sending
        received = read_until_closed(sock)
    assert received == b"", f"the broker answered garbage with {received[:100]!r}"
    broker.assert_running()
    producer.produce_some()
    assert_broker_answers(broker)


def test_truncated_frame_then_close(broker: Broker, producer: WellBehavedProducer) -> None:
    """Half a request, then the client goes away: the broker drops the connection quietly."""
    producer.produce_some()
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", 100) + header_v1(ApiKey.METADATA, 1, 1, b"half"))
        sock.shutdown(socket.SHUT_WR)
        assert read_until_closed(sock) == b""
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", 100) + b"\x00\x03")
    broker.assert_running()
    producer.produce_some()
    assert_broker_answers(broker)


def test_many_bad_connections_at_once(broker: Broker, producer: WellBehavedProducer) -> None:
    sockets = [socket.create_connection(broker.address, timeout=TIMEOUT_S) for _ in range(20)]
    try:
        for i, sock in enumerate(sockets):
            sock.sendall(list(BAD_INPUTS.values())[i % len(BAD_INPUTS)])
        for sock in sockets:
            assert read_until_closed(sock) == b""
    finally:
        for sock in sockets:
            sock.close()
    producer.produce_some()


def read_frame(sock: socket.socket, timeout_s: float = TIMEOUT_S) -> bytes:
    """One response frame; fails if the broker closes the connection instead."""
    decoder = FrameDecoder()
    sock.settimeout(timeout_s)
    while (found := decoder.next_frame()) is None:
        data = sock.recv(65536)
        assert data, "the broker closed the connection instead of answering"
        decoder.receive_data(data)
    return bytes(found)


def test_api_versions_of_an_unknown_version(broker: Broker, producer: WellBehavedProducer) -> None:
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        sock.sendall(api_versions_v99())
        response_frame = read_frame(sock)
        # Response header v0 (the correlation id) and the v0 body, nothing more: decoding
        # it as v0 must use up every byte.
        header, body = rpc.decode_response(ApiKey.API_VERSIONS, 0, response_frame)
        assert header.correlation_id == 7
        assert body.error_code == ErrorCode.UNSUPPORTED_VERSION == 35
        served = {api.api_key: (api.min_version, api.max_version) for api in body.api_keys}
        assert served == {api.key: (api.min_version, api.max_version) for api in API_TABLE.values()}
        # The connection stays usable: the client retries with a version it now knows.
        request = rpc.encode_request(
            RequestHeader(ApiKey.API_VERSIONS, 3, 8, "future-client"),
            ApiVersionsRequest(client_software_name="future-client", client_software_version="1"),
        )
        sock.sendall(encode_frame(request))
        header, body = rpc.decode_response(ApiKey.API_VERSIONS, 3, read_frame(sock))
        assert header.correlation_id == 8
        assert body.error_code == 0
        assert {api.api_key for api in body.api_keys} == set(served)
    producer.produce_some()


def test_metadata_naming_a_topic_by_id_is_answered_on_the_same_connection(
    broker: Broker, producer: WellBehavedProducer
) -> None:
    """Not malformed either: a Metadata request naming a topic by id only (name null)
    is answered, and the connection goes on. From v12, UNKNOWN_TOPIC_ID with the id
    (the broker knows no topic ids); in v10 and v11, which cannot name a topic by id,
    INVALID_REQUEST with the name given back as "", as Kafka answers. It used to fail
    to encode the answer and close the connection."""
    topic_id = uuid.UUID("5b2d1e4f-0c3a-4d7e-9f10-2a3b4c5d6e7f")
    by_id = MetadataRequest(topics=[MetadataRequestTopic(topic_id=topic_id, name=None)])
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        for version in (10, 11, 12):
            [topic] = client.request(ApiKey.METADATA, version, by_id).topics
            expected = (
                (ErrorCode.UNKNOWN_TOPIC_ID, None)
                if version >= 12
                else (ErrorCode.INVALID_REQUEST, "")
            )
            assert (topic.error_code, topic.name, topic.topic_id) == (*expected, topic_id)
        named = MetadataRequest(topics=None)
        assert client.request(ApiKey.METADATA, 12, named).brokers  # still usable
    broker.assert_running()
    producer.produce_some()


def test_api_versions_v99_fixture_bytes() -> None:
    """The hand-made v99 request: header v2 (int16 client id, no tags) and a compact body."""
    raw = api_versions_v99()
    assert struct.unpack(">i", raw[:4])[0] == len(raw) - 4
    assert struct.unpack(">hhi", raw[4:12]) == (18, 99, 7)
