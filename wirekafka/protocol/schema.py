"""How messages are declared: dataclasses whose fields carry their wire facts.

A message or nested struct is a slotted, keyword-only dataclass made with
:func:`message`. Each field is declared with one of the helpers below, which
record the wire type, the versions the field exists in, the versions in which
it may be null, its default and, for tagged fields, its tag::

    @message
    class HeartbeatRequest:
        group_id: str = string("0+")
        generation_id: int = int32("0+")
        member_id: str = string("0+")
        group_instance_id: str | None = string("3+", nullable="3+", default=None)

``secret=True`` keeps a field (a SASL token, a salted password) out of the
message's repr, so no log line or test report shows it.

Version strings follow Kafka's message specs: ``"0+"``, ``"3-7"``, ``"5"`` or
``"none"``. :mod:`wirekafka.protocol.codec` turns the declarations into
encoders and decoders per version.
"""

from __future__ import annotations

import dataclasses
import uuid as uuid_module
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, cast, dataclass_transform

from wirekafka.protocol.primitives import ExternalBytes

NO_UPPER_VERSION = 0x7FFF


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of versions; empty when ``low > high``."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None or text == "none":
            return NONE
        if text.endswith("+"):
            return cls(int(text[:-1]), NO_UPPER_VERSION)
        low, sep, high = text.partition("-")
        return cls(int(low), int(high) if sep else int(low))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    def __bool__(self) -> bool:
        return self.low <= self.high

    def __str__(self) -> str:
        if not self:
            return "none"
        if self.high == NO_UPPER_VERSION:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


NONE = VersionRange(0, -1)


# Wire types. The codec dispatches on these; they hold no behaviour.


@dataclass(frozen=True, slots=True)
class Primitive:
    """A fixed- or variable-size scalar: int8 ... float64, bool, uuid, string, bytes."""

    name: str


BOOL = Primitive("bool")
INT8 = Primitive("int8")
INT16 = Primitive("int16")
UINT16 = Primitive("uint16")
INT32 = Primitive("int32")
UINT32 = Primitive("uint32")
INT64 = Primitive("int64")
FLOAT64 = Primitive("float64")
UUID = Primitive("uuid")
STRING = Primitive("string")
BYTES = Primitive("bytes")
# Record data: bytes on the wire, kept unparsed (see wirekafka.protocol.records).
# Decoded as a view into the frame; encoded from bytes or from external parts
# (file spans) that the sender moves itself.
RECORDS = Primitive("records")
Records: TypeAlias = bytes | bytearray | memoryview | ExternalBytes


@dataclass(frozen=True, slots=True)
class StructType:
    cls: type


@dataclass(frozen=True, slots=True)
class ArrayType:
    element: Primitive | StructType


WireType = Primitive | StructType | ArrayType

ZERO_UUID = uuid_module.UUID(int=0)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """The wire facts about one field; its name is the dataclass field's."""

    wire_type: WireType
    versions: VersionRange
    nullable: VersionRange
    tag: int | None
    tagged_versions: VersionRange


_WIRE = "wire"


def field_spec(field: dataclasses.Field[Any]) -> FieldSpec:
    spec = field.metadata.get(_WIRE)
    if not isinstance(spec, FieldSpec):
        raise TypeError(f"field {field.name!r} was not declared with a wire type")
    return spec


def _field(
    wire_type: WireType,
    versions: str,
    *,
    nullable: str | None,
    tag: int | None,
    tagged: str | None,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
    secret: bool = False,
) -> Any:
    if (tag is None) != (tagged is None):
        raise ValueError("a tagged field needs both tag and tagged versions")
    spec = FieldSpec(
        wire_type=wire_type,
        versions=VersionRange.parse(versions),
        nullable=VersionRange.parse(nullable),
        tag=tag,
        tagged_versions=VersionRange.parse(tagged),
    )
    return dataclasses.field(
        default=default,
        default_factory=default_factory,
        metadata={_WIRE: spec},
        repr=not secret,
    )


def _scalar(wire_type: Primitive, default: Any) -> Callable[..., Any]:
    def declare(
        versions: str,
        *,
        default: Any = default,
        tag: int | None = None,
        tagged: str | None = None,
        nullable: str | None = None,
        secret: bool = False,
    ) -> Any:
        return _field(
            wire_type,
            versions,
            nullable=nullable,
            tag=tag,
            tagged=tagged,
            default=default,
            secret=secret,
        )

    declare.__name__ = wire_type.name
    return declare


boolean = _scalar(BOOL, False)
int8 = _scalar(INT8, 0)
int16 = _scalar(INT16, 0)
uint16 = _scalar(UINT16, 0)
int32 = _scalar(INT32, 0)
uint32 = _scalar(UINT32, 0)
int64 = _scalar(INT64, 0)
float64 = _scalar(FLOAT64, 0.0)
uuid = _scalar(UUID, ZERO_UUID)
string = _scalar(STRING, "")
bytes_ = _scalar(BYTES, b"")
records = _scalar(RECORDS, None)


def array(
    element: Primitive | type,
    versions: str,
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
) -> Any:
    """An array of a primitive or of a declared struct; its default is empty."""
    return _field(
        ArrayType(_element(element)),
        versions,
        nullable=nullable,
        tag=tag,
        tagged=tagged,
        default_factory=list,
    )


def _element(element: Primitive | type) -> Primitive | StructType:
    return element if isinstance(element, Primitive) else StructType(element)


def struct(cls: type, versions: str, *, tag: int | None = None, tagged: str | None = None) -> Any:
    """A single nested struct; its default is an instance with default fields."""
    return _field(
        StructType(cls), versions, nullable=None, tag=tag, tagged=tagged, default_factory=cls
    )


T = TypeVar("T")


@dataclass_transform(kw_only_default=True)
def message(cls: type[T]) -> type[T]:
    """Make a declared class a slotted, keyword-only dataclass and check its fields."""
    made = dataclass(slots=True, kw_only=True)(cls)
    for field in dataclasses.fields(cast(Any, made)):
        field_spec(field)
    return made
