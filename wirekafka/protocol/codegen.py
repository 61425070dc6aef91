"""Generated decoders and encoders: one pair per (struct class, version, flexible).

As :mod:`dataclasses` writes ``__init__``, :class:`StructCodec` writes the
source of a function that decodes one struct at one version and of one that
encodes it, ``exec``\\ s them once, and :func:`struct_codec` caches them. The
generated code does what a codec of per-field closures would do, with the
dispatch done ahead of time:

* runs of consecutive fixed-width fields are read with one precompiled
  ``struct.Struct.unpack_from`` and written with one ``pack``;
* strings, bytes, record data and array lengths are read inline (a length,
  a bounds check, a slice); arrays of structs are loops calling the element's
  generated decoder, arrays of numbers one ``unpack_from``;
* a decoded struct is made with ``object.__new__`` and every field assigned
  (those the version lacks to their defaults), not with a keyword call to the
  dataclass ``__init__``; a class that is frozen or has a ``__post_init__`` is
  called with keywords instead.

Errors are the :class:`~.primitives.Reader`'s own. An inline read takes only
the common case (enough bytes, a length that fits, valid UTF-8); for anything
else it hands the field, from its first byte, to the Reader method a per-field
decoder would call (:func:`_slow`), which returns the value (a null, say) or
raises that method's ProtocolError. The encoders raise the errors a per-field
encoder would, from the same operations (``str.encode``, ``struct.pack``,
``len``, the Writer's methods) and the same checks.

A decoder is ``read(buf, pos, end) -> (value, pos)`` over a Reader's buffer (a
byte memoryview), reading from ``buf[pos:end]``. An encoder is
``write(writer, value)`` and appends to ``writer._buf``, which a Writer never
replaces. ``read_source`` and ``write_source`` keep the generated text.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, NoReturn, cast

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import MAX_STRING_BYTES, Reader, Writer, string_bytes
from wirekafka.protocol.schema import ArrayType, Primitive, StructType, WireType, field_spec

ReadFunction = Callable[[memoryview, int, int], tuple[Any, int]]
WriteFunction = Callable[[Writer, Any], None]
Decoder = Callable[[Reader], Any]
Encoder = Callable[[Writer, Any], None]

# struct formats of the fixed-width primitives, and their sizes
_FORMATS = {
    "bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
    "int64": "q", "float64": "d", "uuid": "16s",
}  # fmt: skip
FIXED_SIZES = {name: struct.calcsize(">" + fmt) for name, fmt in _FORMATS.items()}


def min_bytes(wire_type: WireType, version: int, flexible: bool) -> int:
    """The fewest bytes one value of this type can take on the wire."""
    if isinstance(wire_type, Primitive):
        if wire_type.name in FIXED_SIZES:
            return FIXED_SIZES[wire_type.name]
        if flexible:
            return 1
        return 2 if wire_type.name == "string" else 4
    if isinstance(wire_type, ArrayType):
        return 1 if flexible else 4
    return struct_codec(wire_type.cls, version, flexible).min_bytes


# The per-field path: what a decoder of one field calls. The generated
# decoders fall back on these; the encoders call the bytes writers.


def _fixed_reader(name: str) -> Decoder:
    read: Decoder = getattr(Reader, "boolean" if name == "bool" else name)
    return read


def primitive_reader(name: str, flexible: bool, nullable: bool, what: str) -> Decoder:
    """The Reader method that reads one value of a primitive, null check included."""
    if name in FIXED_SIZES:
        return _fixed_reader(name)
    if name == "string":
        if flexible:
            return Reader.compact_nullable_string if nullable else Reader.compact_string
        return Reader.nullable_string if nullable else Reader.string
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


def array_length_reader(flexible: bool, element_bytes: int, nullable: bool, what: str) -> Decoder:
    """Reads an array's count (-1 for null), checked against the bytes left."""
    read_length = Reader.compact_array_length if flexible else Reader.array_length

    def read(reader: Reader) -> int:
        count = read_length(reader, element_bytes)
        if count == -1 and not nullable:
            raise ProtocolError(f"null in non-nullable array {what}")
        return count

    return read


def _records(writer: Writer, value: Any) -> None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        writer.nullable_bytes(value)
    else:  # external record data, e.g. a file span sent with sendfile
        writer.int32(value.size_bytes)
        writer.external(value)


