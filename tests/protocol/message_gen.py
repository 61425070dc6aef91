"""Random messages for any declared struct at any version, for codec tests.

Only fields present in the version are set; the rest keep their defaults, as
a decoder leaves them. Values cover the edges: nulls where the version allows
them, empty and non-empty arrays and strings, extreme integers, and tagged
fields both at and away from their defaults.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from typing import Any

from wirekafka.protocol.schema import Primitive, StructType, WireType, field_spec

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_TEXTS = ["", "a", "topic-1", "ünïcødé ✓", "x" * 300]


def _primitive(rng: random.Random, name: str) -> Any:
    if name in _INT_RANGES:
        low, high = _INT_RANGES[name]
        return rng.choice([low, high, 0, -1 if low < 0 else 1, rng.randint(low, high)])
    if name == "bool":
        return rng.random() < 0.5
    if name == "float64":
        return rng.choice([0.0, -1.5, 1e300, rng.uniform(-1e6, 1e6)])
    if name == "uuid":
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if name == "string":
        return rng.choice(_TEXTS)
    # bytes and records
    return rng.choice([b"", b"\x00\xff", rng.randbytes(rng.randint(1, 64))])


def _value(
    rng: random.Random, wire_type: WireType, version: int, nullable: bool, depth: int
) -> Any:
    if nullable and rng.random() < 0.25:
        return None
    if isinstance(wire_type, Primitive):
        return _primitive(rng, wire_type.name)
    if isinstance(wire_type, StructType):
        return random_struct(rng, wire_type.cls, version, depth + 1)
    count = 0 if rng.random() < 0.3 or depth > 3 else rng.randint(1, 3)
    return [_value(rng, wire_type.element, version, False, depth) for _ in range(count)]


def random_struct(rng: random.Random, cls: type, version: int, depth: int = 0) -> Any:
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        spec = field_spec(field)
        if version not in spec.versions:
            continue
        if version in spec.tagged_versions and rng.random() < 0.3:
            continue  # a tagged field left at its default is not written at all
        values[field.name] = _value(rng, spec.wire_type, version, version in spec.nullable, depth)
    return cls(**values)


def sample_structs(cls: type, version: int, count: int, seed: int) -> list[Any]:
    """``count`` random instances plus the all-defaults instance."""
    rng = random.Random(f"{cls.__name__}-{version}-{seed}")
    return [cls(), *(random_struct(rng, cls, version) for _ in range(count))]
