"""Record batches with a valid CRC and junk inside: refused, nothing stored, and
every client reads the good records around them.

A hostile client (our own codec on a raw socket) sends, between two good
batches, a batch whose CRC is right but whose inside is not: junk compressed
payloads of every codec, cut-off ones, junk records inside good compression,
record counts that disagree with the records, fields that overrun their
record, a payload inflating past the broker's limit, an unkeyed record for a
compacted topic, a message set (magic 1) wrapping junk. Each is refused with
its error code; kafka-python and confluent-kafka then read exactly the good
records, at consecutive offsets; and the broker restarts (cleanly or after a
SIGKILL) and still holds exactly those records.
"""

from __future__ import annotations

import itertools
import random
import struct
import zlib
from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.clients import confluent_kafka, kafka_python
from interop_tests.protocol_client import ProtocolClient
from tests.protocol.crafted_batches import BAD_RECORDS, bad_batch, batch_of, record_bytes
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from wirekafka.protocol.records.compression import CompressionType, compress
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch

MESSAGE_MAX_BYTES = 100_000  # so the inflation limit (64 x this) is quick to pass
CODECS = [c for c in CompressionType if c != CompressionType.NONE]
_counter = itertools.count()


def _junk(seed: int, size: int = 300) -> bytes:
    return random.Random(seed).randbytes(size)


def _cases() -> dict[str, tuple[bytes, ErrorCode, bool, int]]:
    """name -> (records to send, the error expected, compacted topic, Produce version)."""
    cases: dict[str, tuple[bytes, ErrorCode, bool, int]] = {}
    for name in BAD_RECORDS:
        cases[name] = (bad_batch(name), ErrorCode.INVALID_RECORD, False, 9)
    for codec in CODECS:
        label = codec.name.lower()
        good = compress(codec, record_bytes(0) + record_bytes(1))
        cases[f"junk {label} payload"] = (
            batch_of(_junk(codec), 2, codec, raw=True), ErrorCode.CORRUPT_MESSAGE, False, 9
        )  # fmt: skip
        cases[f"cut-off {label} payload"] = (
            batch_of(good[: len(good) - 4], 2, codec, raw=True), ErrorCode.CORRUPT_MESSAGE, False, 9
        )  # fmt: skip
        cases[f"junk records in {label}"] = (
            bad_batch("length past the end", codec), ErrorCode.INVALID_RECORD, False, 9
        )  # fmt: skip
        cases[f"{label} inflating past the limit"] = (
            batch_of(record_bytes(0, value=b"\x00" * (64 * MESSAGE_MAX_BYTES + 1)), 1, codec),
            ErrorCode.MESSAGE_TOO_LARGE,
            False,
            9,
        )
    cases["no key for a compacted topic"] = (
        batch_of(record_bytes(0, key=b"k") + record_bytes(1, key=None), 2),
        ErrorCode.INVALID_RECORD,
        True,
        9,
    )
    cases["last offset delta disagrees with the count"] = (
        batch_of(record_bytes(0), 1, last_offset_delta=5), ErrorCode.INVALID_RECORD, False, 9
    )  # fmt: skip
    cases["a batch of no records"] = (batch_of(b"", 0), ErrorCode.INVALID_RECORD, False, 9)
    cases["message set wrapping junk"] = (
        _gzip_wrapper(_junk(7)),
        ErrorCode.CORRUPT_MESSAGE,
        False,
        2,
    )
    return cases


def _gzip_wrapper(inner: bytes) -> bytes:
    """A magic-1 gzip wrapper message, its CRC right, holding ``inner`` as its message set."""
    value = compress(CompressionType.GZIP, inner)
    body = bytes((1, int(CompressionType.GZIP))) + struct.pack(">qi", 1, -1)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body


CASES = _cases()


@pytest.fixture(scope="module")
def hostile_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = Broker(
        tmp_path_factory.mktemp("hostile") / "data",
        {"num.partitions": "1", "message.max.bytes": str(MESSAGE_MAX_BYTES)},
    )
    try:
        broker.start()
        yield broker
        broker.assert_running()
        broker.stop()
    finally:
        broker.close()


def create(client: ProtocolClient, topic: str, compacted: bool) -> None:
    configs = [CreatableTopicConfig(name="cleanup.policy", value="compact")] if compacted else []
    response = client.request(
        ApiKey.CREATE_TOPICS,
        5,
        CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=topic,
                    num_partitions=1,
                    replication_factor=1,
                    assignments=[],
                    configs=configs,
                )
            ],
            timeout_ms=10_000,
            validate_only=False,
        ),
    )
    assert response.topics[0].error_code == ErrorCode.NONE, response.topics[0]


GOOD_BEFORE = [
    Record(0, 1_700_000_000_000, b"k1", b"before-1"),
    Record(1, 1_700_000_000_001, b"k2", b"before-2"),
]
GOOD_AFTER = [Record(0, 1_700_000_000_002, b"k3", b"after")]


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_hostile_batch_is_refused_and_clients_read_the_good_ones_around_it(
    hostile_broker: Broker, topic_name: Callable[[str], str], case: str
) -> None:
    records, expected, compacted, version = CASES[case]
    topic = topic_name()
    with ProtocolClient(*hostile_broker.address) as client:
        create(client, topic, compacted)
        assert client.produce(topic, encode_batch(GOOD_BEFORE)) == (ErrorCode.NONE, 0)
        code, base_offset = client.produce(topic, records, version=version)
        assert (ErrorCode(code), base_offset) == (expected, -1)
        assert client.produce(topic, encode_batch(GOOD_AFTER)) == (ErrorCode.NONE, 2)
    wanted = [(b"k1", b"before-1"), (b"k2", b"before-2"), (b"k3", b"after")]
    for reader in (kafka_python.ADAPTER, confluent_kafka.ADAPTER):
        got = reader.read(hostile_broker.bootstrap, topic, {0: 3})
        assert [(g.offset, g.key, g.value) for g in got] == [
            (offset, key, value) for offset, (key, value) in enumerate(wanted)
        ], reader.name
    hostile_broker.restart(crash=next(_counter) % 2 == 1)
    got = confluent_kafka.ADAPTER.read(hostile_broker.bootstrap, topic, {0: 3})
    assert [(g.offset, g.value) for g in got] == [(0, b"before-1"), (1, b"before-2"), (2, b"after")]
