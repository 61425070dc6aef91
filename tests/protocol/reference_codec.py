"""The per-field codec wirekafka used before the generated one, kept as the oracle.

This is ``wirekafka/protocol/codec.py`` as it was before :mod:`wirekafka.protocol.codegen`
(per-field closures; a decode builds a dict and calls ``cls(**values)``), unchanged
but for its imports. :mod:`.test_codegen` checks that the generated codec
produces the same bytes, values and errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Reader, Writer
from wirekafka.protocol.schema import (
    ArrayType,
    Primitive,
    StructType,
    WireType,
    field_spec,
)

Decoder = Callable[[Reader], Any]
Encoder = Callable[[Writer, Any], None]

_FIXED_SIZES = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "float64": 8, "uuid": 16,
}  # fmt: skip


def _min_bytes(wire_type: WireType, version: int, flexible: bool) -> int:
    """The fewest bytes one value of this type can take on the wire."""
    if isinstance(wire_type, Primitive):
        if wire_type.name in _FIXED_SIZES:
            return _FIXED_SIZES[wire_type.name]
        if flexible:
            return 1
        return 2 if wire_type.name == "string" else 4
    if isinstance(wire_type, ArrayType):
        return 1 if flexible else 4
    return struct_codec(wire_type.cls, version, flexible).min_bytes


def _primitive_decoder(name: str, flexible: bool, nullable: bool, what: str) -> Decoder:
    if name in _FIXED_SIZES:
        fixed: Decoder = getattr(Reader, "boolean" if name == "bool" else name)
        return fixed
    if name == "string":
        if flexible:
            method = Reader.compact_nullable_string if nullable else Reader.compact_string
        else:
            method = Reader.nullable_string if nullable else Reader.string
        return method
    read: Decoder
    if name == "records":  # record data is large: a view into the frame, not a copy
        read = Reader.compact_nullable_bytes_view if flexible else Reader.nullable_bytes_view
    else:
        read = Reader.compact_nullable_bytes if flexible else Reader.nullable_bytes
    if nullable:
        return read

    def read_not_null(reader: Reader) -> Any:
        value = read(reader)
        if value is None:
            raise ProtocolError(f"null in non-nullable {what}")
        return value

    return read_not_null


def _primitive_encoder(name: str, flexible: bool, nullable: bool, what: str) -> Encoder:
    if name in _FIXED_SIZES:
        fixed: Encoder = getattr(Writer, "boolean" if name == "bool" else name)
        return fixed
    write: Encoder
    if name == "string":
        write = Writer.compact_nullable_string if flexible else Writer.nullable_string
    elif name == "records":
        write = _compact_records if flexible else _records
    else:
        write = Writer.compact_nullable_bytes if flexible else Writer.nullable_bytes
    if nullable:
        return write

    def write_not_null(writer: Writer, value: Any) -> None:
        if value is None:
            raise ValueError(f"{what} is not nullable in this version")
        write(writer, value)

    return write_not_null


def _records(writer: Writer, value: Any) -> None:
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        writer.nullable_bytes(value)
    else:  # external record data, e.g. a file span sent with sendfile
        writer.int32(value.size_bytes)
        writer.external(value)


def _compact_records(writer: Writer, value: Any) -> None:
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        writer.compact_nullable_bytes(value)
    else:
        writer.unsigned_varint(value.size_bytes + 1)
        writer.external(value)


def _decoder(
    wire_type: WireType, version: int, flexible: bool, nullable: bool, what: str
) -> Decoder:
    if isinstance(wire_type, Primitive):
        return _primitive_decoder(wire_type.name, flexible, nullable, what)
    if isinstance(wire_type, StructType):
        if nullable:
            raise TypeError(f"{what}: nullable structs are not supported")
        return struct_codec(wire_type.cls, version, flexible).decode
    element = _decoder(wire_type.element, version, flexible, False, what)
    element_bytes = max(1, _min_bytes(wire_type.element, version, flexible))
    read_length = Reader.compact_array_length if flexible else Reader.array_length

    def read_array(reader: Reader) -> list[Any] | None:
        count = read_length(reader, element_bytes)
        if count == -1:
            if not nullable:
                raise ProtocolError(f"null in non-nullable array {what}")
            return None
        return [element(reader) for _ in range(count)]

    return read_array


def _encoder(
    wire_type: WireType, version: int, flexible: bool, nullable: bool, what: str
) -> Encoder:
    if isinstance(wire_type, Primitive):
        return _primitive_encoder(wire_type.name, flexible, nullable, what)
    if isinstance(wire_type, StructType):
        return struct_codec(wire_type.cls, version, flexible).encode
    element = _encoder(wire_type.element, version, flexible, False, what)
    write_length = Writer.compact_array_length if flexible else Writer.array_length

    def write_array(writer: Writer, value: list[Any] | None) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"array {what} is not nullable in this version")
            write_length(writer, -1)
            return
        write_length(writer, len(value))
        for item in value:
            element(writer, item)

    return write_array


@dataclass(frozen=True, slots=True)
class _TaggedField:
    name: str
    tag: int
    decode: Decoder
    encode: Encoder
    default: Any


def _default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise TypeError(f"field {field.name!r} has no default")


class StructCodec:
    """Encoder and decoder of one struct class at one version."""

    def __init__(self, cls: type, version: int, flexible: bool) -> None:
        self.cls = cls
        self.version = version
        self.flexible = flexible
        self.fields: list[tuple[str, Decoder, Encoder]] = []
        self.tagged: list[_TaggedField] = []
        self.min_bytes = 1 if flexible else 0
        for field in dataclasses.fields(cls):
            spec = field_spec(field)
            if version not in spec.versions:
                continue
            what = f"{cls.__name__}.{field.name}"
            nullable = version in spec.nullable
            decode = _decoder(spec.wire_type, version, flexible, nullable, what)
            encode = _encoder(spec.wire_type, version, flexible, nullable, what)
            if flexible and version in spec.tagged_versions:
                assert spec.tag is not None
                self.tagged.append(
                    _TaggedField(field.name, spec.tag, decode, encode, _default_of(field))
                )
            else:
                self.fields.append((field.name, decode, encode))
                self.min_bytes += _min_bytes(spec.wire_type, version, flexible)
        self.tagged.sort(key=lambda tagged: tagged.tag)
        self._tags = {tagged.tag: tagged for tagged in self.tagged}

    def decode(self, reader: Reader) -> Any:
        values = {name: decode(reader) for name, decode, _ in self.fields}
        if self.flexible:
            self._decode_tagged(reader, values)
        return self.cls(**values)

    def _decode_tagged(self, reader: Reader, values: dict[str, Any]) -> None:
        count = reader.unsigned_varint()
        for _ in range(count):
            tag = reader.unsigned_varint()
            size = reader.unsigned_varint()
            sub = reader.sub_reader(size, "tagged field")
            known = self._tags.get(tag)
            if known is None:
                continue  # a tag from a newer version: skip it
            values[known.name] = known.decode(sub)
            if sub.remaining:
                raise ProtocolError(
                    f"tagged field {known.name} has {sub.remaining} bytes left over"
                )

    def encode(self, writer: Writer, value: Any) -> None:
        for name, _, encode in self.fields:
            encode(writer, getattr(value, name))
        if self.flexible:
            self._encode_tagged(writer, value)

    def _encode_tagged(self, writer: Writer, value: Any) -> None:
        present = [
            (tagged, item)
            for tagged in self.tagged
            if (item := getattr(value, tagged.name)) != tagged.default
        ]
        writer.unsigned_varint(len(present))
        for tagged, item in present:
            inner = Writer()
            tagged.encode(inner, item)
            data = inner.getvalue()
            writer.unsigned_varint(tagged.tag)
            writer.unsigned_varint(len(data))
            writer.raw(data)


@cache
def struct_codec(cls: type, version: int, flexible: bool) -> StructCodec:
    return StructCodec(cls, version, flexible)
