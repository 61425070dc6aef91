"""Our codec against kafka-python's, in process: each decodes what the other encodes.

kafka-python 3 builds its message classes from Kafka's JSON specs (of Kafka
4.x), independently of our declarations (which follow Kafka 3.9). For every
(API, version) that both sides know, random messages from
:mod:`tests.protocol.message_gen` go both ways:

* requests: converted to kafka-python objects, encoded by kafka-python with
  the request header, decoded by :func:`rpc.decode_request`;
* responses: encoded by :func:`rpc.encode_response`, decoded by kafka-python
  and converted back.

Each direction must give back the original message and correlation id, and
the two encoders must agree byte for byte (which also shows that the decoder
on each side read the whole frame). Only fields present in the version take
part; the others keep their defaults on both sides. A third test compares
the declarations themselves (fields, nullability, tags per version), which
kafka-python's lenient codec cannot reveal on the wire.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
from kafka.protocol import admin, consumer, metadata, producer, sasl
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas import BaseField, load_json
from kafka.protocol.schemas.fields.codecs import BitField

from tests.protocol.message_gen import sample_structs
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import API_TABLE, Api
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.schema import ZERO_UUID, ArrayType, Primitive, StructType, field_spec

SAMPLES_PER_PAIR = 10
INT32_MIN = -(2**31)

# (api key, version) pairs left out on purpose, each with the spec difference
# that explains it. Nothing else may be skipped. None is needed today: in
# every version compared, kafka-python's Kafka 4.x specs declare the same
# fields, types, nullability and tags as Kafka 3.9's. Versions that 4.0
# removed (KIP-896) are not compared at all; see test_differential_coverage.
EXCLUDED: dict[tuple[int, int], str] = {}

# APIs Kafka 4.x has no spec of at all, so kafka-python 3 knows nothing to compare
# with; each is checked byte for byte elsewhere.
NOT_IN_KAFKA_4: dict[int, str] = {
    7: "ControlledShutdown: ZooKeeper mode's, removed with ZooKeeper in Kafka 4.0 "
    "(tests/protocol/test_headers.py has its bytes)",
}


# kafka-python's message classes, by api key


def _kafka_python_messages() -> Iterator[type[ApiMessage]]:
    for package in (admin, consumer, metadata, producer, sasl):
        for name in package.__all__:
            cls = getattr(package, name)
            if isinstance(cls, type) and issubclass(cls, ApiMessage):
                yield cls


def _by_api_key(kind: str) -> dict[int, type[ApiMessage]]:
    found: dict[int, type[ApiMessage]] = {}
    for cls in _kafka_python_messages():
        if cls.type == kind:
            assert found.setdefault(cls.API_KEY, cls) is cls, f"two {kind}s for {cls.API_KEY}"
    return found


KP_REQUESTS = _by_api_key("request")
KP_RESPONSES = _by_api_key("response")


def _kp_versions(api: Api) -> range:
    """The versions kafka-python's JSON specs really define for this API.

    kafka-python pretends every API starts at version 0; ``valid_versions``
    holds the JSON's ``validVersions``, whose minimum is the true one.
    """
    request, response = KP_REQUESTS.get(api.key), KP_RESPONSES.get(api.key)
    if request is None or response is None:
        return range(0)
    assert request.valid_versions == response.valid_versions, api.name
    low, high = request.valid_versions
    return range(max(low, api.min_version), min(high, api.max_version) + 1)


PAIRS = [
    (api, version)
    for api in API_TABLE.values()
    for version in _kp_versions(api)
    if (api.key, version) not in EXCLUDED
]


# Conversion between our dataclasses and kafka-python's data containers


@dataclass(frozen=True, slots=True)
class _KpStruct:
    """One of kafka-python's struct (or struct array) fields, children by spec name.

    Children are keyed by their names in the *unpatched* JSON spec, the names
    our fields have. A few kafka-python classes patch their spec before use
    (``json_patch``): MetadataResponse renames ClusterAuthorizedOperations and
    TopicAuthorizedOperations to ``authorized_operations``, and those two and
    DescribeGroupsResponse's AuthorizedOperations become a ``bitfield`` (a set
    of bit numbers; null for -2**31) instead of an int32. Patches keep the
    fields' order, so the unpatched spec lines up with kafka-python's fields.
    """

    field: Any
    children: dict[str, Any]
    structs: dict[str, _KpStruct]

    @classmethod
    def build(cls, field: Any, spec_fields: list[dict[str, Any]]) -> _KpStruct:
        kp_children = list(field.fields.values())
        assert len(kp_children) == len(spec_fields), field.name
        children: dict[str, Any] = {}
        structs: dict[str, _KpStruct] = {}
        for kp_child, spec in zip(kp_children, spec_fields, strict=True):
            name = BaseField.underscore_name(spec["name"])
            children[name] = kp_child
            if "fields" in spec:
                structs[name] = cls.build(kp_child, spec["fields"])
        return cls(field, children, structs)


@cache
def _kp_schema(kp_cls: type[ApiMessage]) -> _KpStruct:
    with warnings.catch_warnings():
        # kafka-python reads its specs with the deprecated importlib.resources.read_text
        warnings.simplefilter("ignore", DeprecationWarning)
        spec = load_json(kp_cls.__name__)
    return _KpStruct.build(kp_cls._struct, spec["fields"])


def _in_version(cls: type, version: int) -> Iterator[dataclasses.Field[Any]]:
    return (field for field in dataclasses.fields(cls) if version in field_spec(field).versions)


def _default_of(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # type: ignore[misc]


def _is_bitfield(kp_field: Any) -> bool:
    return getattr(kp_field, "_type", None) is BitField


def _to_kp_values(ours: Any, node: _KpStruct, version: int) -> dict[str, Any]:
    """Our struct's fields in ``version`` as kafka-python constructor arguments."""
    values: dict[str, Any] = {}
    for field in _in_version(type(ours), version):
        spec = field_spec(field)
        value = getattr(ours, field.name)
        if version in spec.tagged_versions and value == _default_of(field):
            continue  # absent on the wire; kafka-python keeps its own default
        kp_field = node.children[field.name]
        if isinstance(spec.wire_type, StructType):
            value = _to_kp_struct(value, node.structs[field.name], version)
        elif isinstance(spec.wire_type, ArrayType) and value is not None:
            if isinstance(spec.wire_type.element, StructType):
                value = [_to_kp_struct(item, node.structs[field.name], version) for item in value]
            else:
                value = list(value)
        elif _is_bitfield(kp_field):
            value = None if value == INT32_MIN else BitField.from_32_bit_field(value & 0xFFFFFFFF)
        values[kp_field.name] = value
    return values


