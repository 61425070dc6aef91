"""The one way the tools read a time given as ISO-8601 (``consume --from @TIME``,
``groups reset-offsets --to-datetime``), following Kafka's tools.

The form is ``YYYY-MM-DDTHH:MM:SS`` with an optional fraction of up to three
digits (milliseconds) and an optional zone (``Z``, ``+hh``, ``+hhmm`` or
``+hh:mm``, or ``-``). A time without a zone is UTC, as Kafka's
``kafka-consumer-groups --to-datetime`` takes it (its parser appends ``Z``).
Times before the epoch are refused: a negative timestamp means something else
to ListOffsets.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

ISO_DATETIME_EXAMPLE = "2024-05-01T12:00:00.000Z"

_FORM = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})T(?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d{1,3}))?"
    r"(?:(?P<utc>Z)|(?P<sign>[+-])(?P<hours>\d{2})(?::?(?P<minutes>\d{2}))?)?"
)


def parse_iso_datetime_ms(text: str) -> int:
    """Milliseconds since the epoch of ``text``; a :class:`ValueError` naming the
    expected form when it is not one."""
    match = _FORM.fullmatch(text)
    expected = (
        f"{text!r} is not an ISO-8601 time such as {ISO_DATETIME_EXAMPLE} (UTC without a zone)"
    )
    if match is None:
        raise ValueError(expected)
    zone = UTC
    if match["sign"]:
        hours, minutes = int(match["hours"]), int(match["minutes"] or 0)
        if hours > 23 or minutes > 59:
            raise ValueError(expected)
        offset = timedelta(hours=hours, minutes=minutes)
        zone = timezone(-offset if match["sign"] == "-" else offset)
    try:
        moment = datetime.fromisoformat(f"{match['date']}T{match['time']}").replace(tzinfo=zone)
    except ValueError:  # a month, day or hour out of range
        raise ValueError(expected) from None
    millis = int(moment.timestamp()) * 1000 + int((match["fraction"] or "0").ljust(3, "0"))
    if millis < 0:
        raise ValueError(f"{text!r} is before the epoch (1970-01-01T00:00:00Z)")
    return millis
