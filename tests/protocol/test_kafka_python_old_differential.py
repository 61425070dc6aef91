"""Our codec against kafka-python's older, hand-written protocol classes.

kafka-python 3 still ships the message classes it used before it generated
them from Kafka's JSON specs, in ``kafka.protocol.old``: per API a list such
as ``ProduceRequest = [ProduceRequest_v0, ...]``, indexed by version, whose
classes declare a ``SCHEMA`` of ``(name, type)`` pairs. Their field names
differ from ours but their order is the wire order, so everything here is
positional: the fields that a version of our declaration puts on the wire, in
declaration order, against the old schema's fields, recursing into arrays and
structs. This reaches versions that Kafka 4.0 removed (KIP-896) and that
kafka-python's JSON specs therefore lack (see
``test_kafka_python_differential.py``), and overlaps that test elsewhere.

For every (API, version) that we serve and for which old/ has both classes:

* the declarations line up: at every level the same number of fields, and
  compatible kinds of wire type (int16 with Int16, string with String or, in
  flexible versions, CompactString, array with Array, and so on);
* requests: random messages from :mod:`tests.protocol.message_gen`, converted
  to old kafka-python requests, whose bodies kafka-python encodes. Each body
  must equal the one :func:`rpc.encode_request` writes after our header, and
  our header plus kafka-python's body must decode with
  :func:`rpc.decode_request` to the original message;
* responses: random messages encoded by :func:`rpc.encode_response`. The body
  after our response header must decode with the old class, using all of it,
  to the original values, and kafka-python must re-encode the same bytes.

Two things the old classes cannot check: which of two same-typed neighbours
is which (positions, not names, are compared), and nullability (their codec
accepts null in any string, bytes or array). In flexible versions they keep
tagged fields as a raw ``{tag: bytes}`` section; only its framing is theirs,
the values inside are encoded with kafka-python types chosen from our
declarations.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from typing import Any

import pytest
from kafka.protocol import old
from kafka.protocol.old.api import Request as OldRequest
from kafka.protocol.old.api import Response as OldResponse
from kafka.protocol.old.types import (
    UUID,
    Array,
    BitField,
    Boolean,
    Bytes,
    CompactArray,
    CompactBytes,
    CompactString,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
)

from tests.protocol.message_gen import sample_structs
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import API_TABLE, Api, ApiKey
from wirekafka.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    request_header_version,
    response_header_version,
    write_request_header,
    write_response_header,
)
from wirekafka.protocol.primitives import Writer
from wirekafka.protocol.schema import (
    ZERO_UUID,
    ArrayType,
    StructType,
    WireType,
    field_spec,
)

SAMPLES_PER_PAIR = 20
INT32_MIN = -(2**31)

# (api key, version) pairs left out on purpose, each with the difference
# between the old class and Kafka's spec that explains it. Nothing else may
# be skipped.
EXCLUDED: dict[tuple[int, int], str] = {
    (ApiKey.DESCRIBE_LOG_DIRS, 0): (
        "DescribeLogDirsRequest_v0 declares topics[].partitions as one Int32;"
        " Kafka's spec (and kafka-python's own JSON-generated class) has []int32"
    ),
    (ApiKey.DESCRIBE_ACLS, 2): (
        "DescribeAclsRequest_v2 and DescribeAclsResponse_v2 reuse v1's schema, without the"
        " compact strings and tagged fields that make v2 flexible in Kafka's spec"
    ),
    (ApiKey.ALTER_CONFIGS, 1): (
        "the old AlterConfigsResponse list holds AlterConfigsRequest_v1 where v1 of the response goes"
    ),
    **{
        (ApiKey.CREATE_PARTITIONS, version): (
            f"CreatePartitionsRequest_v{version} nests count and assignments in a struct of"
            " their own (new_partitions): the same bytes, but not the same fields to line up"
        )
        for version in (0, 1)
    },
}

# Old classes whose API_VERSION disagrees with their place in the version
# list. Only the attribute is wrong (kafka-python would put it in the request
# header, which is ours here); the schema is the listed version's, so the pair
# is tested.
MISLABELLED: dict[str, str] = {
    "ListGroupsRequest_v2": "ListGroupsRequest_v2.API_VERSION is 1 (its empty body is v2's)",
}

# The versions that Kafka 4.0 removed, which kafka-python's JSON specs lack.
DROPPED_BY_KAFKA_4: dict[ApiKey, range] = {
    ApiKey.PRODUCE: range(3),
    ApiKey.FETCH: range(4),
    ApiKey.LIST_OFFSETS: range(1),
    ApiKey.OFFSET_COMMIT: range(2),
    ApiKey.OFFSET_FETCH: range(1),
    ApiKey.CREATE_TOPICS: range(2),
    ApiKey.DELETE_TOPICS: range(1),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: range(2),
    ApiKey.DESCRIBE_CONFIGS: range(1),
}


# kafka-python's old classes, found by the names of our declarations


def _old_version_lists() -> dict[str, list[type]]:
    """Every ``XxxRequest = [XxxRequest_v0, ...]`` (or response) list in old/."""
    found: dict[str, list[type]] = {}
    for module_info in sorted(pkgutil.iter_modules(old.__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{old.__name__}.{module_info.name}")
        for name, value in vars(module).items():
            if isinstance(value, list) and value and all(_is_old_message(cls) for cls in value):
                assert found.setdefault(name, value) is value, f"two lists named {name}"
    return found


def _is_old_message(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, OldRequest | OldResponse)


OLD_LISTS = _old_version_lists()


@dataclass(frozen=True, slots=True)
class Pair:
    api: Api
    version: int
    old_request: type[OldRequest]
    old_response: type[OldResponse]

    @property
    def id(self) -> str:
        return f"{self.api.name}-v{self.version}"


def _pairs() -> list[Pair]:
    pairs = []
    for api in API_TABLE.values():
        requests = OLD_LISTS.get(api.request.__name__, [])
        responses = OLD_LISTS.get(api.response.__name__, [])
        for version in range(api.min_version, api.max_version + 1):
            if version >= min(len(requests), len(responses)) or (api.key, version) in EXCLUDED:
                continue
            request, response = requests[version], responses[version]
            for cls in (request, response):
                assert api.key == cls.API_KEY, cls.__name__
                assert (version == cls.API_VERSION) != (cls.__name__ in MISLABELLED), (
                    f"{cls.__name__}.API_VERSION is {cls.API_VERSION}, listed as v{version}"
                )
            pairs.append(Pair(api, version, request, response))
    return pairs


PAIRS = _pairs()


# Our declarations, as the codec puts them on the wire


@dataclass(frozen=True, slots=True)
class _Ctx:
    version: int
    flexible: bool


def _split(
    cls: type, ctx: _Ctx
) -> tuple[list[dataclasses.Field[Any]], list[dataclasses.Field[Any]]]:
    """The fields written in order, and the tagged ones, by tag."""
    positional, tagged = [], []
    for field in dataclasses.fields(cls):
        spec = field_spec(field)
        if ctx.version not in spec.versions:
            continue
        if ctx.flexible and ctx.version in spec.tagged_versions:
            tagged.append(field)
        else:
            positional.append(field)
    return positional, sorted(tagged, key=lambda field: field_spec(field).tag or 0)


def _default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # type: ignore[misc]


# How our declarations line up with the old schemas

_FIXED = {
    "int8": Int8, "int16": Int16, "int32": Int32, "int64": Int64,
    "float64": Float64, "bool": Boolean, "uuid": UUID,
}  # fmt: skip


def _kind(old_type: Any) -> type:
    """An old type's class: types are classes (Int32) or instances (String('utf-8'))."""
    return old_type if isinstance(old_type, type) else type(old_type)


