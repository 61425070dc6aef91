"""Record batches between our codec and librdkafka, for every compression codec.

The peer is librdkafka's in-process mock cluster (``test.mock.num.brokers``),
which stores produced batches as they were sent (setting only the base offset
and leader epoch) and serves one batch per Fetch, so the batches in each
direction are the writer's own bytes:

* librdkafka -> ours: a confluent-kafka Producer writes two batches (one per
  flush, several messages each); our Fetch request reads them back and our
  ``decode_batches`` must give the codec, a valid CRC and every record as
  produced, at the offsets librdkafka's delivery reports gave.
* ours -> librdkafka: ``encode_batch`` writes two batches that go out in our
  Produce requests; fetched back, they must be our bytes, and a confluent-kafka
  Consumer (with ``check.crcs``) must read every record, at the offsets the
  produce responses gave.

Both directions use the same messages: keys, null keys, empty keys and
values, tombstones, headers with a null value, a repeated header key and a
non-ASCII key, timestamps that go backwards inside a batch, and a value large
enough for the codecs to have something to compress.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from interop_tests.protocol_client import ProtocolClient, produce_request
from wirekafka.protocol.api_table import API_TABLE, ApiKey
from wirekafka.protocol.messages.produce import (
    ProduceResponse,
)
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    crc_matches,
    decode_batches,
    encode_batch,
    iter_batches,
)

CODECS = list(CompressionType)
PARTITION = 0
TIMEOUT_S = 10.0  # bound of every wait; a passing run takes well under a second per test
MIN_FETCH_VERSION = 4  # record batches, isolation level, last stable offset
MIN_PRODUCE_VERSION = 3  # record batches

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True)
class Sample:
    """A message as both sides see it, offset aside."""

    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


T0 = 1_700_000_000_000
# Each round is one batch.
ROUNDS: tuple[tuple[Sample, ...], ...] = (
    (
        Sample(b"key-0", b"value-0", [("trace", b"abc")], T0),
        Sample(None, b"no key", [], T0 + 1),
        Sample(b"tombstone", None, [], T0 + 2),
        Sample(b"", b"", [("empty", b"")], T0 - 5_000),  # empty is not null; time goes back
        Sample(
            b"headers",
            b"many headers",
            [("a", b"1"), ("null", None), ("a", b"2"), ("ключ", "значение".encode())],
            T0 + 3,
        ),
        Sample(b"big", b"0123456789abcdef" * 1024, [("size", b"16384")], T0 + 4),
    ),
    (
        Sample(b"second-batch", b"value", [], T0 + 10_000),
        Sample(None, None, [("only", None)], T0 + 10_001),  # null key, tombstone, null header
        Sample(b"last", b"\x00\xff" * 100, [], T0 + 9_000),
    ),
)


def _librdkafka_codec(codec: CompressionType) -> str:
    return codec.name.lower()


@dataclass(frozen=True, slots=True)
class MockCluster:
    host: str
    port: int

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[MockCluster]:
    """A one-broker mock cluster; it lives as long as the producer that made it."""
    anchor = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    try:
        metadata = anchor.list_topics(timeout=TIMEOUT_S)
        (broker,) = metadata.brokers.values()
        yield MockCluster(broker.host, broker.port)
    finally:
        anchor.close()


@pytest.fixture
def client(mock_cluster: MockCluster) -> Iterator[ProtocolClient]:
    with ProtocolClient(mock_cluster.host, mock_cluster.port, timeout_s=TIMEOUT_S) as client:
        yield client


@pytest.fixture(scope="module")
def peer_versions(mock_cluster: MockCluster) -> dict[int, tuple[int, int]]:
    """What the mock broker serves, asked with our ApiVersions request."""
    with ProtocolClient(mock_cluster.host, mock_cluster.port, timeout_s=TIMEOUT_S) as client:
        return client.api_versions()


def _common_version(peer_versions: dict[int, tuple[int, int]], key: ApiKey, minimum: int) -> int:
    """The highest version of ``key`` both we and the peer serve, at least ``minimum``."""
    peer_low, peer_high = peer_versions[key]
    ours = API_TABLE[key]
    version = min(peer_high, ours.max_version)
    assert version >= max(minimum, peer_low, ours.min_version), (
        f"{key.name}: peer serves v{peer_low}-v{peer_high}, we v{ours.min_version}-"
        f"v{ours.max_version}, the test needs v{minimum}+"
    )
    return version


def _deadline() -> float:
    return time.monotonic() + TIMEOUT_S


def _time_left(deadline: float, waiting_for: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        pytest.fail(f"timed out after {TIMEOUT_S} s waiting for {waiting_for}")
    return left


def _unique_topic(direction: str, codec: CompressionType) -> str:
    return f"{direction}-{_librdkafka_codec(codec)}-{time.monotonic_ns()}"


# librdkafka -> ours


def _produce_with_librdkafka(bootstrap: str, topic: str, codec: CompressionType) -> list[list[int]]:
    """Produce ROUNDS, one batch per round; the offsets of each round's messages."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": _librdkafka_codec(codec),
            "linger.ms": 60_000,  # only flush() sends, so each round is one batch
            "batch.num.messages": 10_000,
            "acks": "all",
            "log_level": 3,
        }
    )
    delivered: dict[int, int] = {}  # offset by message index
    errors: list[KafkaError] = []
    try:
        # The partition's leader must be known before the first message: messages produced
        # earlier wait in a queue of no partition, and if the metadata comes while flush()
        # is sending, librdkafka sends them as they move over, one batch each.
        metadata = producer.list_topics(topic, timeout=TIMEOUT_S)
        assert metadata.topics[topic].error is None
        assert metadata.topics[topic].partitions[PARTITION].leader >= 0
        index = 0
        for samples in ROUNDS:
            for sample in samples:
                producer.produce(
                    topic,
                    value=sample.value,
                    key=sample.key,
                    partition=PARTITION,
                    timestamp=sample.timestamp,
                    headers=list(sample.headers),
                    on_delivery=partial(_on_delivery, delivered, errors, index),
                )
                index += 1
            assert producer.flush(TIMEOUT_S) == 0, "librdkafka did not deliver within the timeout"
        assert not errors, errors
    finally:
        producer.close()
    offsets: list[list[int]] = []
    index = 0
    for samples in ROUNDS:
        offsets.append([delivered[index + i] for i in range(len(samples))])
        index += len(samples)
    return offsets


