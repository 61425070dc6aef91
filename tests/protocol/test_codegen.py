"""The generated codec against the per-field codec it replaced (:mod:`.reference_codec`).

For every struct of every API at every version (and the ``__consumer_offsets``
data messages): the same bytes from the same value, the same values (types
included) from the same bytes, and the same error, type and message, from
truncated, mutated or hand-made input and from values that cannot be encoded.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.protocol import reference_codec
from tests.protocol.fuzzing import FUZZ_SETTINGS, mutated
from tests.protocol.message_gen import sample_structs
from wirekafka.groups import offsets_topic
from wirekafka.protocol import schema as wire
from wirekafka.protocol.api_table import API_TABLE
from wirekafka.protocol.codec import decode_struct, encode_struct, struct_codec
from wirekafka.protocol.codegen import read_uvarint
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from wirekafka.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from wirekafka.protocol.primitives import Reader, Writer
from wirekafka.protocol.schema import ArrayType, Primitive, StructType, field_spec

DATA_MESSAGES = [
    offsets_topic.OFFSET_COMMIT_KEY,
    offsets_topic.GROUP_METADATA_KEY,
    offsets_topic.OFFSET_COMMIT_VALUE,
    offsets_topic.GROUP_METADATA_VALUE,
]

# (class, version, flexible) of every top-level struct the broker reads or writes
CASES = [
    (cls, version, api.is_flexible(version))
    for api in API_TABLE.values()
    for version in range(api.min_version, api.max_version + 1)
    for cls in (api.request, api.response)
] + [
    (message.cls, version, version in message.flexible_versions)
    for message in DATA_MESSAGES
    for version in range(message.versions.low, message.versions.high + 1)
]
IDS = [f"{cls.__name__}-v{version}" for cls, version, _ in CASES]


def new_bytes(value: Any, version: int, flexible: bool) -> bytes:
    writer = Writer()
    encode_struct(value, version, flexible, writer)
    return writer.getvalue()


def old_bytes(value: Any, version: int, flexible: bool) -> bytes:
    writer = Writer()
    reference_codec.struct_codec(type(value), version, flexible).encode(writer, value)
    return writer.getvalue()


def shape(value: Any) -> Any:
    """``value`` as nested tuples that compare types too (True is not 1, a view not bytes)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return type(value), tuple((f.name, shape(getattr(value, f.name))) for f in fields)
    if isinstance(value, list):
        return list, [shape(item) for item in value]
    if isinstance(value, memoryview):
        return memoryview, value.tobytes()
    return type(value), value