def _expected_kinds(wire_type: WireType, flexible: bool) -> tuple[type, ...]:
    if isinstance(wire_type, StructType):
        return (Schema,)
    if isinstance(wire_type, ArrayType):
        return (CompactArray,) if flexible else (Array,)
    if wire_type.name == "string":
        return (CompactString,) if flexible else (String,)
    if wire_type.name in ("bytes", "records"):
        return (CompactBytes,) if flexible else (Bytes,)
    if wire_type.name == "int32":  # authorized operations, as a set of bit numbers
        return (Int32, BitField)
    return (_FIXED[wire_type.name],)


def _old_fields(schema: Any, flexible: bool, path: str) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """An old schema's field names and types, without its tagged-field section."""
    assert bool(schema.has_tagged_fields()) == flexible, f"{path}: tagged-field section"
    if flexible:
        return schema.names[:-1], schema.fields[:-1]
    return schema.names, schema.fields


def _bare_field(wire_type: WireType, old_type: Any, ctx: _Ctx) -> dataclasses.Field[Any] | None:
    """The one field of a struct that the old class models as that field alone.

    A non-flexible struct with a single field is the same on the wire as the
    field; old classes declare such arrays of structs as arrays of the
    field's type (MetadataRequest's topics as an array of strings, say).
    """
    if ctx.flexible or not isinstance(wire_type, StructType) or isinstance(old_type, Schema):
        return None
    positional, _ = _split(wire_type.cls, ctx)
    return positional[0] if len(positional) == 1 else None


