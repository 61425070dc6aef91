"""The README's examples, read by the tests that run them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line number, level, title) of each heading outside code blocks."""
    found: list[tuple[int, int, str]] = []
    fenced = False
    for number, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        marks, _, title = line.rstrip("\n").partition(" ")
        if not fenced and marks and set(marks) == {"#"}:
            found.append((number, len(marks), title))
    return found


def readme_examples(heading: str, language: str = "sh") -> list[str]:
    """The ``language`` code blocks of the README's section ``heading`` (its text
    after the ``#`` marks), up to the next heading of the same or a higher level."""
    lines = README.read_text().splitlines(keepends=True)
    headings = _headings(lines)
    for index, (start, level, title) in enumerate(headings):
        if title == heading:
            end = next(
                (later for later, depth, _ in headings[index + 1 :] if depth <= level),
                len(lines),
            )
            section = "".join(lines[start + 1 : end])
            return [body for lang, body in _FENCE.findall(section) if lang == language]
    raise LookupError(f"README.md has no section {heading!r}")


def example_commands(example: str, bootstrap: str) -> list[list[str]]:
    """The commands of an ``sh`` example, split as the shell splits them, with
    ``localhost:9092`` made ``bootstrap``: a line each (continued by a trailing
    backslash), blank lines and comments left out."""
    joined = example.replace("\\\n", " ").replace("localhost:9092", bootstrap)
    return [
        shlex.split(line)
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