def _to_kp_struct(ours: Any, node: _KpStruct, version: int) -> Any:
    return node.field.data_class(version=version, **_to_kp_values(ours, node, version))


def _to_kp_request(ours: Any, kp_cls: type[ApiMessage], version: int) -> Any:
    return kp_cls[version](**_to_kp_values(ours, _kp_schema(kp_cls), version))


def _from_kp_struct(kp_obj: Any, cls: type, node: _KpStruct, version: int) -> Any:
    """kafka-python's decoded struct as an instance of our class ``cls``."""
    values: dict[str, Any] = {}
    for field in _in_version(cls, version):
        spec = field_spec(field)
        wire_type = spec.wire_type
        kp_field = node.children[field.name]
        value = getattr(kp_obj, kp_field.name)
        if isinstance(wire_type, StructType):
            if value is None and version in spec.tagged_versions:
                value = _default_of(field)  # kafka-python's default for a tagged struct
            else:
                value = _from_kp_struct(value, wire_type.cls, node.structs[field.name], version)
        elif isinstance(wire_type, ArrayType) and value is not None:
            element = wire_type.element
            if isinstance(element, StructType):
                value = [
                    _from_kp_struct(item, element.cls, node.structs[field.name], version)
                    for item in value
                ]
            else:
                value = [_from_kp_scalar(item, element) for item in value]
        elif _is_bitfield(kp_field):
            value = INT32_MIN if value is None else _signed32(BitField.to_32_bit_field(value))
        elif isinstance(wire_type, Primitive):
            value = _from_kp_scalar(value, wire_type)
        values[field.name] = value
    return cls(**values)


def _from_kp_scalar(value: Any, wire_type: Primitive) -> Any:
    if wire_type.name == "uuid" and value is None:
        return ZERO_UUID  # kafka-python decodes the all-zero uuid as None
    return value


def _signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _kp_decode_response(kp_cls: type[ApiMessage], frame: bytes, version: int) -> Any:
    """kafka-python's generic message decoder, header included.

    Called as ``ApiMessage.decode`` rather than ``kp_cls.decode`` because
    ``ApiVersionsResponse.decode`` overrides it with client fallback logic: a
    response with a non-zero error code is re-read as version 0 (what a
    broker sends when it does not support the requested version). That is
    client behaviour, not codec, and would hide the fields under test.
    """
    return ApiMessage.decode.__func__(kp_cls, frame, version=version, header=True)  # type: ignore[attr-defined]


# The tests