def _check_declaration(wire_type: WireType, old_type: Any, ctx: _Ctx, path: str) -> None:
    """Field counts and kinds of wire type agree, all the way down."""
    if (only := _bare_field(wire_type, old_type, ctx)) is not None:
        _check_declaration(field_spec(only).wire_type, old_type, ctx, f"{path}.{only.name}")
        return
    expected = _expected_kinds(wire_type, ctx.flexible)
    assert _kind(old_type) in expected, (
        f"{path}: {_kind(old_type).__name__} in kafka-python,"
        f" {'/'.join(kind.__name__ for kind in expected)} expected"
    )
    if isinstance(wire_type, ArrayType):
        _check_declaration(wire_type.element, old_type.array_of, ctx, f"{path}[]")
    elif isinstance(wire_type, StructType):
        positional, _ = _split(wire_type.cls, ctx)
        old_names, old_types = _old_fields(old_type, ctx.flexible, path)
        assert len(positional) == len(old_names), (
            f"{path}: {len(positional)} fields here {[field.name for field in positional]},"
            f" {len(old_names)} in kafka-python {list(old_names)}"
        )
        for field, old_field_type in zip(positional, old_types, strict=True):
            _check_declaration(
                field_spec(field).wire_type, old_field_type, ctx, f"{path}.{field.name}"
            )


def _tagged_type(wire_type: WireType, ctx: _Ctx) -> Any:
    """A kafka-python type for a tagged value, which the old classes leave opaque."""
    if isinstance(wire_type, ArrayType):
        return CompactArray(_tagged_type(wire_type.element, ctx))
    if isinstance(wire_type, StructType):
        positional, _ = _split(wire_type.cls, ctx)
        fields = [
            (field.name, _tagged_type(field_spec(field).wire_type, ctx)) for field in positional
        ]
        return Schema(*fields, ("tags", TaggedFields))
    if wire_type.name == "string":
        return CompactString("utf-8")
    if wire_type.name in ("bytes", "records"):
        return CompactBytes
    return _FIXED[wire_type.name]


# Our values to kafka-python's, for a checked declaration


def _to_old(value: Any, wire_type: WireType, old_type: Any, ctx: _Ctx) -> Any:
    if (only := _bare_field(wire_type, old_type, ctx)) is not None:
        return _to_old(getattr(value, only.name), field_spec(only).wire_type, old_type, ctx)
    if isinstance(wire_type, StructType):
        return _struct_to_old(value, wire_type.cls, old_type, ctx)
    if isinstance(wire_type, ArrayType):
        if value is None:
            return None
        return [_to_old(item, wire_type.element, old_type.array_of, ctx) for item in value]
    if old_type is BitField:
        return None if value == INT32_MIN else BitField.from_32_bit_field(value & 0xFFFFFFFF)
    if wire_type.name in ("bytes", "records") and value is not None:
        return bytes(value)
    return value


def _struct_to_old(obj: Any, cls: type, schema: Any, ctx: _Ctx) -> tuple[Any, ...]:
    positional, tagged = _split(cls, ctx)
    _, old_types = _old_fields(schema, ctx.flexible, cls.__name__)
    values = [
        _to_old(getattr(obj, field.name), field_spec(field).wire_type, old_type, ctx)
        for field, old_type in zip(positional, old_types, strict=True)
    ]
    if ctx.flexible:
        values.append(_tags_to_old(obj, tagged, ctx))
    return tuple(values)


