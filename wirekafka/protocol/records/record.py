"""A record as all three formats can carry it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

NO_TIMESTAMP = -1  # magic 0 carries no timestamps


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


TIMESTAMP_TYPE_BIT = 0x08  # in the attributes of magic-1 messages and magic-2 batches


def timestamp_type_of(attributes: int) -> TimestampType:
    return (
        TimestampType.LOG_APPEND_TIME
        if attributes & TIMESTAMP_TYPE_BIT
        else TimestampType.CREATE_TIME
    )


Header = tuple[str, bytes | None]


@dataclass(slots=True)
class Record:
    """One record with its absolute offset (magic 0/1 records have no headers)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
