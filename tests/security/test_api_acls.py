"""The table of what each API checks covers every API served, and every field it
names exists in that API's declarations in some served version."""

from __future__ import annotations

import dataclasses

import pytest

from wirekafka.protocol.api_table import API_TABLE, Api
from wirekafka.protocol.schema import STRING, UUID, ArrayType, Primitive, StructType, field_spec
from wirekafka.security.acl import SUPPORTED_OPERATIONS, ResourceType
from wirekafka.security.api_acls import API_ACLS, AclCheck, Source


def _resolve(cls: type, parts: list[str], version: int) -> Primitive | None:
    """The primitive type at the end of ``parts`` in ``version``, or None if absent."""
    name, is_array = parts[0].removesuffix("[]"), parts[0].endswith("[]")
    fields = {f.name: field_spec(f) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    spec = fields.get(name)
    if spec is None or version not in spec.versions:
        return None
    wire_type = spec.wire_type
    if is_array:
        if not isinstance(wire_type, ArrayType):
            return None
        wire_type = wire_type.element
    if isinstance(wire_type, StructType):
        return _resolve(wire_type.cls, parts[1:], version) if len(parts) > 1 else None
    return wire_type if len(parts) == 1 and isinstance(wire_type, Primitive) else None


def _checks(check: AclCheck) -> list[AclCheck]:
    return [check, *(_checks(check.otherwise) if check.otherwise else [])]


def _field_checks() -> list[tuple[Api, AclCheck, str]]:
    found = []
    for api in API_TABLE.values():
        for head in API_ACLS[api.key].checks:
            for check in _checks(head):
                found.extend((api, check, path) for path in check.field_paths())
    return found


def test_every_served_api_has_a_row():
    missing = [api.name for api in API_TABLE.values() if api.key not in API_ACLS]
    assert not missing


@pytest.mark.parametrize(
    ("api", "check", "path"),
    _field_checks(),
    ids=[f"{api.name}:{check.operation.kafka_name}:{path}" for api, check, path in _field_checks()],
)
def test_named_fields_exist(api, check, path):
    declaration = api.request if check.source == Source.REQUEST else api.response
    versions = range(api.min_version, api.max_version + 1)
    found = {_resolve(declaration, path.split("."), v) for v in versions} - {None}
    assert found, f"{declaration.__name__} has no {path} in v{api.min_version}-{api.max_version}"
    assert found <= {STRING, UUID}, f"{path} is not a name or an id"


def test_sources_and_fields_agree():
    for row in API_ACLS.values():
        for head in row.checks:
            for check in _checks(head):
                named = check.source in (Source.REQUEST, Source.RESPONSE)
                assert bool(check.field) == named, check
                if check.source == Source.CLUSTER:
                    assert check.resource_type == ResourceType.CLUSTER
                assert check.operation in SUPPORTED_OPERATIONS[check.resource_type], check
                assert check.error_code.name.endswith("AUTHORIZATION_FAILED"), check


@pytest.mark.parametrize(
    "api",
    [api for api in API_TABLE.values() if API_ACLS[api.key].authorized_operations],
    ids=lambda api: api.name,
)
def test_authorized_operations_fields_exist(api):
    for field in API_ACLS[api.key].authorized_operations:
        versions = range(api.min_version, api.max_version + 1)
        assert any(_resolve(api.request, [field.request_flag], v) for v in versions)
        assert any(_resolve(api.response, field.response_field.split("."), v) for v in versions)
