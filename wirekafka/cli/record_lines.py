"""Lines of input as records, as Kafka's console producer reads them (its
``LineMessageReader``).

One record per line (``\\n`` or ``\\r\\n`` ends it, and is not part of the
record; a last line without one is a record too). A line is
``[HEADERS headers.delimiter][KEY key.separator]VALUE``: with ``parse.headers``
the headers are what comes before the first ``headers.delimiter``, each
``KEY headers.key.separator VALUE`` and separated by ``headers.separator``;
with ``parse.key`` the key is what comes before the next ``key.separator``. A
key, value or header value equal to ``null.marker`` is null (headers equal to
it are none); a header key cannot be. A missing separator is an error naming
the line's number (1-based), unless ``ignore.error``: then a missing headers
delimiter or key separator means no headers or no key, and a header without
its key separator has a null value. The separators are taken literally.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

Header = tuple[str, bytes | None]

# Kafka's reader properties, with their defaults
READER_PROPERTIES = {
    "parse.key": "false",
    "key.separator": "\t",
    "parse.headers": "false",
    "headers.delimiter": "\t",
    "headers.separator": ",",
    "headers.key.separator": ":",
    "ignore.error": "false",
    "null.marker": None,
}


class LineError(ValueError):
    """A line that cannot be made a record."""


class LineFormatError(ValueError):
    """Reader properties that cannot describe a line."""


@dataclass(frozen=True, slots=True)
class LineFormat:
    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    ignore_error: bool = False
    null_marker: bytes | None = None

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LineFormat:
        """The format Kafka's reader properties describe (``parse.key``, ...; the
        others are not looked at); separators that would be ambiguous are refused."""

        def text(key: str) -> str | None:
            return properties.get(key, READER_PROPERTIES[key])

        def flag(key: str) -> bool:
            return (text(key) or "").strip().lower() == "true"

        def separator(key: str) -> bytes:
            value = (text(key) or "").encode()
            if not value:
                raise LineFormatError(f"{key} must not be empty")
            return value

        marker = text("null.marker")
        line_format = cls(
            parse_key=flag("parse.key"),
            key_separator=separator("key.separator"),
            parse_headers=flag("parse.headers"),
            headers_delimiter=separator("headers.delimiter"),
            headers_separator=separator("headers.separator"),
            headers_key_separator=separator("headers.key.separator"),
            ignore_error=flag("ignore.error"),
            null_marker=None if marker is None else marker.encode(),
        )
        line_format._check()
        return line_format

    def _check(self) -> None:
        named = {
            "headers.delimiter": self.headers_delimiter,
            "headers.separator": self.headers_separator,
            "headers.key.separator": self.headers_key_separator,
        }
        pairs = [
            ("headers.delimiter", "headers.separator"),
            ("headers.delimiter", "headers.key.separator"),
            ("headers.separator", "headers.key.separator"),
        ]
        for first, second in pairs:
            if named[first] == named[second]:
                raise LineFormatError(f"{first} and {second} may not be equal")
        if self.null_marker is not None:
            for name, value in {"key.separator": self.key_separator, **named}.items():
                if value == self.null_marker:
                    raise LineFormatError(f"null.marker and {name} may not be equal")


@dataclass(frozen=True, slots=True)
class LineRecord:
    key: bytes | None
    value: bytes | None
    headers: list[Header]


def numbered_lines(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for each line of ``chunks`` (a binary file yields lines),
    without its line ending; numbers start at 1."""
    for number, line in enumerate(chunks, start=1):
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        yield number, line


def _shown(data: bytes) -> str:
    return repr(data.decode(errors="replace"))


def parse_line(line: bytes, number: int, line_format: LineFormat) -> LineRecord:
    """The record of line ``number``."""
    rest = line
    headers: list[Header] = []
    if line_format.parse_headers:
        found = _split(
            rest, line_format.headers_delimiter, "headers delimiter", number, line_format
        )
        if found is not None:
            text, rest = found
            if text != line_format.null_marker:
                headers = _headers(text, number, line_format)
    key = None
    if line_format.parse_key:
        found = _split(rest, line_format.key_separator, "key separator", number, line_format)
        if found is not None:
            key, rest = found
    return LineRecord(_or_null(key, line_format), _or_null(rest, line_format), headers)


def _split(
    data: bytes, separator: bytes, name: str, number: int, line_format: LineFormat
) -> tuple[bytes, bytes] | None:
    before, found, after = data.partition(separator)
    if found:
        return before, after
    if line_format.ignore_error:
        return None
    raise LineError(f"line {number} has no {name} {_shown(separator)}")


def _or_null(data: bytes | None, line_format: LineFormat) -> bytes | None:
    return None if data is None or data == line_format.null_marker else data


def _headers(text: bytes, number: int, line_format: LineFormat) -> list[Header]:
    headers: list[Header] = []
    pairs = text.split(line_format.headers_separator)
    while len(pairs) > 1 and not pairs[-1]:  # as Java's split: trailing empty pieces go
        pairs.pop()
    if pairs == [b""] and len(text):  # only separators
        pairs = []
    for pair in pairs:
        raw_key, found, value = pair.partition(line_format.headers_key_separator)
        if not found and not line_format.ignore_error:
            raise LineError(
                f"line {number}: header {_shown(pair)} has no header key separator "
                f"{_shown(line_format.headers_key_separator)}"
            )
        if raw_key == line_format.null_marker:
            raise LineError(
                f"line {number}: a header key cannot be the null marker "
                f"{_shown(raw_key)} (header keys are never null)"
            )
        try:
            key = raw_key.decode()
        except UnicodeDecodeError:
            raise LineError(f"line {number}: header key {_shown(raw_key)} is not UTF-8") from None
        headers.append((key, _or_null(value, line_format) if found else None))
    return headers
