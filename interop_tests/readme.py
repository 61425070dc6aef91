"""The README's examples, read by the tests that run them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def readme_examples(heading: str, language: str = "sh") -> list[str]:
    """The ``language`` code blocks of the README's section ``heading`` (its text
    after the ``#`` marks), up to the next heading of the same or a higher level."""
    lines = README.read_text().splitlines(keepends=True)
    for number, line in enumerate(lines):
        marks, _, title = line.rstrip("\n").partition(" ")
        if marks and set(marks) == {"#"} and title == heading:
            level = len(marks)
            end = next(
                (
                    later
                    for later in range(number + 1, len(lines))
                    if (m := lines[later].split(" ", 1)[0]) and set(m) == {"#"} and len(m) <= level
                ),
                len(lines),
            )
            section = "".join(lines[number + 1 : end])
            return [body for lang, body in _FENCE.findall(section) if lang == language]
    raise LookupError(f"README.md has no section {heading!r}")
