"""Offset arithmetic of the Kafka source: from options and log bounds to ranges.

Pure functions over ``(topic, partition) -> offset`` maps. The source asks the
brokers for each partition's earliest and latest offsets and hands them here
to resolve ``startingOffsets``/``endingOffsets``, to cap a micro-batch at
``maxOffsetsPerTrigger``, and to cut the planned ranges into one
:class:`OffsetRange` per partition, reporting lost data as Spark's source does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from wirekafka.spark.options import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    OptionError,
    TopicPartition,
    partition_name,
    partition_names,
)

Offsets = dict[TopicPartition, int]

DATA_LOSS_ADVICE = (
    "Some data may have been lost: it is no longer in Kafka (aged out by retention or"
    " deleted records) or the topic was deleted. Set the source option"
    " failOnDataLoss=false to skip lost data instead of failing."
)


class DataLossError(RuntimeError):
    """Offsets the query was told to read are no longer in Kafka."""


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """``[start_offset, end_offset)`` of one partition: one Spark partition's work."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int

    @property
    def size(self) -> int:
        return self.end_offset - self.start_offset


@dataclass(frozen=True, slots=True)
class LogBounds:
    """Each partition's log start offset and log end offset, as the brokers report them."""

    earliest: Mapping[TopicPartition, int]
    latest: Mapping[TopicPartition, int]

    @property
    def partitions(self) -> set[TopicPartition]:
        return set(self.latest)


def resolve(spec: OffsetSpec, bounds: LogBounds, name: str) -> Offsets:
    """Concrete offsets for every partition in ``bounds`` from an option's value."""
    if spec.kind == "earliest":
        return dict(bounds.earliest)
    if spec.kind == "latest":
        return dict(bounds.latest)
    named = set(spec.offsets)
    if named != bounds.partitions:
        missing, unknown = bounds.partitions - named, named - bounds.partitions
        problems = []
        if missing:
            problems.append(f"missing {partition_names(missing)}")
        if unknown:
            problems.append(f"no such partition {partition_names(unknown)}")
        raise OptionError(
            f"{name} with specific offsets must name every partition read: {'; '.join(problems)}"
        )
    resolved: Offsets = {}
    for tp, offset in spec.offsets.items():
        if offset == EARLIEST:
            resolved[tp] = bounds.earliest[tp]
        elif offset == LATEST:
            resolved[tp] = bounds.latest[tp]
        else:
            resolved[tp] = offset
    return resolved


def cap(start: Mapping[TopicPartition, int], latest: Offsets, max_records: int) -> Offsets:
    """End offsets reading at most ``max_records`` past ``start``, shared by backlog.

    ``start`` holds every partition of ``latest`` (new ones at their earliest
    offset). Each partition gets a share of the limit in proportion to its
    backlog, rounded down, the rest handed out one record at a time to the
    largest remainders, so no partition starves and the total stays within
    the limit.
    """
    backlog = {tp: max(0, end - start[tp]) for tp, end in latest.items()}
    total = sum(backlog.values())
    if total <= max_records:
        return dict(latest)
    shares = {tp: size * max_records // total for tp, size in backlog.items()}
    left = max_records - sum(shares.values())
    for tp in sorted(backlog, key=lambda tp: (-(backlog[tp] * max_records % total), tp))[:left]:
        shares[tp] += 1
    return {tp: start[tp] + shares[tp] if backlog[tp] else end for tp, end in latest.items()}


def plan(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    *,
    fail_on_data_loss: bool,
    warn: Callable[[str], None],
) -> list[OffsetRange]:
    """One range per partition with records between ``start`` and ``end``.

    A partition in ``end`` that ``start`` does not know (new since the last
    batch) is read from its earliest offset. Offsets below a partition's log
    start, partitions that vanished and logs that went backwards are data
    loss: an error, or with ``fail_on_data_loss`` off a warning and a skip.
    """
    ranges: list[OffsetRange] = []

    def lost(message: str) -> None:
        if fail_on_data_loss:
            raise DataLossError(f"{message}. {DATA_LOSS_ADVICE}")
        warn(f"{message}; skipped (failOnDataLoss=false)")

    for tp in sorted(set(start) - set(end)):
        lost(f"partition {partition_name(tp)} is gone (its topic was deleted?)")
    for tp in sorted(end):
        log_start = earliest.get(tp, 0)
        first = start.get(tp, log_start)
        last = end[tp]
        if first < log_start:
            lost(f"offsets {first}..{log_start - 1} of {partition_name(tp)} are no longer in Kafka")
            first = log_start
        if last < first:
            lost(f"{partition_name(tp)} went back from offset {first} to {last}")
            continue
        if last > first:
            ranges.append(OffsetRange(tp[0], tp[1], first, last))
    return ranges