def _tags_to_old(obj: Any, tagged: list[dataclasses.Field[Any]], ctx: _Ctx) -> dict[int, bytes]:
    tags: dict[int, bytes] = {}
    for field in tagged:  # in tag order, as the section must be written
        value = getattr(obj, field.name)
        if value == _default_of(field):
            continue  # not written at all
        spec = field_spec(field)
        assert spec.tag is not None
        old_type = _tagged_type(spec.wire_type, ctx)
        tags[spec.tag] = old_type.encode(_to_old(value, spec.wire_type, old_type, ctx))
    return tags


def _to_old_message(message: Any, old_cls: type, ctx: _Ctx) -> Any:
    return old_cls(*_struct_to_old(message, type(message), old_cls.SCHEMA, ctx))


# kafka-python's values to ours, for a checked declaration


def _from_old(value: Any, wire_type: WireType, old_type: Any, ctx: _Ctx) -> Any:
    if (only := _bare_field(wire_type, old_type, ctx)) is not None:
        assert isinstance(wire_type, StructType)
        inner = _from_old(value, field_spec(only).wire_type, old_type, ctx)
        return wire_type.cls(**{only.name: inner})
    if isinstance(wire_type, StructType):
        return _struct_from_old(value, wire_type.cls, old_type, ctx)
    if isinstance(wire_type, ArrayType):
        if value is None:
            return None
        return [_from_old(item, wire_type.element, old_type.array_of, ctx) for item in value]
    if old_type is BitField:
        if value is None:
            return INT32_MIN
        bits = BitField.to_32_bit_field(value)
        return bits - (1 << 32) if bits & 0x80000000 else bits
    if wire_type.name == "uuid" and value is None:
        return ZERO_UUID  # kafka-python decodes the all-zero uuid as None
    return value


def _struct_from_old(values: Sequence[Any], cls: type, schema: Any, ctx: _Ctx) -> Any:
    """An instance of ``cls`` from an old struct's values, in schema order.

    Old schemas drop an empty tagged-field section from the values they
    decode, so a flexible struct may come with one value fewer.
    """
    positional, tagged = _split(cls, ctx)
    old_names, old_types = _old_fields(schema, ctx.flexible, cls.__name__)
    count = len(old_names)
    assert len(values) in (count, count + ctx.flexible), cls.__name__
    ours = {
        field.name: _from_old(value, field_spec(field).wire_type, old_type, ctx)
        for field, value, old_type in zip(positional, values[:count], old_types, strict=True)
    }
    if ctx.flexible:
        tags = values[count] if len(values) > count else {}
        ours.update(_tags_from_old(tags, tagged, ctx))
    return cls(**ours)


def _tags_from_old(
    tags: dict[int, bytes], tagged: list[dataclasses.Field[Any]], ctx: _Ctx
) -> dict[str, Any]:
    by_tag = {field_spec(field).tag: field for field in tagged}
    assert set(tags) <= set(by_tag), f"unknown tags {sorted(set(tags) - set(by_tag))}"
    values: dict[str, Any] = {}
    for tag, data in tags.items():
        field = by_tag[tag]
        wire_type = field_spec(field).wire_type
        old_type = _tagged_type(wire_type, ctx)
        buffer = BytesIO(data)
        old_value = old_type.decode(buffer)
        assert buffer.tell() == len(data), f"{field.name}: bytes left in its tagged value"
        values[field.name] = _from_old(old_value, wire_type, old_type, ctx)
    return values


def _from_old_message(old_message: Any, cls: type, ctx: _Ctx) -> Any:
    schema = type(old_message).SCHEMA
    values = [getattr(old_message, name) for name in schema.names]
    return _struct_from_old(values, cls, schema, ctx)


def _old_decode(old_cls: type, body: bytes) -> Any:
    """The old class's generic decoder, which must use all of ``body``.

    ``old_cls.decode`` is not used: it ignores bytes left over, and for
    ApiVersions v1+ it re-reads a response with a non-zero error code as v0
    (client fallback logic, not codec).
    """
    buffer = BytesIO(body)
    values = old_cls.SCHEMA.decode(buffer)
    assert buffer.tell() == len(body), f"{old_cls.__name__} left {len(body) - buffer.tell()} bytes"
    return old_cls(*values)