def _on_delivery(
    delivered: dict[int, int],
    errors: list[KafkaError],
    index: int,
    error: KafkaError | None,
    message: Message,
) -> None:
    if error is not None:
        errors.append(error)
        return
    offset = message.offset()
    assert offset is not None
    delivered[index] = offset


def _fetch_with_ours(
    client: ProtocolClient, version: int, topic: str, end_offset: int
) -> list[bytes]:
    """The record data of every Fetch response it takes to read offsets 0 to ``end_offset``.

    The mock cluster answers a Fetch with one batch at most, so this fetches
    from each batch's next offset until the end.
    """
    chunks: list[bytes] = []
    offset = 0
    deadline = _deadline()
    while offset < end_offset:
        _time_left(deadline, f"offset {end_offset} in {topic}")
        partition = client.fetch(topic, offset, partition=PARTITION, version=version)
        assert partition.error_code == 0
        if not partition.records:
            continue  # not there yet
        assert partition.high_watermark == end_offset
        records = bytes(partition.records)  # a view into the response frame
        *_, (_, last) = iter_batches(records, allow_partial_tail=True)
        chunks.append(records)
        offset = last.next_offset
    assert offset == end_offset
    return chunks


@pytest.mark.parametrize("codec", CODECS, ids=_librdkafka_codec)
def test_librdkafka_batches_decode_with_ours(
    mock_cluster: MockCluster,
    peer_versions: dict[int, tuple[int, int]],
    client: ProtocolClient,
    codec: CompressionType,
) -> None:
    topic = _unique_topic("from-librdkafka", codec)
    offsets = _produce_with_librdkafka(mock_cluster.bootstrap, topic, codec)
    end_offset = sum(len(samples) for samples in ROUNDS)
    assert [offset for round_offsets in offsets for offset in round_offsets] == list(
        range(end_offset)
    )

    chunks = _fetch_with_ours(
        client, _common_version(peer_versions, ApiKey.FETCH, MIN_FETCH_VERSION), topic, end_offset
    )

    found = [
        (chunk, position, batch)
        for chunk in chunks
        for (position, _), batch in zip(
            iter_batches(chunk, allow_partial_tail=True),
            decode_batches(chunk, allow_partial_tail=True),
            strict=True,
        )
    ]
    assert len(found) == len(ROUNDS), "expected one batch per flush"
    for (chunk, position, batch), samples, round_offsets in zip(
        found, ROUNDS, offsets, strict=True
    ):
        header = batch.header
        assert header.compression == codec
        assert crc_matches(chunk, position, header)
        assert header.timestamp_type == TimestampType.CREATE_TIME
        assert header.base_offset == round_offsets[0]
        assert header.record_count == len(samples)
        assert header.last_offset == round_offsets[-1]
        assert header.max_timestamp == max(sample.timestamp for sample in samples)
        assert batch.records == [
            Record(offset, sample.timestamp, sample.key, sample.value, sample.headers)
            for offset, sample in zip(round_offsets, samples, strict=True)
        ]


# ours -> librdkafka


