"""A tiny blocking Kafka client made of our own codec, for interop tests.

It speaks to a real peer (a Kafka broker, librdkafka's mock cluster) over a
TCP socket: each request is encoded with :func:`rpc.encode_request`, framed
with :func:`encode_frame`, and its response read back with
:class:`FrameDecoder` and decoded with :func:`rpc.decode_response`. One
request is in flight at a time. Every request has a deadline, so a silent
peer makes a test fail instead of hang.
"""

from __future__ import annotations

import socket
import time
from types import TracebackType
from typing import Any, Self

from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from wirekafka.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
)
from wirekafka.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from wirekafka.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from wirekafka.protocol.primitives import Buffer

DEFAULT_TIMEOUT_S = 10.0
_RECV_BYTES = 64 * 1024


def produce_request(
    topic: str, records: bytes, *, acks: int = 1, partition: int = 0, timeout_ms: int = 30_000
) -> ProduceRequest:
    """A Produce request of ``records`` to one partition."""
    return ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=records)]
            )
        ],
    )


def fetch_request(
    topic: str,
    offset: int,
    *,
    partition: int = 0,
    max_wait_ms: int = 100,
    min_bytes: int = 1,
    max_bytes: int = 8 * 1024 * 1024,
) -> FetchRequest:
    """A consumer's Fetch of one partition from ``offset`` (up to ``max_bytes``)."""
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
                    )
                ],
            )
        ],
    )


class ProtocolClientError(Exception):
    """The peer closed the connection, was too slow, or answered out of turn."""


class ProtocolClient:
    """One connection to one broker; use as a context manager."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "wirekafka-interop",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        source_host: str | None = None,
    ) -> None:
        """``source_host``: the local address to connect from (any 127.x.y.z on loopback)."""
        self.client_id = client_id
        self.timeout_s = timeout_s
        source = None if source_host is None else (source_host, 0)
        self._sock = socket.create_connection(
            (host, port), timeout=timeout_s, source_address=source
        )
        self._decoder = FrameDecoder()
        self._next_correlation_id = 1

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def request(self, api_key: int, api_version: int, body: Any) -> Any:
        """Send ``body`` as request ``api_key`` v``api_version``; return the response body.

        Every request must get a response (so no Produce with acks=0).
        """
        correlation_id = self.send(api_key, api_version, body)
        return self.receive(api_key, api_version, correlation_id)

    def send(self, api_key: int, api_version: int, body: Any) -> int:
        """Send a request without waiting for its response; its correlation id (the
        responses come in the order of the requests: :meth:`receive` each)."""
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        header = RequestHeader(api_key, api_version, correlation_id, self.client_id)
        frame_out = encode_frame(rpc.encode_request(header, body))
        self._sock.settimeout(self.timeout_s)
        try:
            self._sock.sendall(frame_out)
        except TimeoutError as exc:
            raise ProtocolClientError(f"could not send within {self.timeout_s} s") from exc
        return correlation_id

    def receive(self, api_key: int, api_version: int, correlation_id: int) -> Any:
        """The response body to the request sent as ``correlation_id``."""
        frame = self._read_frame(time.monotonic() + self.timeout_s)
        response_header, response = rpc.decode_response(api_key, api_version, frame)
        if response_header.correlation_id != correlation_id:
            raise ProtocolClientError(
                f"correlation id {response_header.correlation_id}, expected {correlation_id}"
            )
        return response

    def produce(
        self, topic: str, records: bytes, *, version: int = 9, acks: int = 1, partition: int = 0
    ) -> tuple[int, int]:
        """Produce ``records`` to one partition; (error code, base offset)."""
        response = self.request(
            ApiKey.PRODUCE, version, produce_request(topic, records, acks=acks, partition=partition)
        )
        (topic_response,) = response.responses
        (partition_response,) = topic_response.partition_responses
        return partition_response.error_code, partition_response.base_offset

    def fetch(
        self,
        topic: str,
        offset: int,
        *,
        partition: int = 0,
        version: int = 11,
        max_wait_ms: int = 100,
        min_bytes: int = 1,
        max_bytes: int = 8 * 1024 * 1024,
    ) -> PartitionData:
        """Fetch one partition from ``offset`` (up to ``max_bytes``); its part of the response."""
        response: FetchResponse = self.request(
            ApiKey.FETCH,
            version,
            fetch_request(
                topic,
                offset,
                partition=partition,
                max_wait_ms=max_wait_ms,
                min_bytes=min_bytes,
                max_bytes=max_bytes,
            ),
        )
        if response.error_code:
            raise ProtocolClientError(f"Fetch failed with error {response.error_code}")
        ((answer,),) = (t.partitions for t in response.responses)
        if (response.responses[0].topic, answer.partition_index) != (topic, partition):
            raise ProtocolClientError(
                f"Fetch of {topic}/{partition} answered for "
                f"{response.responses[0].topic}/{answer.partition_index}"
            )
        return answer

    def list_offsets(
        self,
        topic: str,
        timestamp: int,
        *,
        partitions: range = range(1),
        version: int = 4,
        current_leader_epoch: int = -1,
    ) -> list[ListOffsetsPartitionResponse]:
        """ListOffsets of ``partitions`` (partition 0 by default) at ``timestamp`` (-1:
        latest, -2: earliest); the answer for each, in order."""
        response = self.request(
            ApiKey.LIST_OFFSETS,
            version,
            ListOffsetsRequest(
                replica_id=-1,
                isolation_level=0,
                topics=[
                    ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            ListOffsetsPartition(
                                partition_index=p,
                                current_leader_epoch=current_leader_epoch,
                                timestamp=timestamp,
                            )
                            for p in partitions
                        ],
                    )
                ],
            ),
        )
        answers: list[ListOffsetsPartitionResponse] = response.topics[0].partitions
        return answers

    def metadata(self, *topics: str) -> MetadataResponse:
        """Metadata v9 of ``topics``; without any, of the cluster only (its brokers)."""
        response: MetadataResponse = self.request(
            ApiKey.METADATA,
            9,
            MetadataRequest(topics=[MetadataRequestTopic(name=topic) for topic in topics]),
        )
        return response

    def api_versions(self, api_version: int = 2) -> dict[int, tuple[int, int]]:
        """The (min, max) version the peer serves, by api key.

        v2 by default: every broker since Kafka 2.0 serves it, while some peers
        (librdkafka's mock cluster) serve only v0-v2 and answer a v3 request
        with a body that is neither the v0 fallback nor a valid v3 response.
        """
        response: ApiVersionsResponse = self.request(
            ApiKey.API_VERSIONS,
            api_version,
            ApiVersionsRequest(
                client_software_name="wirekafka-interop", client_software_version="0"
            ),
        )
        if response.error_code:
            raise ProtocolClientError(f"ApiVersions failed with error {response.error_code}")
        return {api.api_key: (api.min_version, api.max_version) for api in response.api_keys}

    def _read_frame(self, deadline: float) -> Buffer:
        while (frame := self._decoder.next_frame()) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProtocolClientError(f"no response within {self.timeout_s} s")
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(_RECV_BYTES)
            except TimeoutError as exc:
                raise ProtocolClientError(f"no response within {self.timeout_s} s") from exc
            if not data:
                raise ProtocolClientError("the peer closed the connection")
            self._decoder.receive_data(data)
        return frame
