"""The broker's JSON log lines."""

from __future__ import annotations

import json
import logging
import sys

from wirekafka.cli.log_format import JsonFormatter


def _record(message: str, *args: object, exc_info: object = None) -> logging.LogRecord:
    return logging.LogRecord(
        "wirekafka.server",
        logging.WARNING,
        __file__,
        1,
        message,
        args,
        exc_info,  # type: ignore[arg-type]
    )


def test_a_line_is_one_json_object():
    record = _record("closing connection from %s: %s", "10.0.0.1:5000", 'a "quoted"\nthing')
    record.created = 1_700_000_000.25
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert json.loads(line) == {
        "time": "2023-11-14T22:13:20.250+00:00",
        "level": "WARNING",
        "logger": "wirekafka.server",
        "message": 'closing connection from 10.0.0.1:5000: a "quoted"\nthing',
    }


def test_an_exception_goes_with_its_line():
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record("failed", exc_info=sys.exc_info())
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "failed"
    assert entry["exception"].startswith("Traceback") and "ValueError: boom" in entry["exception"]
