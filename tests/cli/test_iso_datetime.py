"""Times given as ISO-8601 (``consume --from @TIME``, ``groups reset-offsets
--to-datetime``): one form, UTC without a zone, as Kafka's tools read it."""

from __future__ import annotations

import time

import pytest

from wirekafka.cli.iso_datetime import parse_iso_datetime_ms

MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-11-14T22:13:20Z", MS),
        ("2023-11-14T22:13:20", MS),  # no zone: UTC, as kafka-consumer-groups takes it
        ("2023-11-14T22:13:20.000", MS),
        ("2023-11-14T22:13:20.250Z", MS + 250),
        ("2023-11-14T22:13:20.5", MS + 500),  # a fraction of a second, not 5 ms
        ("2023-11-14T22:13:20.07", MS + 70),
        ("2023-11-15T00:13:20+02:00", MS),
        ("2023-11-15T00:13:20.000+0200", MS),
        ("2023-11-15T00:13:20+02", MS),
        ("2023-11-14T20:43:20-01:30", MS),
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_the_form_and_its_zones(text: str, expected: int) -> None:
    assert parse_iso_datetime_ms(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "noon",
        "1700000000000",
        "2023-11-14",  # a time of day is needed, as in Kafka's tools
        "2023-11-14 22:13:20",  # the T too
        "2023-11-14T22:13",
        "2023-13-01T00:00:00",
        "2023-02-30T00:00:00",
        "2023-11-14T24:00:00",
        "2023-11-14T22:13:20.1234",
        "2023-11-14T22:13:20+24:00",
        "2023-11-14T22:13:20+02:60",
        "2023-11-14T22:13:20 UTC",
    ],
)
def test_other_forms_are_refused_naming_the_expected_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"not an ISO-8601 time such as 2024-05-01T12:00:00\.000Z"):
        parse_iso_datetime_ms(text)


def test_times_before_the_epoch_are_refused() -> None:
    with pytest.raises(ValueError, match="before the epoch"):
        parse_iso_datetime_ms("1969-12-31T23:59:59.999Z")
    with pytest.raises(ValueError, match="before the epoch"):
        parse_iso_datetime_ms("1970-01-01T00:30:00+01:00")


def test_the_local_zone_plays_no_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "XYZ-5:30")  # 5 h 30 min east of UTC, a POSIX TZ rule
    time.tzset()
    try:
        assert parse_iso_datetime_ms("2023-11-14T22:13:20") == MS
    finally:
        monkeypatch.undo()
        time.tzset()