@pytest.mark.parametrize(
    ("api", "version"), PAIRS, ids=[f"{api.name}-v{version}" for api, version in PAIRS]
)
def test_kafka_python_requests_decode(api: Api, version: int) -> None:
    kp_cls = KP_REQUESTS[api.key]
    samples = sample_structs(api.request, version, SAMPLES_PER_PAIR, 3)
    for index, request in enumerate(samples):
        client_id = "client-1" if index % 2 else None
        kp_request = _to_kp_request(request, kp_cls, version)
        kp_request.with_header(correlation_id=index, client_id=client_id)
        frame = kp_request.encode(header=True)

        decoded = rpc.decode_request(frame)

        header = RequestHeader(api.key, version, index, client_id)
        assert decoded.header == header
        assert decoded.body == request
        assert rpc.encode_request(header, request) == frame


@pytest.mark.parametrize(
    ("api", "version"), PAIRS, ids=[f"{api.name}-v{version}" for api, version in PAIRS]
)
def test_kafka_python_decodes_responses(api: Api, version: int) -> None:
    kp_cls = KP_RESPONSES[api.key]
    samples = sample_structs(api.response, version, SAMPLES_PER_PAIR, 4)
    for index, response in enumerate(samples):
        frame = rpc.encode_response(api.key, version, index, response)

        kp_response = _kp_decode_response(kp_cls, frame, version)

        assert kp_response.header.correlation_id == index
        assert _from_kp_struct(kp_response, api.response, _kp_schema(kp_cls), version) == response
        assert kp_response.encode(header=True) == frame


def _declaration_differences(cls: type, node: _KpStruct, version: int, path: str) -> Iterator[str]:
    ours = {field.name: field for field in _in_version(cls, version)}
    theirs = {name for name, kp in node.children.items() if kp.for_version_q(version)}
    for name in sorted(ours.keys() - theirs):
        yield f"{path}.{name}: not in kafka-python's spec"
    for name in sorted(theirs - ours.keys()):
        yield f"{path}.{name}: not declared by us"
    for name in sorted(ours.keys() & theirs):
        spec, kp_field = field_spec(ours[name]), node.children[name]
        if (version in spec.nullable) != kp_field.nullable_for_version_q(version):
            yield f"{path}.{name}: nullability differs"
        ours_tag = spec.tag if version in spec.tagged_versions else None
        theirs_tag = kp_field.tag if kp_field.tagged_field_q(version) else None
        if ours_tag != theirs_tag:
            yield f"{path}.{name}: tag {ours_tag} here, {theirs_tag} in kafka-python"
        wire_type = spec.wire_type
        if isinstance(wire_type, ArrayType):
            wire_type = wire_type.element
        if isinstance(wire_type, StructType):
            yield from _declaration_differences(
                wire_type.cls, node.structs[name], version, f"{path}.{name}"
            )


@pytest.mark.parametrize(
    ("api", "version"), PAIRS, ids=[f"{api.name}-v{version}" for api, version in PAIRS]
)
def test_declarations_match_kafka_python(api: Api, version: int) -> None:
    """Fields, nullability and tags per version, which the wire alone cannot show.

    kafka-python's codec accepts null in any string, bytes or array, so a
    nullability difference would pass the wire tests unnoticed.
    """
    differences = [
        *_declaration_differences(
            api.request, _kp_schema(KP_REQUESTS[api.key]), version, api.request.__name__
        ),
        *_declaration_differences(
            api.response, _kp_schema(KP_RESPONSES[api.key]), version, api.response.__name__
        ),
    ]
    assert differences == []


def test_differential_coverage(capsys: pytest.CaptureFixture[str]) -> None:
    advertised = [
        (api, version)
        for api in API_TABLE.values()
        for version in range(api.min_version, api.max_version + 1)
    ]
    uncovered = [(api, v) for api, v in advertised if (api, v) not in PAIRS]
    apis = {api.key for api, _ in PAIRS}
    with capsys.disabled():
        print(
            f"\nkafka-python differential covers {len(PAIRS)} of {len(advertised)} advertised"
            f" (API, version) pairs, in {len(apis)} of {len(API_TABLE)} APIs;"
            f" {len(EXCLUDED)} excluded; not in kafka-python's specs: "
            + ", ".join(f"{api.name}-v{version}" for api, version in uncovered)
        )
    assert apis | set(NOT_IN_KAFKA_4) == set(API_TABLE), "every API must be covered"
    # Only versions Kafka 4.0 dropped (KIP-896), below the specs' minimum, or
    # explained exclusions may be missing.
    for api, version in uncovered:
        assert (
            api.key in NOT_IN_KAFKA_4
            or (api.key, version) in EXCLUDED
            or version < KP_REQUESTS[api.key].valid_versions[0]
        )
    assert len(PAIRS) >= 125
