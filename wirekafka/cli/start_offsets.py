"""Where ``wirekafka consume --from`` starts: ``earliest``, ``latest``, an offset,
or ``@TIMESTAMP`` (milliseconds since the epoch, or an ISO-8601 time as
:mod:`wirekafka.cli.iso_datetime` reads it), which ListOffsets maps to each
partition's first offset at or after it."""

from __future__ import annotations

import argparse
import enum
from dataclasses import dataclass

from wirekafka.cli.iso_datetime import parse_iso_datetime_ms


class StartKind(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSET = "offset"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True, slots=True)
class StartFrom:
    kind: StartKind
    value: int = 0  # the offset, or the timestamp in ms


def parse_timestamp_ms(text: str) -> int:
    """Milliseconds since the epoch of ``text``: digits are taken as milliseconds,
    anything else as an ISO-8601 time (:mod:`wirekafka.cli.iso_datetime`)."""
    if text.isdigit():
        return int(text)
    try:
        return parse_iso_datetime_ms(text)
    except ValueError as exc:
        raise ValueError(f"not a timestamp: {exc}, nor milliseconds since the epoch") from None


def parse_start(text: str) -> StartFrom:
    """``--from``'s value as a :class:`StartFrom`."""
    lowered = text.strip().lower()
    if lowered in (StartKind.EARLIEST.value, StartKind.LATEST.value):
        return StartFrom(StartKind(lowered))
    if text.startswith("@"):
        return StartFrom(StartKind.TIMESTAMP, parse_timestamp_ms(text[1:]))
    if text.isdigit():
        return StartFrom(StartKind.OFFSET, int(text))
    raise ValueError(f"expected earliest, latest, an offset (>= 0) or @TIMESTAMP, not {text!r}")


def start_from_argument(text: str) -> StartFrom:
    """:func:`parse_start` as an argparse ``type``."""
    try:
        return parse_start(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
