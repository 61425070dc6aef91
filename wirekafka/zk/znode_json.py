"""The JSON Kafka keeps in znodes: written as Kafka writes it, read as Kafka reads it (sans-IO).

Writing follows Kafka's Jackson mapper: compact (no spaces), UTF-8 without
``\\u`` escapes of non-ASCII characters, keys in the order given.

Reading follows Kafka's typed reads (``kafka.utils.json.DecodeJson``): an ``Int``
is a JSON integer within 32 bits (not a float, a boolean or a string), a
``String`` a JSON string. Anything else, and bytes that are not a JSON object,
raise :class:`ZnodeFormatError` with the znode's name, where Kafka sometimes
swallows a parse error and carries on with an empty value.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any, NoReturn

__all__ = [
    "INT16_MAX",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "JsonObject",
    "ZnodeFormatError",
    "check_int",
    "describe",
    "dumps",
    "now_ms",
    "parse_decimal",
    "parse_java_integer",
    "parse_object",
]

INT16_MAX = 2**15 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class ZnodeFormatError(ValueError):
    """A znode's bytes are not what Kafka keeps there; the message starts with the znode's name."""


# -- writing


def dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def check_int(name: str, value: object, low: int = INT32_MIN, high: int = INT32_MAX) -> int:
    """A value to encode: an int (not a bool) in [low, high], else ValueError (the caller's bug)."""
    if not _is_int(value, low, high):
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    assert isinstance(value, int)
    return value


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- reading


def _is_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _fail(znode: str, message: str) -> NoReturn:
    raise ZnodeFormatError(f"{znode}: {message}")


def _show(data: bytes) -> str:
    return repr(data[:200]) + ("..." if len(data) > 200 else "")


def describe(value: object) -> str:
    """A JSON value for an error message: its type, and its text if short."""
    text = repr(value)
    return f"{_json_type(value)} {text}" if len(text) <= 40 else _json_type(value)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _text(znode: str, data: object) -> str:
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        _fail(znode, f"expected the znode's bytes, got {type(data).__name__}")
    if not data:
        _fail(znode, "the znode has no data")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(znode, f"not UTF-8 ({exc.reason} at byte {exc.start}): {_show(data)}")


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_object(znode: str, data: object) -> JsonObject:
    """The JSON object in a znode's bytes."""
    text = _text(znode, data)
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        _fail(znode, f"not JSON ({exc}): {_show(text.encode())}")
    if not isinstance(value, dict):
        _fail(znode, f"expected a JSON object, got {_json_type(value)}: {_show(text.encode())}")
    return JsonObject(znode, value)


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_java_integer(znode: str, what: str, text: str, low: int, high: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: optional sign, ASCII digits, in range."""
    if not _JAVA_INT.fullmatch(text):
        _fail(znode, f"{what} must be a decimal integer, got {text!r}")
    value = int(text)
    if not low <= value <= high:
        _fail(znode, f"{what} {text} is out of range")
    return value


def parse_decimal(znode: str, what: str, data: object, low: int, high: int) -> int:
    """A znode that holds a number as decimal text (``b"42"``), read as Java parses it."""
    return parse_java_integer(znode, what, _text(znode, data), low, high)


class JsonObject:
    """A JSON object read from a znode, with Kafka's typed reads of its keys.

    A nested object carries its key as a prefix, so that errors name
    ``'partitions.0[1]'``. ``int32(key)`` and friends require the key (present,
    and of the type); the ``optional_*`` reads give None for an absent key or null.
    """

    __slots__ = ("_fields", "_prefix", "znode")

    def __init__(self, znode: str, fields: dict[str, Any], prefix: str = "") -> None:
        self.znode = znode
        self._fields = fields
        self._prefix = prefix

    def fail(self, message: str) -> NoReturn:
        _fail(self.znode, message)

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __contains__(self, key: str) -> bool:
        return key in self._fields

    def get(self, key: str) -> Any:
        """The raw value of ``key``; None when absent or null."""
        return self._fields.get(key)

    def _name(self, key: str) -> str:
        return f"{self._prefix}{key}"

    def _required(self, key: str) -> Any:
        if key not in self._fields:
            self.fail(f"the key {self._name(key)!r} is missing")
        return self._fields[key]

    def _int32(self, name: str, value: object) -> int:
        if not _is_int(value, INT32_MIN, INT32_MAX):
            self.fail(f"{name!r} must be a 32-bit integer, got {describe(value)}")
        assert isinstance(value, int)
        return value

    def _string(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(f"{name!r} must be a string, got {describe(value)}")
        return value

    def _list(self, name: str, value: object, of: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(f"{name!r} must be an array of {of}, got {_json_type(value)}")
        return value

    def int32(self, key: str) -> int:
        return self._int32(self._name(key), self._required(key))

    def optional_int32(self, key: str) -> int | None:
        value = self.get(key)
        return None if value is None else self._int32(self._name(key), value)

    def string(self, key: str) -> str:
        return self._string(self._name(key), self._required(key))

    def optional_string(self, key: str) -> str | None:
        value = self.get(key)
        return None if value is None else self._string(self._name(key), value)

    def int32_list(self, key: str) -> tuple[int, ...]:
        name = self._name(key)
        items = self._list(name, self._required(key), "integers")
        return tuple(self._int32(f"{name}[{i}]", item) for i, item in enumerate(items))

    def string_list(self, key: str) -> tuple[str, ...]:
        name = self._name(key)
        items = self._list(name, self._required(key), "strings")
        return tuple(self._string(f"{name}[{i}]", item) for i, item in enumerate(items))

    def object(self, key: str) -> JsonObject:
        value = self._required(key)
        if not isinstance(value, dict):
            self.fail(f"{self._name(key)!r} must be a JSON object, got {_json_type(value)}")
        return JsonObject(self.znode, value, f"{self._name(key)}.")

    def optional_object(self, key: str) -> JsonObject | None:
        return None if self.get(key) is None else self.object(key)
