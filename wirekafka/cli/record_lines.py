"""Lines of input as records, as Kafka's console producer reads them.

One record per line (``\\n`` or ``\\r\\n`` ends it, and is not part of the
record; a last line without one is a record too). With a key separator, the
key is what comes before its first occurrence and the value what follows; a
line without the separator is an error naming its number (1-based).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class LineError(ValueError):
    """A line that cannot be made a record."""


def numbered_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for each line of ``chunks`` (a binary file yields lines),
    without its line ending; numbers start at 1."""
    for number, line in enumerate(chunks, start=1):
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        yield number, line


def split_key(line: bytes, separator: bytes, number: int) -> tuple[bytes, bytes]:
    """``(key, value)``: ``line`` split at the first ``separator``."""
    key, found, value = line.partition(separator)
    if not found:
        raise LineError(
            f"line {number} has no key separator {separator.decode(errors='replace')!r}"
        )
    return key, value
