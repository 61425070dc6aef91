"""Offset planning of the Kafka source: resolving options, capping batches, data loss."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wirekafka.spark.offsets import DataLossError, LogBounds, OffsetRange, cap, plan, resolve
from wirekafka.spark.options import EARLIEST, LATEST, OffsetSpec, OptionError

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)
BOUNDS = LogBounds(earliest={A0: 0, A1: 10, B0: 5}, latest={A0: 100, A1: 20, B0: 5})


def test_resolve_earliest_latest_and_specific() -> None:
    assert resolve(OffsetSpec("earliest"), BOUNDS, "s") == {A0: 0, A1: 10, B0: 5}
    assert resolve(OffsetSpec("latest"), BOUNDS, "s") == {A0: 100, A1: 20, B0: 5}
    spec = OffsetSpec("specific", {A0: 42, A1: EARLIEST, B0: LATEST})
    assert resolve(spec, BOUNDS, "s") == {A0: 42, A1: 10, B0: 5}


def test_specific_offsets_must_name_exactly_the_partitions_read() -> None:
    with pytest.raises(OptionError, match="missing a-1, b-0; no such partition c-0"):
        resolve(OffsetSpec("specific", {A0: 1, ("c", 0): 1}), BOUNDS, "startingOffsets")


def test_cap_keeps_everything_under_the_limit() -> None:
    start = {A0: 0, A1: 10}
    assert cap(start, {A0: 5, A1: 12}, 100) == {A0: 5, A1: 12}


def test_cap_shares_the_limit_by_backlog() -> None:
    start = {A0: 0, A1: 0, B0: 0}
    assert cap(start, {A0: 1_500, A1: 1_000, B0: 500}, 700) == {A0: 350, A1: 233, B0: 117}


def test_cap_leaves_a_log_that_went_back_for_plan_to_report() -> None:
    assert cap({A0: 50, A1: 0}, {A0: 10, A1: 100}, 10) == {A0: 10, A1: 10}


@given(
    st.dictionaries(
        st.tuples(st.sampled_from("abc"), st.integers(0, 5)),
        st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)),
        min_size=1,
    ),
    st.integers(1, 5_000),
)
def test_cap_never_exceeds_the_limit_nor_the_log(
    logs: dict[tuple[str, int], tuple[int, int]], limit: int
) -> None:
    start = {tp: min(a, b) for tp, (a, b) in logs.items()}
    latest = {tp: max(a, b) for tp, (a, b) in logs.items()}
    capped = cap(start, latest, limit)
    assert set(capped) == set(latest)
    assert all(start[tp] <= capped[tp] <= latest[tp] for tp in latest)
    read = sum(capped[tp] - start[tp] for tp in latest)
    assert read == min(limit, sum(latest[tp] - start[tp] for tp in latest))


def plan_quietly(start, end, earliest, fail_on_data_loss=True) -> tuple[list[OffsetRange], list]:
    warnings: list[str] = []
    ranges = plan(start, end, earliest, fail_on_data_loss=fail_on_data_loss, warn=warnings.append)
    return ranges, warnings


def test_plan_one_range_per_partition_with_records() -> None:
    ranges, warnings = plan_quietly(
        {A0: 0, A1: 12, B0: 5}, {A0: 40, A1: 20, B0: 5}, BOUNDS.earliest
    )
    assert ranges == [OffsetRange("a", 0, 0, 40), OffsetRange("a", 1, 12, 20)]
    assert [r.size for r in ranges] == [40, 8]
    assert warnings == []


def test_plan_reads_new_partitions_from_their_earliest() -> None:
    ranges, _ = plan_quietly({A0: 0}, {A0: 0, A1: 20}, BOUNDS.earliest)
    assert ranges == [OffsetRange("a", 1, 10, 20)]


@pytest.mark.parametrize(
    ("start", "end", "message", "ranges_when_allowed"),
    [
        ({A1: 3}, {A1: 20}, "offsets 3..9 of a-1 are no longer in Kafka", [("a", 1, 10, 20)]),
        ({A0: 0, B0: 5}, {A0: 7}, "partition b-0 is gone", [("a", 0, 0, 7)]),
        ({A0: 50}, {A0: 20}, "a-0 went back from offset 50 to 20", []),
    ],
)
def test_plan_data_loss(start, end, message, ranges_when_allowed) -> None:
    with pytest.raises(DataLossError, match=message):
        plan_quietly(start, end, BOUNDS.earliest)
    ranges, warnings = plan_quietly(start, end, BOUNDS.earliest, fail_on_data_loss=False)
    assert ranges == [OffsetRange(*r) for r in ranges_when_allowed]
    assert len(warnings) == 1 and message in warnings[0] and "failOnDataLoss=false" in warnings[0]
