"""The one-topic, one-partition produce reader takes what the codec reads the same way,
and leaves everything else to the codec."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.handlers.support import make_batch
from tests.protocol.message_gen import random_struct
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from wirekafka.protocol.rpc import decode_request, encode_request
from wirekafka.protocol.simple_produce import FIRST_VERSION, LAST_VERSION, read_simple_produce

VERSIONS = range(FIRST_VERSION, LAST_VERSION + 1)


def fields_read_by_the_codec(frame: bytes) -> tuple[Any, ...] | None:
    """What the reader must give for ``frame``: the codec's fields if the request is one
    the reader takes, None if it is of another shape; raises ProtocolError if the
    codec refuses it."""
    request = decode_request(frame)
    body: ProduceRequest = request.body
    if body.transactional_id is not None or len(body.topic_data) != 1:
        return None
    [topic] = body.topic_data
    if len(topic.partition_data) != 1 or topic.partition_data[0].records is None:
        return None
    [partition] = topic.partition_data
    header = request.header
    return (
        header.api_version, header.correlation_id, header.client_id, body.acks,
        body.timeout_ms, topic.name, partition.index, bytes(partition.records),
    )  # fmt: skip


def fields_read_here(frame: bytes) -> tuple[Any, ...] | None:
    read = read_simple_produce(bytearray(frame))
    if read is None:
        return None
    return (
        read.api_version, read.correlation_id, read.client_id, read.acks, read.timeout_ms,
        read.topic, read.partition, bytes(read.records),
    )  # fmt: skip


def frame_of(
    version: int, body: ProduceRequest, client_id: str | None = "c", cid: int = 5
) -> bytes:
    return encode_request(RequestHeader(ApiKey.PRODUCE, version, cid, client_id), body)


def one_partition(topic: str, records: bytes, acks: int = 1, index: int = 0) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=index, records=records)]
            )
        ],
    )


def typical_frames(version: int) -> list[bytes]:
    batch = make_batch([b"v" * 200] * 50)
    return [
        frame_of(version, one_partition(topic, records, acks, index), client_id, cid)
        for topic, records, acks, index, client_id, cid in [
            ("bench", batch, 1, 0, "rdkafka", 1),
            ("ünïcødé", batch, -1, 2**31 - 1, None, -(2**31)),
            ("x" * 126, make_batch([b"v"]), 0, 3, "", 2**31 - 1),
            ("t", b"", 1, 0, "ç" * 40, 0),
            ("y" * 249, batch, 1, 0, "c", 9),  # a name too long for one varint byte (v9)
        ]
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_producer_s_requests_are_read_as_the_codec_reads_them(version: int) -> None:
    for frame in typical_frames(version):
        expected = fields_read_by_the_codec(frame)
        assert expected is not None
        read = fields_read_here(frame)
        if version >= 9 and len(expected[5]) >= 127:
            assert read is None  # left to the codec
        else:
            assert read == expected
        assert fields_read_here(frame + b"\x00\x01\x02") == read  # bytes after it: ignored


@pytest.mark.parametrize("version", VERSIONS)
def test_other_shapes_are_left_to_the_codec(version: int) -> None:
    batch = make_batch([b"v"])
    two_partitions = one_partition("t", batch)
    two_partitions.topic_data[0].partition_data.append(PartitionProduceData(index=1, records=batch))
    two_topics = one_partition("t", batch)
    two_topics.topic_data.append(two_topics.topic_data[0])
    transactional = one_partition("t", batch)
    transactional.transactional_id = "tx"
    null_records = one_partition("t", batch)
    null_records.topic_data[0].partition_data[0].records = None
    no_topics = ProduceRequest(acks=1, timeout_ms=1, topic_data=[])
    for body in (two_partitions, two_topics, transactional, null_records, no_topics):
        assert read_simple_produce(bytearray(frame_of(version, body))) is None
    other_api = encode_request(RequestHeader(ApiKey.FETCH, 4, 1, "c"), _fetch_body())
    assert read_simple_produce(bytearray(other_api)) is None


def _fetch_body() -> Any:
    from wirekafka.protocol.messages.fetch import FetchRequest

    return FetchRequest(replica_id=-1, max_wait_ms=1, min_bytes=1, topics=[])


@pytest.mark.parametrize("version", VERSIONS)
def test_random_requests_are_read_as_the_codec_reads_them_or_left_to_it(version: int) -> None:
    rng = random.Random(version)
    taken = 0
    for _ in range(400):
        body = random_struct(rng, ProduceRequest, version)
        if rng.random() < 0.5:  # make the one-partition shape common
            body.transactional_id = None
            body.topic_data = body.topic_data[:1] or [TopicProduceData(name="t")]
            body.topic_data[0].partition_data = body.topic_data[0].partition_data[:1] or [
                PartitionProduceData(index=rng.randint(-5, 5), records=rng.randbytes(20))
            ]
        frame = frame_of(version, body, rng.choice([None, "", "c", "ü" * 30]), rng.getrandbits(31))
        expected = fields_read_by_the_codec(frame)
        read = fields_read_here(frame)
        if read is not None:
            taken += 1
            assert read == expected
        elif expected is not None:  # left to the codec only for a long name (v9)
            assert version >= 9 and len(expected[5].encode()) >= 127
    assert taken > 100


@pytest.mark.parametrize("version", VERSIONS)
def test_damaged_requests_it_takes_are_ones_the_codec_reads_the_same_way(version: int) -> None:
    rng = random.Random(-version)
    for frame in typical_frames(version)[:4]:
        damaged_frames = [frame[:cut] for cut in range(min(len(frame), 400))]
        for _ in range(300):
            damaged = bytearray(frame)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(min(len(damaged), 120))  # the fields, not the records
                damaged[at] = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF, rng.getrandbits(8)])
            damaged_frames.append(bytes(damaged))
        for damaged in damaged_frames:
            read = fields_read_here(damaged)
            if read is None:
                continue
            try:
                expected = fields_read_by_the_codec(damaged)
            except ProtocolError as exc:
                raise AssertionError(f"taken here, refused by the codec: {exc}") from exc
            assert read == expected
