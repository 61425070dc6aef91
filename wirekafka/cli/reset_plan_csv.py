"""A reset plan as CSV, the format of Kafka's ``kafka-consumer-groups
--reset-offsets``: ``--export`` writes it, ``--from-file`` reads it.

For one group a line is ``topic,partition,offset``; for several (``--all-groups``)
``group,topic,partition,offset``. No header; fields are quoted only when they
hold a comma or a quote.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

Partition = tuple[str, int]  # (topic, partition)
ResetRow = tuple[str, str, int, int]  # (group, topic, partition, offset)


def format_reset_csv(rows: Iterable[ResetRow], *, with_group: bool) -> str:
    """The rows as CSV lines, the group first when ``with_group``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for group, topic, partition, offset in rows:
        writer.writerow(
            [group, topic, partition, offset] if with_group else [topic, partition, offset]
        )
    return out.getvalue()


def parse_reset_csv(text: str, *, group: str | None) -> dict[str, dict[Partition, int]]:
    """Each group's planned offsets. Lines of three fields belong to ``group``
    (the one group named; without one they are refused); lines of four name
    their group. Blank lines are skipped; anything else is a :class:`ValueError`
    naming its line."""
    plans: dict[str, dict[Partition, int]] = {}
    width: int | None = None
    for number, fields in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not fields or fields == [""]:
            continue
        if width is None:
            width = len(fields)
        if len(fields) != width or width not in (3, 4):
            raise ValueError(
                f"line {number}: expected topic,partition,offset or "
                f"group,topic,partition,offset like the lines before, not {','.join(fields)!r}"
            )
        if width == 3 and group is None:
            raise ValueError(
                f"line {number}: topic,partition,offset lines need one GROUP named; "
                "for several groups each line starts with its group"
            )
        owner, topic, partition, offset = fields if width == 4 else [group or "", *fields]
        if not topic:
            raise ValueError(f"line {number}: no topic name")
        try:
            numbers = int(partition), int(offset)
        except ValueError:
            raise ValueError(
                f"line {number}: partition and offset must be numbers, not {partition!r}, {offset!r}"
            ) from None
        if min(numbers) < 0:
            raise ValueError(f"line {number}: a partition or offset cannot be negative")
        plans.setdefault(owner, {})[(topic, numbers[0])] = numbers[1]
    return plans
