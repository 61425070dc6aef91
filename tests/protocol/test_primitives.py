"""Primitive types: exact encodings, edges, and short reads that raise."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Reader, Writer


def written(method: str, value: object) -> bytes:
    writer = Writer()
    getattr(writer, method)(value)
    return writer.getvalue()


@pytest.mark.parametrize(
    ("method", "value", "encoded"),
    [
        ("int8", -1, b"\xff"),
        ("int16", -2, b"\xff\xfe"),
        ("uint16", 65535, b"\xff\xff"),
        ("int32", 1, b"\x00\x00\x00\x01"),
        ("uint32", 2**32 - 1, b"\xff\xff\xff\xff"),
        ("int64", -1, b"\xff" * 8),
        ("float64", 1.5, b"\x3f\xf8" + b"\x00" * 6),
        ("boolean", True, b"\x01"),
        ("unsigned_varint", 0, b"\x00"),
        ("unsigned_varint", 300, b"\xac\x02"),
        ("varint", 0, b"\x00"),
        ("varint", -1, b"\x01"),
        ("varint", 1, b"\x02"),
        ("varint", -64, b"\x7f"),
        ("varint", 64, b"\x80\x01"),
        ("varint", 2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        ("varint", -(2**31), b"\xff\xff\xff\xff\x0f"),
        ("varlong", -(2**63), b"\xff" * 9 + b"\x01"),
        ("string", "ab", b"\x00\x02ab"),
        ("nullable_string", None, b"\xff\xff"),
        ("compact_nullable_string", None, b"\x00"),
        ("compact_string", "", b"\x01"),
        ("compact_string", "ab", b"\x03ab"),
        ("nullable_bytes", None, b"\xff\xff\xff\xff"),
        ("nullable_bytes", b"\x00", b"\x00\x00\x00\x01\x00"),
        ("compact_nullable_bytes", b"", b"\x01"),
        ("uuid", uuid.UUID(int=1), b"\x00" * 15 + b"\x01"),
    ],
)
def test_known_encodings_round_trip(method, value, encoded):
    assert written(method, value) == encoded
    reader = Reader(encoded)
    assert getattr(reader, method)() == value
    assert reader.remaining == 0


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value):
    assert Reader(written("varint", value)).varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value):
    assert Reader(written("varlong", value)).varlong() == value


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(value):
    assert Reader(written("unsigned_varint", value)).unsigned_varint() == value


@pytest.mark.parametrize(
    ("method", "data"),
    [
        ("int8", b""),
        ("int16", b"\x00"),
        ("int32", b"\x00\x00\x00"),
        ("int64", b"\x00" * 7),
        ("uuid", b"\x00" * 15),
        ("float64", b"\x00"),
        ("varint", b"\x80\x80"),  # continuation bit with nothing after it
        ("varint", b"\xff\xff\xff\xff\xff\x01"),  # longer than 5 bytes
        ("varint", b"\xff\xff\xff\xff\x7f"),  # 5 bytes but above 32 bits
        ("varlong", b"\xff" * 10 + b"\x01"),
        ("string", b"\x00\x05abc"),  # length says 5, 3 left
        ("string", b"\xff\xff"),  # null in a non-nullable string
        ("string", b"\xff\xfe"),  # -2
        ("string", b"\x00\x02\xff\xfe"),  # not UTF-8
        ("compact_string", b"\x00"),  # null in a non-nullable compact string
        ("compact_string", b"\x05ab"),
        ("nullable_bytes", b"\x00\x00\x00\x09abc"),
        ("nullable_bytes", b"\xff\xff\xff\xfe"),
        ("compact_nullable_bytes", b"\x09ab"),
    ],
)
def test_short_or_bad_reads_raise_protocol_error(method, data):
    reader = Reader(data)
    with pytest.raises(ProtocolError):
        getattr(reader, method)()


def test_short_read_never_moves_past_the_end():
    reader = Reader(b"\x00\x00\x00\x10" + b"x" * 4)
    with pytest.raises(ProtocolError, match="short read"):
        reader.nullable_bytes()


def test_array_length_is_checked_against_bytes_left():
    reader = Reader(b"\x7f\xff\xff\xff" + b"\x00" * 8)
    with pytest.raises(ProtocolError, match="cannot fit"):
        reader.array_length(min_element_bytes=4)
    assert Reader(b"\x00\x00\x00\x02" + b"\x00" * 8).array_length(4) == 2
    assert Reader(b"\xff\xff\xff\xff").array_length(4) == -1
    assert Reader(b"\x00").compact_array_length(4) == -1


def test_sub_reader_is_bounded():
    reader = Reader(b"\x00\x01\x02\x03\x04")
    sub = reader.sub_reader(2, "part")
    assert sub.int16() == 1
    with pytest.raises(ProtocolError):
        sub.int8()
    assert reader.int8() == 2
    with pytest.raises(ProtocolError):
        reader.sub_reader(3, "part")


def test_writer_keeps_large_payloads_as_parts_without_copying():
    payload = bytearray(b"r" * 10_000)
    writer = Writer()
    writer.int32(len(payload))
    writer.raw(payload)
    writer.int8(7)
    parts = writer.parts()
    assert len(writer) == 4 + 10_000 + 1
    assert any(isinstance(p, memoryview) and p.obj is payload for p in parts)
    assert writer.getvalue() == b"\x00\x00\x27\x10" + bytes(payload) + b"\x07"


def test_writer_external_parts_count_in_length():
    class Span:
        size_bytes = 1234

    writer = Writer()
    writer.int32(Span.size_bytes)
    span = Span()
    writer.external(span)
    assert len(writer) == 4 + 1234
    assert writer.parts()[-1] is span
    with pytest.raises(TypeError):
        writer.getvalue()


def test_writer_range_checks():
    with pytest.raises(ValueError):
        written("varint", 2**31)
    with pytest.raises(ValueError):
        written("string", "x" * 40_000)


def test_strings_hold_at_most_32767_bytes_compact_or_not():
    longest = "é" * (0x7FFF // 2) + "x"  # 32767 bytes of UTF-8
    for write, read in [("string", "string"), ("compact_string", "compact_string")]:
        assert getattr(Reader(written(write, longest)), read)() == longest
        with pytest.raises(ValueError):
            written(write, longest + "x")
    # A compact string 32768 bytes long is refused on reading too, as Kafka refuses it.
    data = Writer()
    data.unsigned_varint(0x8000 + 1)
    data.raw(b"x" * 0x8000)
    with pytest.raises(ProtocolError, match="longer than a string may be"):
        Reader(data.getvalue()).compact_string()
