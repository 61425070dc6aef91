"""The reset plan CSV of ``groups reset-offsets --export`` and ``--from-file``,
in Kafka's format."""

from __future__ import annotations

import pytest

from wirekafka.cli.reset_plan_csv import format_reset_csv, parse_reset_csv

ROWS = [("g1", "orders", 0, 7), ("g1", "orders", 1, 0), ("g,2", "clicks", 3, 12)]


def test_one_group_is_written_without_the_group_and_read_back_for_the_group_named():
    text = format_reset_csv(ROWS[:2], with_group=False)
    assert text == "orders,0,7\norders,1,0\n"
    assert parse_reset_csv(text, group="g1") == {"g1": {("orders", 0): 7, ("orders", 1): 0}}


def test_several_groups_are_written_group_first_and_read_back():
    text = format_reset_csv(ROWS, with_group=True)
    assert text == 'g1,orders,0,7\ng1,orders,1,0\n"g,2",clicks,3,12\n'  # quoted: a comma
    expected = {"g1": {("orders", 0): 7, ("orders", 1): 0}, "g,2": {("clicks", 3): 12}}
    assert parse_reset_csv(text, group=None) == expected
    assert parse_reset_csv(text, group="g1") == expected  # each line names its group


def test_blank_lines_are_skipped_and_a_later_line_wins():
    assert parse_reset_csv("\norders,0,1\n\norders,0,2\n", group="g") == {"g": {("orders", 0): 2}}
    assert parse_reset_csv("", group="g") == {}


@pytest.mark.parametrize(
    ("text", "group", "message"),
    [
        ("orders,0,7\n", None, "line 1: topic,partition,offset lines need one GROUP"),
        ("orders,0,7\ng,orders,1,0\n", "g", "line 2: expected topic,partition,offset"),
        ("orders,0\n", "g", "line 1: expected"),
        ("a,b,c,d,e\n", "g", "line 1: expected"),
        ("orders,zero,7\n", "g", "line 1: partition and offset must be numbers"),
        ("orders,0,-1\n", "g", "line 1: a partition or offset cannot be negative"),
        (",0,1\n", "g", "line 1: no topic name"),
    ],
)
def test_bad_lines_are_named(text: str, group: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_reset_csv(text, group=group)