def outcome(work: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", work()
    except (ProtocolError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        return type(exc).__name__, str(exc)
    except Exception as exc:  # struct.error and the like: compared by type and text
        return type(exc).__name__, str(exc)


def decoded(decode: Callable[[Reader], Any], data: bytes) -> tuple[str, Any]:
    def work() -> Any:
        reader = Reader(data)
        return shape(decode(reader)), reader.pos

    return outcome(work)


def assert_same_decoding(cls: type, version: int, flexible: bool, data: bytes) -> tuple[str, Any]:
    new = decoded(lambda reader: decode_struct(cls, version, flexible, reader), data)
    old = decoded(reference_codec.struct_codec(cls, version, flexible).decode, data)
    assert new == old, data.hex()
    assert new[0] in ("ok", "ProtocolError"), new
    return new


def samples(cls: type, version: int, count: int, seed: int) -> list[Any]:
    return sample_structs(cls, version, count, seed)


@pytest.mark.parametrize(("cls", "version", "flexible"), CASES, ids=IDS)
def test_same_bytes_and_values_as_the_per_field_codec(cls, version, flexible):
    for value in samples(cls, version, 10, seed=3):
        data = new_bytes(value, version, flexible)
        assert data == old_bytes(value, version, flexible)
        status, (result, position) = assert_same_decoding(cls, version, flexible, data)
        assert status == "ok"
        assert position == len(data)
        assert result == shape(value) or _only_views_differ(value, version, flexible, data)


def _only_views_differ(value: Any, version: int, flexible: bool, data: bytes) -> bool:
    """Record data given as bytes comes back as a view: equal values, other types."""
    return decode_struct(type(value), version, flexible, Reader(data)) == value


@pytest.mark.parametrize(("cls", "version", "flexible"), CASES, ids=IDS)
def test_every_truncation_raises_the_same_protocol_error(cls, version, flexible):
    rng = random.Random(f"{cls.__name__}{version}")
    for value in samples(cls, version, 2, seed=4):
        data = new_bytes(value, version, flexible)
        cuts = range(len(data)) if len(data) <= 300 else rng.sample(range(len(data)), 300)
        for cut in cuts:
            status, _ = assert_same_decoding(cls, version, flexible, data[:cut])
            assert status == "ProtocolError"


def _corpus() -> list[tuple[type, int, bool, bytes]]:
    return [
        (cls, version, flexible, new_bytes(value, version, flexible))
        for cls, version, flexible in CASES
        for value in samples(cls, version, 1, seed=5)
    ]


CORPUS = _corpus()


@pytest.mark.fuzz
@FUZZ_SETTINGS
@given(index=st.integers(0, len(CORPUS) - 1), data=st.data())
def test_mutated_input_decodes_as_the_per_field_codec_decodes_it(index, data):
    cls, version, flexible, frame = CORPUS[index]
    assert_same_decoding(cls, version, flexible, data.draw(mutated([frame])))


def _long_fields() -> list[tuple[Any, int, bool]]:
    """Lengths and counts of two or more varint bytes (past the inline reads' one byte)."""
    values: list[tuple[Any, int, bool]] = []
    for size in (126, 127, 128, 300, 16383, 16384, 40_000):
        text = "t" * min(size, 0x7FFF)
        partition = PartitionProduceData(index=1, records=bytes(range(256)) * (size // 256))
        topic = TopicProduceData(name=text, partition_data=[partition] * (size // 300 + 1))
        produce = ProduceRequest(transactional_id=text, acks=-1, topic_data=[topic])
        values += [(produce, 9, True), (produce, 3, False)]
    partitions = [
        MetadataResponsePartition(partition_index=i, replica_nodes=list(range(200)))
        for i in range(130)
    ]
    topic_of_many = MetadataResponseTopic(name="t", topic_id=uuid.uuid4(), partitions=partitions)
    metadata = MetadataResponse(topics=[topic_of_many])
    return [*values, (metadata, 12, True), (metadata, 8, False)]


@pytest.mark.parametrize(("value", "version", "flexible"), _long_fields())
def test_long_strings_records_and_arrays(value, version, flexible):
    data = new_bytes(value, version, flexible)
    assert data == old_bytes(value, version, flexible)
    status, (_, position) = assert_same_decoding(type(value), version, flexible, data)
    assert (status, position) == ("ok", len(data))
    for cut in range(0, len(data), max(1, len(data) // 97)):
        assert_same_decoding(type(value), version, flexible, data[:cut])


def produce(records: Any = b"abc", transactional_id: str | None = "tx") -> ProduceRequest:
    """A Produce request of one partition's record data."""
    partition = PartitionProduceData(index=1, records=records)
    topic = TopicProduceData(name="t", partition_data=[partition])
    return ProduceRequest(transactional_id=transactional_id, topic_data=[topic])


def _replaced(data: bytes, at: int, new: bytes, length: int = 1) -> bytes:
    return data[:at] + new + data[at + length :]


def test_non_canonical_varints_and_odd_lengths():
    data = new_bytes(produce(), 9, True)
    for at in range(len(data)):  # each byte that could be a one-byte varint, in two bytes
        if data[at] < 0x80:
            non_canonical = bytes([data[at] | 0x80, 0])
            assert_same_decoding(ProduceRequest, 9, True, _replaced(data, at, non_canonical))
    for at in range(len(data)):  # each byte replaced by the edges of a length
        for byte in (0x00, 0x01, 0x7E, 0x7F, 0x80, 0xFF):
            assert_same_decoding(ProduceRequest, 9, True, _replaced(data, at, bytes([byte])))
    old = new_bytes(produce(), 3, False)
    for at in range(len(old) - 1):
        for pair in (b"\xff\xff", b"\xff\xfe", b"\x7f\xff", b"\x80\x00", b"\x00\x00"):
            assert_same_decoding(ProduceRequest, 3, False, _replaced(old, at, pair, 2))
    accented = new_bytes(produce(transactional_id="é"), 9, True)
    bad_utf8 = accented.replace("é".encode(), b"\xc3(")
    assert assert_same_decoding(ProduceRequest, 9, True, bad_utf8)[0] == "ProtocolError"


def test_records_stay_a_view_into_the_frame():
    for version, flexible in ((3, False), (9, True)):
        frame = bytearray(new_bytes(produce(records=b"x" * 300), version, flexible))
        request = decode_struct(ProduceRequest, version, flexible, Reader(frame))
        records = request.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview)
        assert records.obj is frame


@dataclasses.dataclass(frozen=True)
class FileSpan:
    size_bytes: int


def test_external_record_data_stays_a_part():
    span = FileSpan(5000)
    partition = PartitionData(partition_index=1, records=span)
    response = FetchResponse(responses=[FetchableTopicResponse(topic="t", partitions=[partition])])
    for version in (4, 12):
        flexible = version >= 12
        new, old = Writer(), Writer()
        encode_struct(response, version, flexible, new)
        reference_codec.struct_codec(FetchResponse, version, flexible).encode(old, response)
        new_parts, old_parts = new.parts(), old.parts()
        assert span in new_parts
        assert len(new_parts) == len(old_parts)
        for ours, theirs in zip(new_parts, old_parts, strict=True):
            assert ours is theirs if ours is span else bytes(ours) == bytes(theirs)


def _bad_values(spec: wire.FieldSpec) -> list[Any]:
    """Values a field of this type cannot take."""
    wire_type = spec.wire_type
    bad: list[Any] = [None, object()]
    if isinstance(wire_type, ArrayType):
        return [*bad, [None], [object()], 5, (x for x in [])]
    if isinstance(wire_type, StructType):
        return bad
    assert isinstance(wire_type, Primitive)
    return bad + {
        "string": ["é" * 20000, "x" * 0x8000, b"bytes", "\ud800", 5],
        "bytes": ["text", 5],
        "records": ["text", 5],
        "uuid": ["not a uuid", b"x" * 16],
        "float64": ["1.0", 2**2000],
        "bool": [],
    }.get(wire_type.name, [2**63, -(2**63) - 1, 2**31, 2**15, 256, 1.5, "1"])


@pytest.mark.parametrize(("cls", "version", "flexible"), CASES, ids=IDS)
def test_values_that_cannot_be_encoded_raise_the_same_errors(cls, version, flexible):
    value = samples(cls, version, 1, seed=6)[-1]
    for field in dataclasses.fields(cls):
        spec = field_spec(field)
        if version not in spec.versions:
            continue
        for bad in _bad_values(spec):
            broken = dataclasses.replace(value, **{field.name: bad})
            new = outcome(lambda broken=broken: new_bytes(broken, version, flexible))
            old = outcome(lambda broken=broken: old_bytes(broken, version, flexible))
            assert new == old, (field.name, bad)


@wire.message
class WithPostInit:
    number: int = wire.int32("0+")
    text: str = wire.string("0+")
    doubled: int = wire.int32("none")

    def __post_init__(self) -> None:
        self.doubled = self.number * 2


@dataclasses.dataclass(frozen=True, kw_only=True)
class Frozen:
    number: int = wire.int32("0+")
    names: list[str] = wire.array(wire.STRING, "1+")  # noqa: RUF009 (a dataclass field)
    later: int = wire.int64("2+", default=-1)
    tagged: str | None = wire.string("1+", nullable="1+", tag=0, tagged="1+", default=None)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_classes_with_post_init_or_frozen_are_built_through_init(version):
    flexible = version >= 1
    frozen = Frozen(number=3, names=["a"], tagged="t")
    data = new_bytes(frozen, version, flexible)
    assert data == old_bytes(frozen, version, flexible)
    assert assert_same_decoding(Frozen, version, flexible, data)[0] == "ok"
    data = new_bytes(WithPostInit(number=21, text="x"), version, flexible)
    made = decode_struct(WithPostInit, version, flexible, Reader(data))
    assert made == WithPostInit(number=21, text="x")
    assert made.doubled == 42


def test_codecs_are_made_once_and_keep_their_source():
    codec = struct_codec(ProduceRequest, 9, True)
    assert struct_codec(ProduceRequest, 9, True) is codec
    assert codec.read_source.startswith("def read_ProduceRequest_v9_flexible(buf, pos, end):")
    assert codec.write_source.startswith("def write_ProduceRequest_v9_flexible(writer, value):")


def test_compact_strings_past_the_longest_string_are_refused():
    for size in (0x7FFF, 0x8000, 0x10000):
        length = Writer()
        length.unsigned_varint(size + 1)
        data = length.getvalue() + b"x" * size + b"\x00\x00\x00\x00\x00\x00\x01\x00\x00"
        status, _ = assert_same_decoding(ProduceRequest, 9, True, data)
        assert status == ("ok" if size == 0x7FFF else "ProtocolError")


def _tagged_sections() -> list[bytes]:
    """FetchRequest v12 bodies whose tagged-field section is well or badly formed."""
    base = new_bytes(FetchRequest(replica_id=-1), 12, True)
    assert base.endswith(b"\x00")  # the empty tagged-field section
    head = base[:-1]
    cluster = b"\x0acluster-a"
    return [
        head + b"\x01\x00" + bytes([len(cluster)]) + cluster,  # tag 0: the cluster id
        head + b"\x01\x00" + bytes([len(cluster) + 1]) + cluster + b"\x00",  # a byte left over
        head + b"\x01\x00" + bytes([len(cluster) - 1]) + cluster,  # too short for its value
        head + b"\x01\x00\x01\x00",  # a null cluster id
        head + b"\x02\x00\x01\x00\x00" + bytes([len(cluster)]) + cluster,  # tag 0 twice
        head + b"\x02\x07\x03abc\xc8\x01\x00",  # unknown tags 7 and 200
        head + b"\x01\x07\x05abc",  # an unknown tag longer than what is left
        head + b"\x01\x07",  # cut off
        head + b"\x80\x80\x80\x80\x80\x01",  # a count longer than five bytes
        head + b"\xff\xff\xff\xff\x7f",  # a count past 32 bits
    ]


@pytest.mark.parametrize("data", _tagged_sections())
def test_tagged_field_sections(data):
    assert_same_decoding(FetchRequest, 12, True, data)


def test_the_varint_fast_path_reads_what_the_reader_reads():
    rng = random.Random(7)
    edges = [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF]
    cases = [bytes(rng.choice(edges) for _ in range(n)) for n in range(7) for _ in range(50)]
    cases += [rng.randbytes(rng.randint(0, 6)) for _ in range(2000)]
    for data in cases:
        view = memoryview(data).cast("B")
        status, result = outcome(lambda view=view: (Reader(view).unsigned_varint(), _end(view)))
        expected = result if status == "ok" else (-1, 0)
        assert read_uvarint(view, 0, len(view)) == expected, data.hex()


def _end(view: memoryview) -> int:
    reader = Reader(view)
    reader.unsigned_varint()
    return reader.pos
