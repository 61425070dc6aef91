"""An ISO-8601 duration as ``groups reset-offsets --by-duration`` takes it:
Java's ``Duration.parse`` form, ``PnDTnHnMn.nS``.

Days, hours, minutes and seconds (with a fraction), each optional but at
least one given, each with an optional sign, the whole with an optional
sign; letters in either case (``P1DT2H``, ``PT30M``, ``pt0.5s``, ``-PT1H``).
Years, months and weeks have no fixed length and are refused, as Java refuses
them.
"""

from __future__ import annotations

import re

ISO_DURATION_EXAMPLE = "P1DT2H30M"

_FORM = re.compile(
    r"(?P<sign>[-+]?)P(?:(?P<days>[-+]?\d+)D)?"
    r"(?:T(?=[-+]?\d)(?:(?P<hours>[-+]?\d+)H)?(?:(?P<minutes>[-+]?\d+)M)?"
    r"(?:(?P<seconds>[-+]?\d+)(?:[.,](?P<fraction>\d{0,9}))?S)?)?",
    re.IGNORECASE,
)
_MS = {"days": 86_400_000, "hours": 3_600_000, "minutes": 60_000, "seconds": 1000}


def parse_iso_duration_ms(text: str) -> int:
    """The duration in milliseconds (a fraction finer than 1 ms is dropped); a
    :class:`ValueError` naming the expected form when ``text`` is not one."""
    match = _FORM.fullmatch(text)
    if match is None or not any(match[unit] for unit in _MS):
        raise ValueError(
            f"{text!r} is not an ISO-8601 duration such as {ISO_DURATION_EXAMPLE} "
            "(PnDTnHnMn.nS: days, hours, minutes, seconds)"
        )
    total = sum(int(match[unit]) * ms for unit, ms in _MS.items() if match[unit])
    if match["fraction"]:
        millis = int(match["fraction"][:3].ljust(3, "0"))
        total += -millis if match["seconds"].startswith("-") else millis
    return -total if match["sign"] == "-" else total