def _produce_with_ours(
    client: ProtocolClient, version: int, topic: str, codec: CompressionType
) -> tuple[list[bytes], list[list[int]]]:
    """Produce ROUNDS as our batches, one request each; the batches and each round's offsets."""
    batches: list[bytes] = []
    offsets: list[list[int]] = []
    for samples in ROUNDS:
        # Offsets start at 0 in every batch: the broker assigns the real ones.
        batch = encode_batch(
            [
                Record(delta, sample.timestamp, sample.key, sample.value, sample.headers)
                for delta, sample in enumerate(samples)
            ],
            compression=codec,
        )
        request = produce_request(
            topic, batch, partition=PARTITION, timeout_ms=int(TIMEOUT_S * 1000)
        )
        response: ProduceResponse = client.request(ApiKey.PRODUCE, version, request)
        (topic_response,) = response.responses
        assert topic_response.name == topic
        (partition,) = topic_response.partition_responses
        assert partition.index == PARTITION
        assert partition.error_code == 0, f"produce failed with error {partition.error_code}"
        batches.append(batch)
        offsets.append([partition.base_offset + delta for delta in range(len(samples))])
    return batches, offsets


def _split_batches(chunks: Sequence[bytes]) -> list[bytes]:
    return [
        chunk[position : position + header.size_bytes]
        for chunk in chunks
        for position, header in iter_batches(chunk, allow_partial_tail=True)
    ]


def _without_broker_fields(batch: bytes) -> bytes:
    """A batch less its base offset and leader epoch, which the broker sets (outside the CRC)."""
    return batch[8:12] + batch[16:]


def _consume_with_librdkafka(bootstrap: str, topic: str, count: int) -> list[Message]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"interop-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "check.crcs": True,
            "log_level": 3,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, PARTITION, 0)])
        consumed: list[Message] = []
        deadline = _deadline()
        while len(consumed) < count:
            message = consumer.poll(min(_time_left(deadline, f"{count} messages"), 1.0))
            if message is None:
                continue
            error = message.error()
            assert error is None, f"librdkafka could not read the batch: {error}"
            consumed.append(message)
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, PARTITION), timeout=TIMEOUT_S
        )
        assert (low, high) == (0, count)
        return consumed
    finally:
        consumer.close()


def _fields(message: Message) -> tuple[int | None, bytes | None, bytes | None, int]:
    """Offset, key, value and timestamp, which must be a CreateTime."""
    timestamp_type, timestamp = message.timestamp()
    assert timestamp_type == TIMESTAMP_CREATE_TIME
    return message.offset(), message.key(), message.value(), timestamp


def _headers(message: Message) -> Headers:
    raw_headers = message.headers() or []
    assert isinstance(raw_headers, list)  # librdkafka gives a list, duplicates and order kept
    headers: Headers = []
    for key, value in raw_headers:
        assert value is None or isinstance(value, bytes)
        headers.append((key, value))
    return headers


@pytest.mark.parametrize("codec", CODECS, ids=_librdkafka_codec)
def test_our_batches_decode_with_librdkafka(
    mock_cluster: MockCluster,
    peer_versions: dict[int, tuple[int, int]],
    client: ProtocolClient,
    codec: CompressionType,
) -> None:
    topic = _unique_topic("from-ours", codec)
    with Producer({"bootstrap.servers": mock_cluster.bootstrap, "log_level": 3}) as producer:
        # The mock cluster creates a topic (of 4 partitions) when first asked about it.
        metadata = producer.list_topics(topic, timeout=TIMEOUT_S)
        assert metadata.topics[topic].error is None
        assert PARTITION in metadata.topics[topic].partitions

    sent, offsets = _produce_with_ours(
        client, _common_version(peer_versions, ApiKey.PRODUCE, MIN_PRODUCE_VERSION), topic, codec
    )
    end_offset = sum(len(samples) for samples in ROUNDS)
    assert [offset for round_offsets in offsets for offset in round_offsets] == list(
        range(end_offset)
    )
    # The mock serves our bytes as they were sent, so librdkafka reads our codec's output.
    served = _fetch_with_ours(
        client, _common_version(peer_versions, ApiKey.FETCH, MIN_FETCH_VERSION), topic, end_offset
    )
    assert [_without_broker_fields(batch) for batch in _split_batches(served)] == [
        _without_broker_fields(batch) for batch in sent
    ]

    consumed = _consume_with_librdkafka(mock_cluster.bootstrap, topic, end_offset)
    expected = [
        (offset, sample)
        for samples, round_offsets in zip(ROUNDS, offsets, strict=True)
        for offset, sample in zip(round_offsets, samples, strict=True)
    ]
    assert [_fields(message) for message in consumed] == [
        (offset, sample.key, sample.value, sample.timestamp) for offset, sample in expected
    ]
    # Headers last: confluent-kafka crashes the interpreter on a header key that is
    # not UTF-8, so a garbled batch should fail on the other fields first.
    assert [_headers(message) for message in consumed] == [sample.headers for _, sample in expected]
