"""How ``wirekafka consume`` prints a record.

``raw``: the value's bytes and a newline (``KEY SEP VALUE`` with ``--print-key``);
a null key or value prints as ``null``, as Kafka's console consumer prints it.

``json``: one object per line: ``topic``, ``partition``, ``offset``,
``timestamp`` (ms, ``null`` when the record has none), ``timestamp_type``
(``CreateTime``, ``LogAppendTime`` or ``NoTimestampType``), ``key``, ``value``
and ``headers`` (a list of ``{"key", "value"}`` in the record's order). A key
or value (a header's value too) is its text when its bytes are UTF-8, ``null``
when it is null, and otherwise its bytes in base64, with ``"key_encoding":
"base64"`` (``value_encoding``) beside it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

# confluent-kafka's TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}
NULL = b"null"


def raw_line(key: bytes | None, value: bytes | None, *, print_key: bool, separator: bytes) -> bytes:
    shown = NULL if value is None else value
    if print_key:
        shown = (NULL if key is None else key) + separator + shown
    return shown + b"\n"


def text_or_base64(data: bytes) -> tuple[str, str]:
    """``data`` as ``(its text, "utf-8")`` when it is UTF-8, else ``(its base64, "base64")``."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def _bytes_field(name: str, data: bytes | None, into: dict[str, Any]) -> None:
    """``into[name]``: the text of ``data``, or its base64 with ``{name}_encoding``."""
    if data is None:
        into[name] = None
        return
    into[name], encoding = text_or_base64(data)
    if encoding == "base64":
        into[f"{name}_encoding"] = encoding


def record_json(
    *,
    topic: str,
    partition: int,
    offset: int,
    timestamp_type: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp if timestamp_type else None,
        "timestamp_type": TIMESTAMP_TYPES.get(timestamp_type, "NoTimestampType"),
    }
    _bytes_field("key", key, record)
    _bytes_field("value", value, record)
    record["headers"] = []
    for header_key, header_value in headers:
        header: dict[str, Any] = {"key": header_key}
        _bytes_field("value", header_value, header)
        record["headers"].append(header)
    return record


def json_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
