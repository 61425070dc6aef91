"""``consume``: how records are printed."""

from __future__ import annotations

import base64
import json

from wirekafka.cli.record_output import json_line, raw_line, record_json


def test_raw_line() -> None:
    assert raw_line(b"k", b"v", print_key=False, separator=b"\t") == b"v\n"
    assert raw_line(b"k", b"v", print_key=True, separator=b"\t") == b"k\tv\n"
    assert raw_line(None, None, print_key=True, separator=b"=") == b"null=null\n"
    assert raw_line(None, b"\xff", print_key=False, separator=b"\t") == b"\xff\n"


def test_json_record_with_text() -> None:
    record = record_json(
        topic="t",
        partition=2,
        offset=7,
        timestamp_type=1,
        timestamp=1_700_000_000_000,
        key=b"k\xc3\xa9",
        value=b'{"a": 1}',
        headers=[("h", b"1"), ("h", None), ("g", b"")],
    )
    assert record == {
        "topic": "t",
        "partition": 2,
        "offset": 7,
        "timestamp": 1_700_000_000_000,
        "timestamp_type": "CreateTime",
        "key": "ké",
        "value": '{"a": 1}',
        "headers": [
            {"key": "h", "value": "1"},
            {"key": "h", "value": None},
            {"key": "g", "value": ""},
        ],
    }
    line = json_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == record


def test_bytes_that_are_not_utf8_are_base64_and_flagged() -> None:
    record = record_json(
        topic="t",
        partition=0,
        offset=0,
        timestamp_type=2,
        timestamp=5,
        key=b"\xff\x00",
        value=None,
        headers=[("bin", b"\x80")],
    )
    assert record["timestamp_type"] == "LogAppendTime"
    assert record["key"] == base64.b64encode(b"\xff\x00").decode()
    assert record["key_encoding"] == "base64"
    assert record["value"] is None and "value_encoding" not in record
    assert record["headers"] == [
        {"key": "bin", "value": base64.b64encode(b"\x80").decode(), "value_encoding": "base64"}
    ]


def test_no_timestamp() -> None:
    record = record_json(
        topic="t",
        partition=0,
        offset=0,
        timestamp_type=0,
        timestamp=-1,
        key=None,
        value=b"",
        headers=[],
    )
    assert record["timestamp"] is None
    assert record["timestamp_type"] == "NoTimestampType"
    assert record["value"] == ""
