"""``consume --from``: where a consumer starts."""

from __future__ import annotations

import argparse

import pytest

from wirekafka.cli.start_offsets import (
    StartFrom,
    StartKind,
    parse_start,
    parse_timestamp_ms,
    start_from_argument,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("earliest", StartFrom(StartKind.EARLIEST)),
        ("LATEST", StartFrom(StartKind.LATEST)),
        ("0", StartFrom(StartKind.OFFSET, 0)),
        ("42", StartFrom(StartKind.OFFSET, 42)),
        ("@1700000000123", StartFrom(StartKind.TIMESTAMP, 1_700_000_000_123)),
        ("@2023-11-14T22:13:20Z", StartFrom(StartKind.TIMESTAMP, 1_700_000_000_000)),
        ("@2023-11-14T22:13:20.5+00:00", StartFrom(StartKind.TIMESTAMP, 1_700_000_000_500)),
        ("@2023-11-15T00:13:20+02:00", StartFrom(StartKind.TIMESTAMP, 1_700_000_000_000)),
        ("@2023-11-14T22:13:20", StartFrom(StartKind.TIMESTAMP, 1_700_000_000_000)),  # UTC
    ],
)
def test_parse_start(text: str, expected: StartFrom) -> None:
    assert parse_start(text) == expected


@pytest.mark.parametrize(
    "text", ["-1", "first", "", "1.5", "@", "@yesterday", "@1969-12-31T23:59:59Z", "@2023-11-14"]
)
def test_bad_starts_name_the_problem(text: str) -> None:
    with pytest.raises(ValueError, match=r"timestamp|expected"):
        parse_start(text)
    with pytest.raises(argparse.ArgumentTypeError):
        start_from_argument(text)


def test_digits_are_milliseconds() -> None:
    assert parse_timestamp_ms("0") == 0
    assert parse_timestamp_ms("1700000000000") == 1_700_000_000_000