def _compact_records(writer: Writer, value: Any) -> None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        writer.compact_nullable_bytes(value)
    else:
        writer.unsigned_varint(value.size_bytes + 1)
        writer.external(value)


def bytes_writer(name: str, flexible: bool) -> Encoder:
    """Writes a bytes or records value that is not null."""
    if name == "records":
        return _compact_records if flexible else _records
    return Writer.compact_nullable_bytes if flexible else Writer.nullable_bytes


# Helpers the generated functions call, mostly off the common path.


def _slow(buf: memoryview, pos: int, end: int, read: Decoder) -> tuple[Any, int]:
    """``read`` run by a Reader at ``pos``: the value and the position after it."""
    reader = Reader(buf, pos, end)
    return read(reader), reader.pos


def _fail(buf: memoryview, pos: int, end: int, read: Decoder) -> NoReturn:
    """Raise the error ``read`` raises at ``pos``, where an inline read failed."""
    _slow(buf, pos, end, read)
    raise AssertionError(f"{read} read at {pos} what the generated decoder refused")


def _short(buf: memoryview, pos: int, end: int, names: tuple[str, ...]) -> NoReturn:
    """Raise the short read of a run of fixed-width fields that does not fit."""
    reader = Reader(buf, pos, end)
    for name in names:
        _fixed_reader(name)(reader)
    raise AssertionError(f"fields {names} fit at {pos} though the generated decoder found not")


