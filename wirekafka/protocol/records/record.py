"""What the three record formats share: the record, timestamps, entry framing."""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from wirekafka.protocol.primitives import Buffer

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


# Every format starts an entry (a message or a batch) with an int64 offset and
# an int32 size of what follows; the size does not count these 12 bytes.
LOG_OVERHEAD = 12
_ENTRY_SIZE = struct.Struct(">i")


def is_partial_entry(buf: Buffer, position: int) -> bool:
    """Whether the entry at ``position`` runs past the end of ``buf``.

    A fetch response may end in such a partial entry when the byte budget
    cuts it; a negative size is not partial but malformed, for the reader.
    """
    available = len(buf) - position
    if available < LOG_OVERHEAD:
        return True
    size: int = _ENTRY_SIZE.unpack_from(buf, position + 8)[0]
    return size >= 0 and LOG_OVERHEAD + size > available
