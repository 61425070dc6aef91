"""Record batches with a valid CRC and junk inside: refused, nothing stored, and
every client reads the good records around them.

A hostile client (our own codec on a raw socket) sends, between two good
batches, a batch whose CRC is right but whose inside is not: junk compressed
payloads of every codec, cut-off ones, junk records inside good compression,
record counts that disagree with the records, fields that overrun their
record, a payload inflating past the broker's limit, an unkeyed record for a
compacted topic, a message set (magic 1) wrapping junk. Each goes to a topic
of its own on one broker and is refused with its error code; kafka-python and
confluent-kafka then read exactly the good records of every topic, at
consecutive offsets; and the broker restarts, cleanly and then after a
SIGKILL, and each time still holds exactly those records.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import confluent_kafka
import pytest
from kafka import KafkaConsumer, TopicPartition

from interop_tests.broker import Broker
from interop_tests.protocol_client import ProtocolClient
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from interop_tests.support import Deadline
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
TIMEOUT_S = 60.0


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
# (offset, key, value) of what every topic holds: the good records, at consecutive offsets
GOOD = [(0, b"k1", b"before-1"), (1, b"k2", b"before-2"), (2, b"k3", b"after")]

Read = dict[str, list[tuple[int, bytes | None, bytes | None]]]  # topic -> (offset, key, value)


@dataclass(frozen=True, slots=True)
class Sent:
    """A case's topic and the (error code, base offset) of its three produce requests."""

    topic: str
    before: tuple[int, int]
    hostile: tuple[int, int]
    after: tuple[int, int]


@pytest.fixture(scope="module")
def sent(hostile_broker: Broker) -> dict[str, Sent]:
    """Each case on a topic of its own: a good batch, the hostile one, a good one."""
    found = {}
    with ProtocolClient(*hostile_broker.address) as client:
        for number, (case, (records, _, compacted, version)) in enumerate(CASES.items()):
            topic = f"hostile-{number}"
            create(client, topic, compacted)
            before = client.produce(topic, encode_batch(GOOD_BEFORE))
            hostile = client.produce(topic, records, version=version)
            after = client.produce(topic, encode_batch(GOOD_AFTER))
            found[case] = Sent(topic, before, hostile, after)
    return found


def kafka_python_read(bootstrap: str, topics: list[str]) -> Read:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS)
    try:
        consumer.assign([TopicPartition(topic, 0) for topic in topics])
        consumer.seek_to_beginning()
        read: Read = {topic: [] for topic in topics}
        for record in read_to_end(consumer):
            read[record.topic].append((record.offset, record.key, record.value))
        return read
    finally:
        consumer.close()


def confluent_read(bootstrap: str, topics: list[str]) -> Read:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "never-joined",  # required by the API; there is no subscribe()
            "enable.auto.commit": False,
            "check.crcs": True,
            "log_level": 3,
        }
    )
    try:
        consumer.assign(
            [confluent_kafka.TopicPartition(t, 0, confluent_kafka.OFFSET_BEGINNING) for t in topics]
        )
        read: Read = {topic: [] for topic in topics}
        expected = len(GOOD) * len(topics)
        deadline = Deadline(TIMEOUT_S)
        while sum(map(len, read.values())) < expected:
            deadline.check(f"{expected} records (read {sum(map(len, read.values()))})")
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                assert message.error() is None, message.error()
                read[message.topic()].append((message.offset(), message.key(), message.value()))
        return read
    finally:
        consumer.close()


def assert_the_good_records_in_every_topic(read: Read, sent: dict[str, Sent], reader: str) -> None:
    wrong = {case: read[s.topic] for case, s in sent.items() if read[s.topic] != GOOD}
    assert not wrong, f"{reader} read, where {GOOD} was due: {wrong}"


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_hostile_batch_is_refused_and_nothing_of_it_stored(
    sent: dict[str, Sent], case: str
) -> None:
    _, expected, _, _ = CASES[case]
    got = sent[case]
    assert got.before == (ErrorCode.NONE, 0)
    code, base_offset = got.hostile
    assert (ErrorCode(code), base_offset) == (expected, -1)
    assert got.after == (ErrorCode.NONE, 2)  # the refused batch took no offset


def test_kafka_python_reads_the_good_records_around_every_hostile_batch(
    hostile_broker: Broker, sent: dict[str, Sent]
) -> None:
    read = kafka_python_read(hostile_broker.bootstrap, [s.topic for s in sent.values()])
    assert_the_good_records_in_every_topic(read, sent, "kafka-python")


def test_confluent_kafka_reads_the_good_records_around_every_hostile_batch(
    hostile_broker: Broker, sent: dict[str, Sent]
) -> None:
    read = confluent_read(hostile_broker.bootstrap, [s.topic for s in sent.values()])
    assert_the_good_records_in_every_topic(read, sent, "confluent-kafka")


@pytest.mark.parametrize("crash", [False, True], ids=["clean", "crash"])
def test_a_restarted_broker_holds_exactly_the_good_records(
    hostile_broker: Broker, sent: dict[str, Sent], crash: bool
) -> None:
    hostile_broker.restart(crash=crash)
    read = confluent_read(hostile_broker.bootstrap, [s.topic for s in sent.values()])
    assert_the_good_records_in_every_topic(read, sent, "confluent-kafka after the restart")
