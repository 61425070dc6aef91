"""The records of ``__consumer_offsets``: exact layouts, round trips, bad input.

Expected bytes are written out by hand from Kafka's message specs
(OffsetCommitKey/Value.json, GroupMetadataKey/Value.json), not produced by the
module under test. Round trips cover every version of every key and value
with random structs, as tests/protocol/test_roundtrip.py does for every API;
fuzz targets hold the decoders to the invariant of tests/protocol/fuzzing.py.

kafka-python 3.0.12 has no decoder for these records (its sources only
mention ``__consumer_offsets`` in a comment of OffsetFetchRequest.json), so
there is no differential test against it; interop_tests/test_offsets_from_apache_kafka.py
reads what Apache Kafka itself writes.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.protocol.fuzzing import FUZZ_SETTINGS, mutated, only_protocol_errors
from tests.protocol.message_gen import sample_structs
from wirekafka.groups.offsets_topic import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordType,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata,
    encode_group_metadata_value,
    encode_offset_commit,
    encode_offset_commit_value,
    java_string_hash,
    partition_for_group,
)
from wirekafka.protocol.codec import DataMessage
from wirekafka.protocol.errors import ProtocolError


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def s(text: str) -> bytes:
    """A classic string: int16 length, UTF-8."""
    data = text.encode()
    return i16(len(data)) + data


def cs(text: str) -> bytes:
    """A compact string shorter than 127 bytes: one-byte length + 1."""
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


OC_KEY = OffsetCommitKey(group="g", topic="t", partition=3)
OC_KEY_BYTES = i16(1) + s("g") + s("t") + i32(3)

OC_VALUE = OffsetCommitValue(
    offset=42, leader_epoch=7, metadata="m", commit_timestamp_ms=1000, expire_timestamp_ms=-1
)
OC_VALUE_V3_BYTES = i16(3) + i64(42) + i32(7) + s("m") + i64(1000)
OC_VALUE_V4_BYTES = i16(4) + i64(42) + i32(7) + cs("m") + i64(1000) + b"\x00"

GM_KEY = GroupMetadataKey(group="grp")
GM_KEY_BYTES = i16(2) + s("grp")

MEMBER = MemberMetadata(
    member_id="m1",
    group_instance_id="static-1",
    client_id="c",
    client_host="/127.0.0.1",
    rebalance_timeout_ms=300000,
    session_timeout_ms=10000,
    subscription=b"\x00\x01",
    assignment=b"\x02",
)
GM_VALUE = GroupMetadataValue(
    protocol_type="consumer",
    generation=5,
    protocol="range",
    leader="m1",
    current_state_timestamp_ms=123456789,
    members=[MEMBER, dataclasses.replace(MEMBER, member_id="m2", group_instance_id=None)],
)


def member_v3(member_id: str, instance: bytes) -> bytes:
    return (
        s(member_id)
        + instance
        + s("c")
        + s("/127.0.0.1")
        + i32(300000)
        + i32(10000)
        + i32(2)
        + b"\x00\x01"
        + i32(1)
        + b"\x02"
    )


GM_VALUE_V3_BYTES = (
    i16(3)
    + s("consumer")
    + i32(5)
    + s("range")
    + s("m1")
    + i64(123456789)
    + i32(2)
    + member_v3("m1", s("static-1"))
    + member_v3("m2", i16(-1))
)


def member_v4(member_id: str, instance: bytes) -> bytes:
    return (
        cs(member_id)
        + instance
        + cs("c")
        + cs("/127.0.0.1")
        + i32(300000)
        + i32(10000)
        + b"\x03\x00\x01"
        + b"\x02\x02"
        + b"\x00"
    )


GM_VALUE_V4_BYTES = (
    i16(4)
    + cs("consumer")
    + i32(5)
    + cs("range")
    + cs("m1")
    + i64(123456789)
    + b"\x03"
    + member_v4("m1", cs("static-1"))
    + member_v4("m2", b"\x00")
    + b"\x00"
)


# ---------------------------------------------------------------- exact bytes


def test_offset_commit_exact_bytes_default_version_3() -> None:
    assert encode_offset_commit(OC_KEY, OC_VALUE) == (OC_KEY_BYTES, OC_VALUE_V3_BYTES)
    assert decode_key(OC_KEY_BYTES) == OC_KEY
    assert decode_offset_commit_value(OC_VALUE_V3_BYTES) == OC_VALUE


def test_offset_commit_with_expire_timestamp_is_version_1() -> None:
    value = dataclasses.replace(OC_VALUE, expire_timestamp_ms=5000)
    expected = i16(1) + i64(42) + s("m") + i64(1000) + i64(5000)
    assert encode_offset_commit(OC_KEY, value) == (OC_KEY_BYTES, expected)
    # Version 1 has no leader epoch; it decodes as -1.
    assert decode_offset_commit_value(expected) == dataclasses.replace(value, leader_epoch=-1)


def test_offset_commit_exact_bytes_other_versions() -> None:
    v0 = i16(0) + i64(42) + s("m") + i64(1000)
    assert encode_offset_commit_value(OC_VALUE, 0) == v0
    assert encode_offset_commit_value(OC_VALUE, 2) == i16(2) + v0[2:]
    assert encode_offset_commit_value(OC_VALUE, 4) == OC_VALUE_V4_BYTES
    assert decode_offset_commit_value(OC_VALUE_V4_BYTES) == OC_VALUE


def test_group_metadata_exact_bytes_default_version_3() -> None:
    assert encode_group_metadata(GM_KEY, GM_VALUE) == (GM_KEY_BYTES, GM_VALUE_V3_BYTES)
    assert decode_key(GM_KEY_BYTES) == GM_KEY
    assert decode_group_metadata_value(GM_VALUE_V3_BYTES) == GM_VALUE


def test_group_metadata_exact_bytes_flexible_version_4() -> None:
    assert encode_group_metadata_value(GM_VALUE, 4) == GM_VALUE_V4_BYTES
    assert decode_group_metadata_value(GM_VALUE_V4_BYTES) == GM_VALUE


def test_group_metadata_exact_bytes_version_0() -> None:
    value = GroupMetadataValue(protocol_type="consumer", generation=1, protocol=None, leader=None)
    expected = i16(0) + s("consumer") + i32(1) + i16(-1) + i16(-1) + i32(0)
    assert encode_group_metadata_value(value, 0) == expected
    assert decode_group_metadata_value(expected) == value


def test_tombstones() -> None:
    assert encode_offset_commit(OC_KEY, None) == (OC_KEY_BYTES, None)
    assert encode_group_metadata(GM_KEY, None) == (GM_KEY_BYTES, None)


def test_offset_commit_key_version_0_has_the_same_layout() -> None:
    assert decode_key(i16(0) + OC_KEY_BYTES[2:]) == OC_KEY


def test_offset_commit_value_of_kafka_4_1_carries_the_topic_id_in_tag_0() -> None:
    """Kafka 4.1 and later write version 4 with the topic id as tagged field 0
    (KAFKA-19141): one tag, number 0, 16 bytes."""
    topic_id = uuid.UUID("0123456789abcdef0123456789abcdef")
    tagged = b"\x01" + b"\x00" + b"\x10" + topic_id.bytes
    written = OC_VALUE_V4_BYTES[:-1] + tagged
    value = dataclasses.replace(OC_VALUE, topic_id=topic_id)
    assert decode_offset_commit_value(written) == value
    assert encode_offset_commit_value(value, 4) == written
    # The zero id, the default, is not written; versions before 4 have no tags.
    assert encode_offset_commit_value(OC_VALUE, 4) == OC_VALUE_V4_BYTES
    assert encode_offset_commit_value(value, 3) == OC_VALUE_V3_BYTES


# ---------------------------------------------------------------- round trips


def offset_commit_as_version(value: OffsetCommitValue, version: int) -> OffsetCommitValue:
    """What a value reads back as after a version drops the fields it lacks."""
    return dataclasses.replace(
        value,
        leader_epoch=value.leader_epoch if version >= 3 else -1,
        expire_timestamp_ms=value.expire_timestamp_ms if version == 1 else -1,
    )


def group_metadata_as_version(value: GroupMetadataValue, version: int) -> GroupMetadataValue:
    return dataclasses.replace(
        value,
        current_state_timestamp_ms=value.current_state_timestamp_ms if version >= 2 else -1,
        members=[
            dataclasses.replace(
                m,
                group_instance_id=m.group_instance_id if version >= 3 else None,
                rebalance_timeout_ms=m.rebalance_timeout_ms if version >= 1 else -1,
            )
            for m in value.members
        ],
    )


def oc_value(
    offset: int, leader_epoch: int, metadata: str, commit_ms: int, expire_ms: int
) -> OffsetCommitValue:
    return OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp_ms=commit_ms,
        expire_timestamp_ms=expire_ms,
    )


OC_SAMPLES = [
    OC_VALUE,
    oc_value(0, -1, "", -1, -1),
    oc_value(2**63 - 1, 2**31 - 1, "é" * 300, 2**62, 2**40),
    oc_value(-1, -(2**31), "x" * 0x7FFF, -(2**63), -(2**63)),
]

GM_SAMPLES = [
    GM_VALUE,
    GroupMetadataValue(protocol_type="", generation=0),
    GroupMetadataValue(
        protocol_type="connect",
        generation=2**31 - 1,
        protocol="p" * 200,
        leader="",
        current_state_timestamp_ms=2**63 - 1,
        members=[dataclasses.replace(MEMBER, subscription=b"s" * 5000, assignment=b"")],
    ),
]


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("value", OC_SAMPLES)
def test_offset_commit_round_trip(version: int, value: OffsetCommitValue) -> None:
    key_bytes, value_bytes = encode_offset_commit(OC_KEY, value, version)
    assert value_bytes is not None
    assert value_bytes[:2] == i16(version)
    assert decode_key(key_bytes) == OC_KEY
    assert decode_offset_commit_value(value_bytes) == offset_commit_as_version(value, version)


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("value", GM_SAMPLES)
def test_group_metadata_round_trip(version: int, value: GroupMetadataValue) -> None:
    key_bytes, value_bytes = encode_group_metadata(GM_KEY, value, version)
    assert value_bytes is not None
    assert value_bytes[:2] == i16(version)
    assert decode_key(key_bytes) == GM_KEY
    assert decode_group_metadata_value(value_bytes) == group_metadata_as_version(value, version)


def test_keys_round_trip_unicode() -> None:
    key = OffsetCommitKey(group="grüppe-😀", topic="tópic", partition=2**31 - 1)
    key_bytes, _ = encode_offset_commit(key, None)
    assert decode_key(key_bytes) == key


DATA_MESSAGES: list[DataMessage[Any]] = [
    OFFSET_COMMIT_KEY,
    GROUP_METADATA_KEY,
    OFFSET_COMMIT_VALUE,
    GROUP_METADATA_VALUE,
]
DATA_VERSIONS = [
    (message, version)
    for message in DATA_MESSAGES
    for version in range(message.versions.low, message.versions.high + 1)
]
SAMPLES_PER_VERSION = 25


@pytest.mark.parametrize(
    ("message", "version"),
    DATA_VERSIONS,
    ids=[f"{message.name}-v{version}" for message, version in DATA_VERSIONS],
)
def test_every_version_round_trips_random_structs(message: DataMessage[Any], version: int) -> None:
    decode = decode_key if message.name.endswith("Key") else message.decode
    for value in sample_structs(message.cls, version, SAMPLES_PER_VERSION, seed=3):
        data = message.encode(value, version)
        assert data[:2] == i16(version)
        assert decode(data) == value
        assert message.encode(decode(data), version) == data


def test_the_versions_are_kafkas() -> None:
    """Keys: 0-1 and 2, never flexible; values: 0-4, flexible from 4 (the specs of
    Kafka 3.x and 4.x), so 13 (record, version) pairs are round-tripped above."""
    assert [(str(m.versions), str(m.flexible_versions)) for m in DATA_MESSAGES] == [
        ("0-1", "none"),
        ("2", "none"),
        ("0-4", "4+"),
        ("0-4", "4+"),
    ]
    assert len(DATA_VERSIONS) == 13


def test_encoding_rejects_unknown_versions_and_long_strings() -> None:
    with pytest.raises(ValueError):
        encode_offset_commit(OC_KEY, OC_VALUE, 5)
    with pytest.raises(ValueError):
        encode_group_metadata(GM_KEY, GM_VALUE, -1)
    with pytest.raises(ValueError):
        encode_offset_commit_value(dataclasses.replace(OC_VALUE, metadata="x" * 0x8000), 4)


# ---------------------------------------------------------------- bad input


def all_valid_encodings() -> list[tuple[str, bytes]]:
    cases = [("oc-key", OC_KEY_BYTES), ("gm-key", GM_KEY_BYTES)]
    for version in range(5):
        for n, value in enumerate(OC_SAMPLES[:2]):
            cases.append((f"oc-value-v{version}-{n}", encode_offset_commit_value(value, version)))
        for n, gm in enumerate(GM_SAMPLES[:2]):
            cases.append((f"gm-value-v{version}-{n}", encode_group_metadata_value(gm, version)))
    return cases


def decoder_for(name: str) -> Callable[[bytes], object]:
    if name.endswith("key"):
        return decode_key
    return decode_offset_commit_value if name.startswith("oc") else decode_group_metadata_value


@pytest.mark.parametrize(("name", "data"), all_valid_encodings())
def test_every_truncation_raises_protocol_error(name: str, data: bytes) -> None:
    decode = decoder_for(name)
    decode(data)  # the whole encoding is valid
    for end in range(len(data)):
        with pytest.raises(ProtocolError):
            decode(data[:end])


@pytest.mark.parametrize(("name", "data"), all_valid_encodings())
def test_trailing_bytes_raise_protocol_error(name: str, data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decoder_for(name)(data + b"\x00")


@pytest.mark.parametrize("version", [-1, 3, 4, 15, 0x7FFF, -0x8000])
def test_unknown_key_version_raises(version: int) -> None:
    with pytest.raises(UnknownRecordType):
        decode_key(i16(version) + s("g"))
    assert issubclass(UnknownRecordType, ProtocolError)


@pytest.mark.parametrize("version", [-1, 5, 0x7FFF])
def test_unknown_value_version_raises(version: int) -> None:
    with pytest.raises(ProtocolError):
        decode_offset_commit_value(i16(version) + OC_VALUE_V3_BYTES[2:])
    with pytest.raises(ProtocolError):
        decode_group_metadata_value(i16(version) + GM_VALUE_V3_BYTES[2:])


def test_nulls_in_non_nullable_fields_raise() -> None:
    with pytest.raises(ProtocolError):
        decode_key(i16(2) + i16(-1))
    with pytest.raises(ProtocolError):
        decode_offset_commit_value(i16(3) + i64(1) + i32(0) + i16(-1) + i64(0))
    with pytest.raises(ProtocolError):
        decode_offset_commit_value(i16(4) + i64(1) + i32(0) + b"\x00" + i64(0) + b"\x00")
    with pytest.raises(ProtocolError):  # null members array
        decode_group_metadata_value(i16(0) + s("") + i32(0) + i16(-1) + i16(-1) + i32(-1))
    with pytest.raises(ProtocolError):  # null subscription
        member = s("m") + s("c") + s("h") + i32(1) + i32(-1) + i32(0)
        decode_group_metadata_value(i16(0) + s("") + i32(0) + i16(-1) + i16(-1) + i32(1) + member)
    with pytest.raises(ProtocolError):  # invalid UTF-8
        decode_key(i16(2) + i16(1) + b"\xff")


def test_unknown_tagged_fields_are_skipped() -> None:
    tags = b"\x02" + b"\x05\x02ab" + b"\x09\x00"  # two fields: tag 5 (2 bytes), tag 9 (empty)
    value = OC_VALUE_V4_BYTES[:-1] + tags
    assert decode_offset_commit_value(value) == OC_VALUE
    # In the member's tagged fields and the value's.
    gm = GroupMetadataValue(
        protocol_type="consumer",
        generation=1,
        protocol="range",
        leader="m",
        current_state_timestamp_ms=7,
        members=[MEMBER],
    )
    plain = encode_group_metadata_value(gm, 4)
    assert plain.endswith(b"\x00\x00")
    assert decode_group_metadata_value(plain[:-2] + tags + tags) == gm
    with pytest.raises(ProtocolError):  # a tagged field longer than what is left
        decode_offset_commit_value(OC_VALUE_V4_BYTES[:-1] + b"\x01\x05\x09ab")


# ---------------------------------------------------------------- fuzzing

DECODERS: list[Callable[[bytes], Any]] = [
    decode_key,
    decode_offset_commit_value,
    decode_group_metadata_value,
]


def fuzz_corpus() -> list[bytes]:
    """Random keys and values of every version, encoded, beside the hand-made ones."""
    corpus = [data for _, data in all_valid_encodings()]
    for message, version in DATA_VERSIONS:
        for value in sample_structs(message.cls, version, 3, seed=11):
            corpus.append(message.encode(value, version))
    return corpus


FUZZ_CORPUS = fuzz_corpus()


@pytest.mark.fuzz
@FUZZ_SETTINGS
@given(data=st.binary(max_size=256))
def test_fuzz_arbitrary_bytes_raise_only_protocol_error(data: bytes) -> None:
    for decode in DECODERS:
        only_protocol_errors(lambda: decode(data))  # noqa: B023 (called at once)


@pytest.mark.fuzz
@FUZZ_SETTINGS
@given(data=mutated(FUZZ_CORPUS))
def test_fuzz_mutated_records_raise_only_protocol_error(data: bytes) -> None:
    for decode in DECODERS:
        only_protocol_errors(lambda: decode(data))  # noqa: B023 (called at once)


# ---------------------------------------------------------------- hashing


def reference_hash(text: str) -> int:
    """String.hashCode written independently: split each non-BMP character
    into its surrogate pair by hand, wrap with struct."""
    h = 0
    for ch in text:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units = [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units = [cp]
        for unit in units:
            h = struct.unpack(">i", struct.pack(">I", (h * 31 + unit) % 2**32))[0]
    return h


def reference_partition(group: str, partitions: int) -> int:
    h = reference_hash(group)
    magnitude = 0 if h == -(2**31) else abs(h)  # Kafka's Utils.abs
    return magnitude % partitions


def test_known_hash_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("hello") == 99162322
    # U+1F600 is the pair D83D DE00: 0xD83D * 31 + 0xDE00.
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00 == 1772899
    # The well-known string whose hashCode is Integer.MIN_VALUE.
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_known_partitions() -> None:
    assert partition_for_group("", 50) == 0
    assert partition_for_group("a", 50) == 97 % 50 == 47
    assert partition_for_group("hello", 50) == 22
    # Utils.abs(Integer.MIN_VALUE) is 0, not Math.abs's MIN_VALUE.
    assert partition_for_group("polygenelubricants", 50) == 0
    assert partition_for_group("polygenelubricants", 7) == 0
    assert partition_for_group("anything", 1) == 0
    with pytest.raises(ValueError):
        partition_for_group("g", 0)


@pytest.mark.parametrize(
    "group",
    ["my-group", "console-consumer-12345", "grüppe", "😀x😀", "\u0000", "z" * 1000, "spark-kafka"],
)
def test_partition_matches_reference(group: str) -> None:
    assert java_string_hash(group) == reference_hash(group)
    for partitions in (1, 3, 50, 1000):
        assert partition_for_group(group, partitions) == reference_partition(group, partitions)


@given(st.text())
def test_hash_matches_reference_on_any_text(text: str) -> None:
    assert java_string_hash(text) == reference_hash(text)
