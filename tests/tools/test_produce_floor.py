"""tools/produce_floor.py, the producer rows' socket→file limit: what it writes and answers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.handlers.support import produce_request
from tests.tools.floor_files import floor_batches
from tools.produce_floor import Floor, partition_file
from wirekafka.protocol.api_table import ApiKey, api_for
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from wirekafka.protocol.messages.fetch import FetchRequest
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import ATTRIBUTES_OFFSET, encode_batch
from wirekafka.protocol.rpc import decode_response, encode_request

TOPIC = "t"


def batch(count: int, first: int = 0) -> bytes:
    return encode_batch(
        [Record(i, 1_700_000_000_000 + i, None, b"v%d" % (first + i), []) for i in range(count)]
    )


def frame(api_key: ApiKey, version: int, correlation_id: int, body: object) -> bytearray:
    return bytearray(encode_request(RequestHeader(api_key, version, correlation_id, "test"), body))


def produce(
    correlation_id: int, partition: int, records: bytes, acks: int = 1, topic: str = TOPIC
) -> bytearray:
    return frame(
        ApiKey.PRODUCE, 9, correlation_id, produce_request(topic, records, partition, acks=acks)
    )


def answered(api_key: ApiKey, version: int, answer: bytes | bytearray) -> tuple[int, object]:
    assert int.from_bytes(answer[:4], "big") == len(answer) - 4
    header, body = decode_response(api_key, version, answer[4:])
    return header.correlation_id, body


def written(directory: Path, partition: int) -> list[tuple[int, int | None, bytes]]:
    """(base offset, record count, the batch from its attributes on) of each batch the
    partition's file holds, up to the zeros it is grown by."""
    data, entries = floor_batches(partition_file(directory, TOPIC, partition))
    return [
        (
            entry.base_offset,
            entry.record_count,
            data[entry.position + ATTRIBUTES_OFFSET : entry.position + entry.size_bytes],
        )
        for entry in entries
    ]


@pytest.fixture
def floor(tmp_path: Path):
    found = Floor(TOPIC, 8, tmp_path, "127.0.0.1", 9092)
    yield found
    found.close()


def test_produces_are_written_with_their_offsets_and_answered_in_order(floor, tmp_path):
    first, second, other = batch(3), batch(2, 3), batch(4)
    answers = floor.answer([produce(1, 5, first), produce(2, 5, second), produce(3, 2, other)])
    bodies = [answered(ApiKey.PRODUCE, 9, answer) for answer in answers]
    assert [correlation for correlation, _ in bodies] == [1, 2, 3]
    partitions = [body.responses[0].partition_responses[0] for _, body in bodies]
    assert [(p.index, p.error_code, p.base_offset) for p in partitions] == [
        (5, 0, 0),
        (5, 0, 3),
        (2, 0, 0),
    ]
    assert written(tmp_path, 5) == [(0, 3, first[21:]), (3, 2, second[21:])]
    assert written(tmp_path, 2) == [(0, 4, other[21:])]
    # the next request to a partition goes on from its last offset and file position
    [answer] = floor.answer([produce(4, 5, batch(1))])
    assert (
        answered(ApiKey.PRODUCE, 9, answer)[1].responses[0].partition_responses[0].base_offset == 5
    )
    assert [base for base, _, _ in written(tmp_path, 5)] == [0, 3, 5]


def test_an_unknown_partition_is_refused_and_nothing_is_written(floor, tmp_path):
    answers = floor.answer([produce(1, 8, batch(1)), produce(2, 0, batch(1), topic="other")])
    for answer in answers:
        partition = answered(ApiKey.PRODUCE, 9, answer)[1].responses[0].partition_responses[0]
        assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert all(written(tmp_path, index) == [] for index in range(8))


def test_acks_0_is_written_without_an_answer(floor, tmp_path):
    answers = floor.answer([produce(1, 0, batch(2), acks=0), produce(2, 0, batch(1))])
    assert len(answers) == 1
    assert (
        answered(ApiKey.PRODUCE, 9, answers[0])[1].responses[0].partition_responses[0].base_offset
        == 2
    )
    assert [base for base, _, _ in written(tmp_path, 0)] == [0, 2]


def test_metadata_leads_every_partition_here(floor):
    request = MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)])
    [answer] = floor.answer([frame(ApiKey.METADATA, 9, 7, request)])
    correlation_id, body = answered(ApiKey.METADATA, 9, answer)
    assert correlation_id == 7
    assert [(b.node_id, b.host, b.port) for b in body.brokers] == [(0, "127.0.0.1", 9092)]
    [topic] = body.topics
    assert topic.name == TOPIC
    assert [(p.partition_index, p.leader_id, p.isr_nodes) for p in topic.partitions] == [
        (index, 0, [0]) for index in range(8)
    ]


def test_api_versions_are_wirekafka_s_so_a_client_picks_the_same(floor):
    [answer] = floor.answer(
        [
            frame(
                ApiKey.API_VERSIONS,
                3,
                1,
                ApiVersionsRequest(client_software_name="test", client_software_version="1"),
            )
        ]
    )
    body = answered(ApiKey.API_VERSIONS, 3, answer)[1]
    assert body.error_code == ErrorCode.NONE
    keys = {api.api_key: api.max_version for api in body.api_keys}
    assert keys[ApiKey.PRODUCE] >= 3 and keys[ApiKey.FETCH] >= 4  # librdkafka's record batches


@pytest.mark.parametrize("version", [0, 3, 4])
def test_api_versions_are_answered_at_every_version_wirekafka_serves(
    floor: Floor, version: int
) -> None:
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1")
    [answer] = floor.answer([frame(ApiKey.API_VERSIONS, version, 1, request)])
    body = answered(ApiKey.API_VERSIONS, version, answer)[1]
    assert isinstance(body, ApiVersionsResponse)
    assert body.error_code == ErrorCode.NONE


def test_an_api_versions_version_wirekafka_does_not_serve_is_refused_at_v0(floor: Floor) -> None:
    served = api_for(ApiKey.API_VERSIONS)
    assert served is not None
    # the codec writes no version it does not serve: the prefix by hand, a null client id
    prefix = struct.pack(">hhih", ApiKey.API_VERSIONS, served.max_version + 1, 1, -1)
    [answer] = floor.answer([bytearray(prefix)])
    correlation_id, body = answered(ApiKey.API_VERSIONS, 0, answer)
    assert correlation_id == 1
    assert isinstance(body, ApiVersionsResponse)
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_a_request_it_does_not_answer_is_a_protocol_error(floor):
    fetch = FetchRequest(max_wait_ms=0, min_bytes=1, isolation_level=0, topics=[])
    with pytest.raises(ProtocolError, match="api key 1 "):
        floor.answer([frame(ApiKey.FETCH, 4, 1, fetch)])
    two_partitions = produce_request(TOPIC, batch(1), 0)
    two_partitions.topic_data[0].partition_data *= 2
    with pytest.raises(ProtocolError, match="one topic and one partition"):
        floor.answer([frame(ApiKey.PRODUCE, 9, 2, two_partitions)])
    with pytest.raises(ProtocolError, match="10 bytes are no record batch"):
        floor.answer([produce(3, 0, b"x" * 10)])