def read_uvarint(buf: memoryview | bytearray | bytes, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 32 bits and the position after it, or
    ``(-1, pos)`` if the one at ``pos`` is cut off, too long or too large."""
    if pos + 1 < end and buf[pos] >= 0x80 > buf[pos + 1]:  # two bytes: up to 16 KiB
        return (buf[pos] & 0x7F) | buf[pos + 1] << 7, pos + 2
    result = shift = 0
    for index in range(pos, min(pos + 5, end)):
        byte = buf[index]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result, index + 1) if result <= 0xFFFFFFFF else (-1, pos)
        shift += 7
    return -1, pos


class _ArrayLayouts(dict[int, struct.Struct]):
    """The layouts of arrays of one fixed-width number, by count."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt

    def __missing__(self, count: int) -> struct.Struct:
        layout = struct.Struct(f">{count}{self.fmt}")
        if count <= 64:  # keep the common counts
            self[count] = layout
        return layout


def _skip_tagged(buf: memoryview, pos: int, end: int) -> int:
    """Read past a tagged-field section of tags this struct does not know."""
    reader = Reader(buf, pos, end)
    for _ in range(reader.unsigned_varint()):
        reader.unsigned_varint()
        reader.sub_reader(reader.unsigned_varint(), "tagged field")
    return reader.pos


_MISSING: Any = object()


@dataclasses.dataclass(frozen=True, slots=True)
class _Tagged:
    """A field tagged in this version, with a decoder and an encoder of its value."""

    name: str
    tag: int
    default: Any  # a value equal to it is left out of the section
    read: ReadFunction
    write: WriteFunction


def _read_tagged(
    buf: memoryview, pos: int, end: int, indexes: dict[int, int], fields: tuple[_Tagged, ...]
) -> list[Any]:
    """A tagged-field section: the values of ``fields`` (``_MISSING`` if absent),
    then the position after it. ``indexes`` maps tags to places in ``fields``;
    unknown tags are skipped."""
    values = [_MISSING] * len(fields)
    reader = Reader(buf, pos, end)
    for _ in range(reader.unsigned_varint()):
        tag = reader.unsigned_varint()
        sub = reader.sub_reader(reader.unsigned_varint(), "tagged field")
        index = indexes.get(tag)
        if index is None:
            continue  # a tag from a newer version: skip it
        field = fields[index]
        values[index], at = field.read(buf, sub.pos, sub.end)
        if at != sub.end:
            raise ProtocolError(f"tagged field {field.name} has {sub.end - at} bytes left over")
    values.append(reader.pos)
    return values


def _write_tagged(writer: Writer, value: Any, fields: tuple[_Tagged, ...]) -> None:
    """A tagged-field section: the fields away from their defaults, by tag."""
    present = [
        (field, item) for field in fields if (item := getattr(value, field.name)) != field.default
    ]
    writer.unsigned_varint(len(present))
    for field, item in present:
        inner = Writer()
        field.write(inner, item)
        data = inner.getvalue()
        writer.unsigned_varint(field.tag)
        writer.unsigned_varint(len(data))
        writer.raw(data)


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

# What every generated function sees, besides its own constants.
_HELPERS: dict[str, Any] = {
    "_slow": _slow, "_fail": _fail, "_short": _short, "_uvarint": read_uvarint,
    "_skip_tagged": _skip_tagged, "_read_tagged": _read_tagged, "_write_tagged": _write_tagged,
    "_MISSING": _MISSING, "_UUID": uuid.UUID, "_new": object.__new__,
    "_i16": _I16.unpack_from, "_i32": _I32.unpack_from, "_pack_i16": _I16.pack,
    "_pack_i32": _I32.pack, "_string_bytes": string_bytes,
}  # fmt: skip


class _Source:
    """The text of one generated function, and the constants it refers to."""

    def __init__(self, name: str, version: int, flexible: bool) -> None:
        self.name = name
        self.version = version
        self.flexible = flexible
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = dict(_HELPERS)
        self._depth = 1
        self._locals = 0

    def add(self, line: str) -> None:
        self.lines.append("    " * self._depth + line)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.add(header)
        self._depth += 1
        yield
        self._depth -= 1

    def const(self, value: Any, hint: str) -> str:
        """The name under which the function sees ``value``."""
        name = f"_{hint}_{len(self.namespace) - len(_HELPERS)}"
        self.namespace[name] = value
        return name

    def local(self, hint: str) -> str:
        """A local variable name of the function's own."""
        self._locals += 1
        return f"{hint}{self._locals}"

    def codec(self, cls: type) -> StructCodec:
        return struct_codec(cls, self.version, self.flexible)

    def build(self, params: str) -> tuple[Callable[..., Any], str]:
        text = f"def {self.name}({params}):\n" + "\n".join(self.lines) + "\n"
        exec(compile(text, f"<wirekafka codec {self.name}>", "exec"), self.namespace)
        function: Callable[..., Any] = self.namespace[self.name]
        return function, text


class _Decoder(_Source):
    """Writes statements that read values at ``pos`` into locals, moving ``pos``."""

    def value(self, target: str, wire_type: WireType, nullable: bool, what: str) -> None:
        if isinstance(wire_type, ArrayType):
            self.array(target, wire_type.element, nullable, what)
        elif isinstance(wire_type, StructType):
            if nullable:
                raise TypeError(f"{what}: nullable structs are not supported")
            read = self.const(self.codec(wire_type.cls).read, "read")
            self.add(f"{target}, pos = {read}(buf, pos, end)")
        elif wire_type.name in FIXED_SIZES:
            self.fixed([target], [wire_type.name])
        else:
            self.sized(target, wire_type.name, nullable, what)

    def fixed(self, targets: list[str], names: list[str]) -> None:
        """A run of fixed-width values, with one ``unpack_from``."""
        layout = struct.Struct(">" + "".join(_FORMATS[name] for name in names))
        with self.block(f"if end - pos < {layout.size}:"):
            self.add(f"_short(buf, pos, end, {self.const(tuple(names), 'names')})")
        self.add(f"{', '.join(targets)}, = {self.const(layout.unpack_from, 'unpack')}(buf, pos)")
        self.add(f"pos += {layout.size}")
        for target, name in zip(targets, names, strict=True):
            if name == "uuid":
                self.add(f"{target} = _UUID(bytes={target})")

    def length(self, count: str, name: str = "bytes") -> None:
        """Set ``count`` to the length (or count) at ``pos``: -1 for null, -2 if
        cut off or malformed; and ``start`` to the position after it."""
        if self.flexible:
            with self.block(f"if pos < end and ({count} := buf[pos]) < 0x80:"):
                self.add("start = pos + 1")
            with self.block("else:"):
                self.add(f"{count}, start = _uvarint(buf, pos, end)")
            self.add(f"{count} -= 1")
        else:
            size = 2 if name == "string" else 4
            self.add(f"{count} = _i{size * 8}(buf, pos)[0] if end - pos >= {size} else -2")
            self.add(f"start = pos + {size}")

    def sized(self, target: str, name: str, nullable: bool, what: str) -> None:
        """A string, bytes or record data: a length, then that many bytes."""
        slow = self.const(primitive_reader(name, self.flexible, nullable, what), "slow")
        self.length("n", name)
        fits = "0 <= n <= end - start"
        if self.flexible and name == "string":  # as the Reader refuses longer ones
            fits += f" and n <= {MAX_STRING_BYTES:#x}"
        with self.block(f"if {fits}:"):
            if name == "string":
                with self.block("try:"):
                    self.add(f"{target} = str(buf[start : start + n], 'utf-8')")
                with self.block("except UnicodeDecodeError:"):
                    self.add(f"_fail(buf, pos, end, {slow})")
            elif name == "records":  # a view into the frame, not a copy
                self.add(f"{target} = buf[start : start + n]")
            else:
                self.add(f"{target} = bytes(buf[start : start + n])")
            self.add("pos = start + n")
        if nullable:
            with self.block("elif n == -1:"):
                self.add(f"{target} = None")
                self.add("pos = start")
        with self.block("else:"):
            self.add(f"{target}, pos = _slow(buf, pos, end, {slow})")

    def array(
        self, target: str, element: Primitive | StructType, nullable: bool, what: str
    ) -> None:
        element_bytes = max(1, min_bytes(element, self.version, self.flexible))
        slow = array_length_reader(self.flexible, element_bytes, nullable, what)
        count = self.local("count")
        self.length(count)
        with self.block(f"if 0 <= {count} and {count} * {element_bytes} <= end - start:"):
            self.add("pos = start")
        if nullable:
            with self.block(f"elif {count} == -1:"):
                self.add("pos = start")
        with self.block("else:"):
            self.add(f"{count}, pos = _slow(buf, pos, end, {self.const(slow, 'length')})")
        if not nullable:
            self.elements(target, count, element, what)
            return
        with self.block(f"if {count} == -1:"):
            self.add(f"{target} = None")
        with self.block("else:"):
            self.elements(target, count, element, what)

    def elements(self, target: str, count: str, element: Primitive | StructType, what: str) -> None:
        """``count`` elements, known to fit in the bytes left."""
        if isinstance(element, Primitive) and element.name == "uuid":
            offsets = f"range(pos, pos + 16 * {count}, 16)"
            self.add(f"{target} = [_UUID(bytes=bytes(buf[i : i + 16])) for i in {offsets}]")
            self.add(f"pos += 16 * {count}")
        elif isinstance(element, Primitive) and element.name in FIXED_SIZES:
            layouts = self.const(_ArrayLayouts(_FORMATS[element.name]), "layouts")
            self.add(f"{target} = list({layouts}[{count}].unpack_from(buf, pos))")
            self.add(f"pos += {FIXED_SIZES[element.name]} * {count}")
        else:
            self.add(f"{target} = []")
            item = self.local("item")
            with self.block(f"for _ in range({count}):"):
                self.value(item, element, False, what)
                self.add(f"{target}.append({item})")


class _Encoder(_Source):
    """Writes statements that append values to ``out``, the writer's buffer."""

    def value(self, value: str, wire_type: WireType, nullable: bool, what: str) -> None:
        """Append the value of local ``value``."""
        if isinstance(wire_type, StructType):
            write = self.const(self.codec(wire_type.cls).write, "write")
            self.add(f"{write}(writer, {value})")
            return
        if isinstance(wire_type, Primitive) and wire_type.name in FIXED_SIZES:
            self.fixed([value], [wire_type.name])
            return
        with self.block(f"if {value} is None:"):
            if not nullable:
                kind = "array " if isinstance(wire_type, ArrayType) else ""
                message = self.const(f"{kind}{what} is not nullable in this version", "message")
                self.add(f"raise ValueError({message})")
            elif self.flexible:
                self.add("out.append(0)")  # a length of -1, plus one
            elif wire_type == Primitive("string"):
                self.add("out += _pack_i16(-1)")
            else:
                self.add("out += _pack_i32(-1)")
        with self.block("else:"):
            if isinstance(wire_type, ArrayType):
                self.array(value, wire_type.element, what)
            elif wire_type.name == "string":
                self.add(f"data = {value}.encode()")
                with self.block(f"if len(data) > {MAX_STRING_BYTES:#x}:"):
                    self.add(f"_string_bytes({value})")  # raises the Writer's ValueError
                if self.flexible:
                    self.length("len(data)")
                else:
                    self.add("out += _pack_i16(len(data))")
                self.add("out += data")
            else:
                write = self.const(bytes_writer(wire_type.name, self.flexible), "write")
                self.add(f"{write}(writer, {value})")

    def fixed(self, values: list[str], names: list[str]) -> None:
        """A run of numbers with one ``pack``; a UUID appends its bytes, as the Writer does."""
        if "uuid" in names:
            at = names.index("uuid")
            if at:
                self.fixed(values[:at], names[:at])
            self.add(f"out += {values[at]}.bytes")
            if at + 1 < len(names):
                self.fixed(values[at + 1 :], names[at + 1 :])
            return
        layout = struct.Struct(">" + "".join(_FORMATS[name] for name in names))
        self.add(f"out += {self.const(layout.pack, 'pack')}({', '.join(values)})")

    def length(self, count: str) -> None:
        """A length or count: an int32, or in flexible versions an unsigned varint of it + 1."""
        if not self.flexible:
            self.add(f"out += _pack_i32({count})")
            return
        self.add(f"n = {count} + 1")
        with self.block("if n < 0x80:"):
            self.add("out.append(n)")
        with self.block("else:"):
            self.add("writer.unsigned_varint(n)")

    def array(self, items: str, element: Primitive | StructType, what: str) -> None:
        self.length(f"len({items})")
        name = element.name if isinstance(element, Primitive) else None
        if name in FIXED_SIZES and name != "uuid":  # numbers: one pack for them all
            layouts = self.const(_ArrayLayouts(_FORMATS[name]), "layouts")
            self.add(f"out += {layouts}[len({items})].pack(*{items})")
            return
        item = self.local("item")
        with self.block(f"for {item} in {items}:"):
            self.value(item, element, False, what)


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    """A field as one version of a struct has it."""

    name: str
    wire_type: WireType
    nullable: bool
    what: str  # "Class.field", for error messages
    declared: dataclasses.Field[Any]

    @property
    def fixed(self) -> str | None:
        """The name of its fixed-width type, if it has one."""
        wire_type = self.wire_type
        if isinstance(wire_type, Primitive) and wire_type.name in FIXED_SIZES:
            return wire_type.name
        return None


def _runs(fields: list[_Field]) -> Iterator[list[_Field]]:
    """``fields`` in order, each run of consecutive fixed-width ones in one list."""
    run: list[_Field] = []
    for field in fields:
        if field.fixed:
            run.append(field)
            continue
        if run:
            yield run
            run = []
        yield [field]
    if run:
        yield run


def _default(source: _Source, field: dataclasses.Field[Any]) -> str:
    """An expression of a field's default, made as the dataclass ``__init__`` makes it."""
    if field.default is not dataclasses.MISSING:
        return source.const(field.default, "default")
    if field.default_factory is not dataclasses.MISSING:
        return source.const(field.default_factory, "factory") + "()"
    raise TypeError(f"field {field.name!r} has no default")


def _default_value(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise TypeError(f"field {field.name!r} has no default")


def _made_without_init(cls: type) -> bool:
    """Whether ``object.__new__`` and an assignment per field make an instance
    equal to what the dataclass ``__init__`` makes."""
    params = getattr(cls, "__dataclass_params__", None)
    plain: Any = cls
    return (
        params is not None
        and params.init
        and not params.frozen
        and not hasattr(cls, "__post_init__")
        and plain.__new__ is object.__new__
        and plain.__setattr__ is object.__setattr__
    )


class StructCodec:
    """The generated decoder and encoder of one struct class at one version."""

    def __init__(self, cls: type, version: int, flexible: bool) -> None:
        self.cls = cls
        self.version = version
        self.flexible = flexible
        self.min_bytes = 1 if flexible else 0
        label = f"{cls.__name__}_v{version}{'_flexible' if flexible else ''}"
        reading = _Decoder(f"read_{label}", version, flexible)
        writing = _Encoder(f"write_{label}", version, flexible)
        writing.add("out = writer._buf")

        fields: list[_Field] = []
        tagged: list[tuple[int, _Field]] = []
        values: dict[str, str] = {}  # each field's value, as an expression
        for declared in dataclasses.fields(cls):
            spec = field_spec(declared)
            if version not in spec.versions:
                values[declared.name] = _default(reading, declared)
                continue
            values[declared.name] = f"f_{declared.name}"
            what = f"{cls.__name__}.{declared.name}"
            field = _Field(declared.name, spec.wire_type, version in spec.nullable, what, declared)
            if flexible and version in spec.tagged_versions:
                assert spec.tag is not None
                tagged.append((spec.tag, field))
            else:
                fields.append(field)
                self.min_bytes += min_bytes(spec.wire_type, version, flexible)

        for run in _runs(fields):
            if run[0].fixed:
                names = [cast(str, field.fixed) for field in run]
                reading.fixed([f"f_{field.name}" for field in run], names)
                writing.fixed([f"value.{field.name}" for field in run], names)
            else:
                (field,) = run
                reading.value(f"f_{field.name}", field.wire_type, field.nullable, field.what)
                writing.add(f"v = value.{field.name}")
                writing.value("v", field.wire_type, field.nullable, field.what)
        if flexible:
            self._tagged_section(reading, writing, sorted(tagged, key=lambda entry: entry[0]))
        self._construct(reading, values)

        self.read: ReadFunction
        self.write: WriteFunction
        self.read, self.read_source = reading.build("buf, pos, end")
        self.write, self.write_source = writing.build("writer, value")

    def _tagged_section(
        self, reading: _Decoder, writing: _Encoder, tagged: list[tuple[int, _Field]]
    ) -> None:
        """The section closing a flexible struct; empty is the common case."""
        with reading.block("if pos < end and buf[pos] == 0:"):
            reading.add("pos += 1")
            for _, field in tagged:
                reading.add(f"f_{field.name} = {_default(reading, field.declared)}")
        if not tagged:
            with reading.block("else:"):
                reading.add("pos = _skip_tagged(buf, pos, end)")
            writing.add("out.append(0)")
            return
        fields = tuple(
            _Tagged(field.name, tag, _default_value(field.declared), *self._coders(field))
            for tag, field in tagged
        )
        indexes = reading.const({field.tag: i for i, field in enumerate(fields)}, "indexes")
        targets = ", ".join(f"f_{field.name}" for field in fields)
        with reading.block("else:"):
            section = f"{indexes}, {reading.const(fields, 'tagged')}"
            reading.add(f"{targets}, pos = _read_tagged(buf, pos, end, {section})")
            for _, field in tagged:
                with reading.block(f"if f_{field.name} is _MISSING:"):
                    reading.add(f"f_{field.name} = {_default(reading, field.declared)}")
        writing.add(f"_write_tagged(writer, value, {writing.const(fields, 'tagged')})")

    def _coders(self, field: _Field) -> tuple[ReadFunction, WriteFunction]:
        """A decoder and an encoder of a tagged field's value alone."""
        label = f"{self.cls.__name__}_{field.name}_v{self.version}"
        reading = _Decoder(f"read_{label}", self.version, self.flexible)
        reading.value("v", field.wire_type, field.nullable, field.what)
        reading.add("return v, pos")
        writing = _Encoder(f"write_{label}", self.version, self.flexible)
        writing.add("out = writer._buf")
        writing.value("v", field.wire_type, field.nullable, field.what)
        read: ReadFunction = reading.build("buf, pos, end")[0]
        write: WriteFunction = writing.build("writer, v")[0]
        return read, write

    def _construct(self, reading: _Decoder, values: dict[str, str]) -> None:
        """Make the instance, every field given (those the version lacks, their defaults)."""
        cls = reading.const(self.cls, "cls")
        if _made_without_init(self.cls):
            reading.add(f"o = _new({cls})")
            for name, value in values.items():
                reading.add(f"o.{name} = {value}")
        else:
            arguments = ", ".join(f"{name}={value}" for name, value in values.items())
            reading.add(f"o = {cls}({arguments})")
        reading.add("return o, pos")

    def decode(self, reader: Reader) -> Any:
        value, reader.pos = self.read(reader.buf, reader.pos, reader.end)
        return value

    def encode(self, writer: Writer, value: Any) -> None:
        self.write(writer, value)


@cache
def struct_codec(cls: type, version: int, flexible: bool) -> StructCodec:
    """The codec of ``cls`` at ``version``, made on first use."""
    return StructCodec(cls, version, flexible)
