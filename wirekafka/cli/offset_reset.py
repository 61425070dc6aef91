"""Planning a consumer group's offset reset, as Kafka's ``kafka-consumer-groups
--reset-offsets`` plans it: no I/O, the broker's answers come in as arguments.

A strategy names the new position (``--to-earliest``, ``--to-latest``,
``--to-current``, ``--to-offset N``, ``--to-datetime TIME`` and
``--by-duration D``, which both become a time, ``--shift-by N``, ``--from-file
CSV``); every new offset but ``--to-current``'s is clamped to the partition's
``[log start, log end]``, so an offset past either end goes to the nearest
end. ``--shift-by`` moves from the committed offset and so needs one;
``--to-current`` keeps it, and takes the log end where there is none.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class ResetPlanError(ValueError):
    """An argument or a partition the reset cannot be planned for."""


class ResetKind(enum.Enum):
    EARLIEST = "to-earliest"
    LATEST = "to-latest"
    CURRENT = "to-current"
    OFFSET = "to-offset"
    DATETIME = "to-datetime"
    SHIFT = "shift-by"
    FILE = "from-file"


@dataclass(frozen=True, slots=True)
class ResetStrategy:
    """Where to move: ``value`` is the offset (``OFFSET``), the time in ms since
    the epoch (``DATETIME``) or the shift (``SHIFT``); unused otherwise."""

    kind: ResetKind
    value: int = 0


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """What the broker said about one partition the group is to be moved on.

    ``offset_at_time``: for ``DATETIME``, the first offset whose timestamp is at
    or after the time, ``None`` when no record is that new (the log end is used).
    ``requested_offset``: for ``FILE``, the offset the file gives.
    """

    topic: str
    partition: int
    committed_offset: int | None
    log_start_offset: int
    log_end_offset: int
    offset_at_time: int | None = None
    requested_offset: int | None = None


@dataclass(frozen=True, slots=True)
class PlannedOffset:
    topic: str
    partition: int
    committed_offset: int | None
    new_offset: int


def plan_reset(
    strategy: ResetStrategy, partitions: Iterable[PartitionOffsets]
) -> list[PlannedOffset]:
    """The new offset of each partition, in topic and partition order."""
    return [
        PlannedOffset(p.topic, p.partition, p.committed_offset, _new_offset(strategy, p))
        for p in sorted(partitions, key=lambda p: (p.topic, p.partition))
    ]


def _new_offset(strategy: ResetStrategy, p: PartitionOffsets) -> int:
    match strategy.kind:
        case ResetKind.EARLIEST:
            target = p.log_start_offset
        case ResetKind.LATEST:
            target = p.log_end_offset
        case ResetKind.CURRENT:  # not clamped, as in Kafka's tool
            return p.log_end_offset if p.committed_offset is None else p.committed_offset
        case ResetKind.OFFSET:
            target = strategy.value
        case ResetKind.DATETIME:
            target = p.log_end_offset if p.offset_at_time is None else p.offset_at_time
        case ResetKind.SHIFT:
            if p.committed_offset is None:
                raise ResetPlanError(
                    f"cannot shift partition {p.topic}-{p.partition}: "
                    "the group has no committed offset for it"
                )
            target = p.committed_offset + strategy.value
        case ResetKind.FILE:
            if p.requested_offset is None:
                raise ResetPlanError(f"no offset for partition {p.topic}-{p.partition} in the file")
            target = p.requested_offset
    return min(max(target, p.log_start_offset), p.log_end_offset)


def parse_topic_partitions(spec: str) -> tuple[str, tuple[int, ...] | None]:
    """``--topic``'s value: ``TOPIC`` (every partition, ``None``) or
    ``TOPIC:P,P,...`` (those partitions, sorted and without repeats)."""
    topic, colon, listed = spec.rpartition(":")
    if not colon:
        topic, listed = spec, ""
    if not topic:
        raise ResetPlanError(f"--topic {spec!r}: no topic name")
    if not colon:
        return topic, None
    try:
        partitions = {int(part) for part in listed.split(",")}
    except ValueError:
        raise ResetPlanError(
            f"--topic {spec!r}: partitions must be numbers, as in TOPIC:0,1,2"
        ) from None
    if any(p < 0 for p in partitions):
        raise ResetPlanError(f"--topic {spec!r}: a partition number cannot be negative")
    return topic, tuple(sorted(partitions))
