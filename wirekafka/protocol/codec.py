"""Encoders and decoders built from the declarations in :mod:`.schema`.

For each (struct class, version, flexible) :mod:`.codegen` writes, once, the
source of a decoder and an encoder function and :func:`struct_codec` caches
them. Flexible versions (KIP-482) use compact strings, bytes and arrays and
end every struct with a tagged-field section; unknown tags are skipped.

Requests and responses carry their version in a header (:mod:`.rpc`); a
:class:`DataMessage` carries its own, in front of the struct.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from wirekafka.protocol.codegen import StructCodec, struct_codec
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer, Reader, Writer
from wirekafka.protocol.schema import VersionRange

__all__ = [
    "DataMessage",
    "StructCodec",
    "data_message",
    "decode_struct",
    "encode_struct",
    "skip_tagged_fields",
    "struct_codec",
    "write_empty_tagged_fields",
]


def skip_tagged_fields(reader: Reader) -> None:
    """Read past a tagged-field section whose tags are all unknown."""
    for _ in range(reader.unsigned_varint()):
        reader.unsigned_varint()
        reader.sub_reader(reader.unsigned_varint(), "tagged field")


def write_empty_tagged_fields(writer: Writer) -> None:
    writer.unsigned_varint(0)


S = TypeVar("S")


def decode_struct(cls: type[S], version: int, flexible: bool, reader: Reader) -> S:
    read = struct_codec(cast(type, cls), version, flexible).read
    value, reader.pos = read(reader.buf, reader.pos, reader.end)
    return cast(S, value)


def encode_struct(value: Any, version: int, flexible: bool, writer: Writer) -> None:
    struct_codec(cast(type, type(value)), version, flexible).write(writer, value)


@dataclass(frozen=True, slots=True)
class DataMessage(Generic[S]):
    """A declared struct stored on its own rather than sent as a request or a
    response (a Kafka message spec of ``"type": "data"``), such as the keys and
    values of ``__consumer_offsets``.

    Its bytes are an int16 version and the struct at that version, nothing
    after it (Kafka's ``MessageUtil.toVersionPrefixedBytes``). Decoding raises
    :class:`ProtocolError` for an unknown version, a malformed struct or bytes
    left over.
    """

    cls: type[S]
    versions: VersionRange
    flexible_versions: VersionRange

    @property
    def name(self) -> str:
        return self.cls.__name__

    def encode(self, value: S, version: int) -> bytes:
        if version not in self.versions:
            raise ValueError(f"{self.name} version {version} not in {self.versions}")
        if not isinstance(value, self.cls):
            raise TypeError(f"{type(value).__name__} is not a {self.name}")
        writer = Writer()
        writer.int16(version)
        encode_struct(value, version, version in self.flexible_versions, writer)
        return writer.getvalue()

    def decode(self, data: Buffer) -> S:
        reader = Reader(data)
        return self.decode_rest(reader.int16(), reader)

    def decode_rest(self, version: int, reader: Reader) -> S:
        """The struct at ``version`` (already read), taking up the rest of ``reader``."""
        if version not in self.versions:
            raise ProtocolError(f"unknown {self.name} version {version}")
        value = decode_struct(self.cls, version, version in self.flexible_versions, reader)
        if reader.remaining:
            raise ProtocolError(f"{reader.remaining} bytes left over after {self.name} v{version}")
        return value


def data_message(cls: type[S], versions: str, flexible_versions: str) -> DataMessage[S]:
    """A :class:`DataMessage` with version ranges written as in Kafka's specs ("0-4", "4+")."""
    return DataMessage(cls, VersionRange.parse(versions), VersionRange.parse(flexible_versions))
