"""Planning a group's offset reset: each strategy, clamping to the log, and the
``--topic`` values."""

from __future__ import annotations

import pytest

from wirekafka.cli.offset_reset import (
    PartitionOffsets,
    PlannedOffset,
    ResetKind,
    ResetPlanError,
    ResetStrategy,
    parse_topic_partitions,
    plan_reset,
)

# partition 0: log [0, 10), committed 4; partition 1: log [5, 20), committed 12;
# partition 2: log [0, 8), nothing committed
PARTITIONS = [
    PartitionOffsets("t", 1, committed_offset=12, log_start_offset=5, log_end_offset=20),
    PartitionOffsets("t", 0, committed_offset=4, log_start_offset=0, log_end_offset=10),
    PartitionOffsets("t", 2, committed_offset=None, log_start_offset=0, log_end_offset=8),
]


def new_offsets(strategy: ResetStrategy, partitions=PARTITIONS) -> list[int]:
    return [planned.new_offset for planned in plan_reset(strategy, partitions)]


def test_the_plan_keeps_each_partition_and_its_committed_offset_in_partition_order():
    assert plan_reset(ResetStrategy(ResetKind.EARLIEST), PARTITIONS) == [
        PlannedOffset("t", 0, 4, 0),
        PlannedOffset("t", 1, 12, 5),
        PlannedOffset("t", 2, None, 0),
    ]


def test_to_earliest_is_the_log_start_and_to_latest_the_log_end():
    assert new_offsets(ResetStrategy(ResetKind.EARLIEST)) == [0, 5, 0]
    assert new_offsets(ResetStrategy(ResetKind.LATEST)) == [10, 20, 8]


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (7, [7, 7, 7]),  # inside every log
        (3, [3, 5, 3]),  # before partition 1's log start
        (15, [10, 15, 8]),  # past partitions 0 and 2's log end
        (-4, [0, 5, 0]),
        (1_000_000, [10, 20, 8]),
    ],
)
def test_to_offset_is_clamped_to_the_log(offset, expected):
    assert new_offsets(ResetStrategy(ResetKind.OFFSET, offset)) == expected


@pytest.mark.parametrize(
    ("shift", "expected"),
    [(-2, [2, 10]), (3, [7, 15]), (-10, [0, 5]), (100, [10, 20]), (0, [4, 12])],
)
def test_shift_by_moves_from_the_committed_offset_within_the_log(shift, expected):
    assert new_offsets(ResetStrategy(ResetKind.SHIFT, shift), PARTITIONS[:2]) == expected


def test_shift_by_refuses_a_partition_with_nothing_committed():
    with pytest.raises(ResetPlanError, match=r"t-2: the group has no committed offset"):
        plan_reset(ResetStrategy(ResetKind.SHIFT, -1), PARTITIONS)


def test_to_datetime_takes_the_offset_at_the_time_or_the_log_end_when_no_record_is_that_new():
    at_time = [
        PartitionOffsets("t", 0, 4, 0, 10, offset_at_time=6),
        PartitionOffsets("t", 1, 12, 5, 20, offset_at_time=None),
        PartitionOffsets("t", 2, None, 0, 8, offset_at_time=0),
    ]
    assert new_offsets(ResetStrategy(ResetKind.DATETIME, 1_700_000_000_000), at_time) == [6, 20, 0]


def test_to_current_keeps_the_committed_offset_and_takes_the_log_end_where_there_is_none():
    outside = PartitionOffsets("t", 3, committed_offset=2, log_start_offset=5, log_end_offset=9)
    # as Kafka's tool, the committed offset is kept even outside the log
    assert new_offsets(ResetStrategy(ResetKind.CURRENT), [*PARTITIONS, outside]) == [4, 12, 8, 2]


def test_from_file_takes_the_files_offsets_clamped_to_the_log():
    requested = [
        PartitionOffsets("t", 0, 4, 0, 10, requested_offset=7),
        PartitionOffsets("t", 1, 12, 5, 20, requested_offset=2),
        PartitionOffsets("t", 2, None, 0, 8, requested_offset=99),
    ]
    assert new_offsets(ResetStrategy(ResetKind.FILE), requested) == [7, 5, 8]
    with pytest.raises(ResetPlanError, match="no offset for partition t-0 in the file"):
        plan_reset(ResetStrategy(ResetKind.FILE), PARTITIONS)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("orders", ("orders", None)),
        ("orders:0", ("orders", (0,))),
        ("orders:2,0,2", ("orders", (0, 2))),
        ("a.b_c-d:1", ("a.b_c-d", (1,))),
    ],
)
def test_topic_specs(spec, expected):
    assert parse_topic_partitions(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("orders:", "must be numbers"),
        ("orders:a,1", "must be numbers"),
        ("orders:-1", "negative"),
        (":0", "no topic name"),
        ("", "no topic name"),
    ],
)
def test_bad_topic_specs_are_named(spec, message):
    with pytest.raises(ResetPlanError, match=message):
        parse_topic_partitions(spec)