# Our headers, which the old classes' bodies go after


def _request_header_bytes(header: RequestHeader, flexible: bool) -> bytes:
    writer = Writer()
    version = request_header_version(header.api_key, header.api_version, flexible)
    write_request_header(writer, header, version)
    return writer.getvalue()


def _response_header_bytes(api_key: int, correlation_id: int, flexible: bool) -> bytes:
    writer = Writer()
    version = response_header_version(api_key, flexible)
    write_response_header(writer, ResponseHeader(correlation_id), version)
    return writer.getvalue()


# The tests


@pytest.mark.parametrize("pair", PAIRS, ids=[pair.id for pair in PAIRS])
def test_old_kafka_python_request_bodies(pair: Pair) -> None:
    api, version = pair.api, pair.version
    ctx = _Ctx(version, api.is_flexible(version))
    _check_declaration(StructType(api.request), pair.old_request.SCHEMA, ctx, api.request.__name__)
    for index, request in enumerate(sample_structs(api.request, version, SAMPLES_PER_PAIR, 5)):
        old_body = _to_old_message(request, pair.old_request, ctx).encode()

        header = RequestHeader(api.key, version, index, "client-1" if index % 2 else None)
        header_bytes = _request_header_bytes(header, ctx.flexible)
        frame = rpc.encode_request(header, request)
        assert frame[: len(header_bytes)] == header_bytes
        assert frame[len(header_bytes) :] == old_body

        decoded = rpc.decode_request(header_bytes + old_body)
        assert decoded.header == header
        assert decoded.body == request


@pytest.mark.parametrize("pair", PAIRS, ids=[pair.id for pair in PAIRS])
def test_old_kafka_python_decodes_responses(pair: Pair) -> None:
    api, version = pair.api, pair.version
    ctx = _Ctx(version, api.is_flexible(version))
    _check_declaration(
        StructType(api.response), pair.old_response.SCHEMA, ctx, api.response.__name__
    )
    for index, response in enumerate(sample_structs(api.response, version, SAMPLES_PER_PAIR, 6)):
        frame = rpc.encode_response(api.key, version, index, response)
        header_bytes = _response_header_bytes(api.key, index, ctx.flexible)
        assert frame[: len(header_bytes)] == header_bytes
        body = frame[len(header_bytes) :]

        old_response = _old_decode(pair.old_response, body)

        assert _from_old_message(old_response, api.response, ctx) == response
        assert old_response.encode() == body


def test_old_differential_coverage(capsys: pytest.CaptureFixture[str]) -> None:
    covered = {(pair.api.key, pair.version) for pair in PAIRS}
    dropped = [
        (key, version) for key, versions in DROPPED_BY_KAFKA_4.items() for version in versions
    ]
    missing = [pair for pair in dropped if pair not in covered]

    def names(pairs: Sequence[tuple[int, int]]) -> str:
        return ", ".join(f"{API_TABLE[key].name}-v{version}" for key, version in pairs) or "none"

    with capsys.disabled():
        print(
            f"\nold kafka-python differential covers {len(PAIRS)} (API, version) pairs"
            f" in {len({key for key, _ in covered})} of {len(API_TABLE)} APIs;"
            f" {len(EXCLUDED)} excluded; of the {len(dropped)} versions Kafka 4.0 dropped,"
            f" covered: {names([p for p in dropped if p in covered])};"
            f" not covered (no class in old/): {names(missing)};"
            f" tolerated mislabels: {'; '.join(MISLABELLED.values()) or 'none'}"
        )
    assert len(dropped) == 17
    assert missing == [], "old/ has classes for every version that Kafka 4.0 dropped"
    # Every version old/ has, up to the newest we serve, is compared or excluded.
    for api in API_TABLE.values():
        known = min(
            len(OLD_LISTS.get(api.request.__name__, [])),
            len(OLD_LISTS.get(api.response.__name__, [])),
            api.max_version + 1,
        )
        for version in range(known):
            assert ((api.key, version) in covered) != ((api.key, version) in EXCLUDED)
    assert len(PAIRS) >= 104
