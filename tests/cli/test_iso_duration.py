"""``groups reset-offsets --by-duration``: ISO-8601 durations as Java's
``Duration.parse`` reads them."""

from __future__ import annotations

import pytest

from wirekafka.cli.iso_duration import parse_iso_duration_ms

HOUR_MS = 3_600_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT1H", HOUR_MS),
        ("P1D", 24 * HOUR_MS),
        ("P1DT2H30M", 26 * HOUR_MS + 30 * 60_000),
        ("PT90M", 90 * 60_000),
        ("PT15S", 15_000),
        ("PT0.5S", 500),
        ("PT1,25S", 1250),
        ("PT0.0001S", 0),  # finer than a millisecond is dropped
        ("pt2h", 2 * HOUR_MS),  # either case, as Java takes it
        ("-PT1H", -HOUR_MS),
        ("PT-0.5S", -500),
        ("P1DT-1H", 23 * HOUR_MS),
        ("PT0S", 0),
    ],
)
def test_durations(text: str, expected: int) -> None:
    assert parse_iso_duration_ms(text) == expected


@pytest.mark.parametrize(
    "text", ["", "1h", "P", "PT", "P1DT", "PT1H2", "P1W", "P1Y", "P1M", "T1H", "PT1.5H", "PT 1H"]
)
def test_other_forms_are_refused_naming_the_expected_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"not an ISO-8601 duration such as P1DT2H30M"):
        parse_iso_duration_ms(text)
