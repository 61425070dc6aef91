"""``produce``: lines of input as records."""

from __future__ import annotations

import io

import pytest

from wirekafka.cli.record_lines import (
    LineError,
    LineFormat,
    LineFormatError,
    LineRecord,
    numbered_lines,
    parse_line,
)


def test_lines_lose_their_endings_and_are_numbered_from_1() -> None:
    data = io.BytesIO(b"one\r\ntwo\n\nlast without newline")
    assert list(numbered_lines(data)) == [
        (1, b"one"),
        (2, b"two"),
        (3, b""),
        (4, b"last without newline"),
    ]


def test_a_lone_carriage_return_inside_a_line_is_kept() -> None:
    assert list(numbered_lines(io.BytesIO(b"a\rb\n"))) == [(1, b"a\rb")]


def test_no_input_no_lines() -> None:
    assert list(numbered_lines(io.BytesIO(b""))) == []


KEYED = LineFormat(parse_key=True, key_separator=b":")
HEADED = LineFormat.from_properties({"parse.headers": "true", "parse.key": "true"})


@pytest.mark.parametrize(
    ("line", "separator", "expected"),
    [
        (b"k:v", b":", (b"k", b"v")),
        (b"k:v:w", b":", (b"k", b"v:w")),  # the first separator splits
        (b":v", b":", (b"", b"v")),
        (b"k:", b":", (b"k", b"")),
        (b"key => value", b" => ", (b"key", b"value")),
        (b"\xff\tv", b"\t", (b"\xff", b"v")),
    ],
)
def test_keys(line: bytes, separator: bytes, expected: tuple[bytes, bytes]) -> None:
    record = parse_line(line, 1, LineFormat(parse_key=True, key_separator=separator))
    assert (record.key, record.value, record.headers) == (*expected, [])


def test_without_parse_key_the_line_is_the_value() -> None:
    assert parse_line(b"k:v", 1, LineFormat()) == LineRecord(None, b"k:v", [])


def test_a_line_without_the_separator_names_its_number() -> None:
    with pytest.raises(LineError, match=r"line 7 has no key separator ':'"):
        parse_line(b"no separator here", 7, KEYED)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"a:1,b:2\tkey\tvalue", LineRecord(b"key", b"value", [("a", b"1"), ("b", b"2")])),
        (b"a:1:2\tk\tv", LineRecord(b"k", b"v", [("a", b"1:2")])),  # the first : splits
        (b"a:,a:x\tk\tv", LineRecord(b"k", b"v", [("a", b""), ("a", b"x")])),  # kept in order
        (b":\t\t", LineRecord(b"", b"", [("", b"")])),  # as Kafka's test: all empty
        (b"a:1,\tk\tv", LineRecord(b"k", b"v", [("a", b"1")])),  # a trailing separator
        (b",\tk\tv", LineRecord(b"k", b"v", [])),
        (b"h:v\tk\tva\tlue", LineRecord(b"k", b"va\tlue", [("h", b"v")])),
    ],
)
def test_headers_before_the_key(line: bytes, expected: LineRecord) -> None:
    assert parse_line(line, 1, HEADED) == expected


def test_headers_without_a_key_and_longer_separators() -> None:
    headed = LineFormat.from_properties({"parse.headers": "true"})
    assert parse_line(b"h:v\tvalue", 1, headed) == LineRecord(None, b"value", [("h", b"v")])
    long = LineFormat.from_properties(
        {"parse.headers": "true", "parse.key": "true", "key.separator": "\t\t",
         "headers.delimiter": "\t\t", "headers.separator": "---", "headers.key.separator": "::::"}
    )  # fmt: skip
    assert parse_line(b"k0::::v0---k1::::\t\tkey\t\tvalue", 1, long) == LineRecord(
        b"key", b"value", [("k0", b"v0"), ("k1", b"")]
    )


def test_the_null_marker() -> None:
    marked = LineFormat.from_properties(
        {"parse.headers": "true", "parse.key": "true", "null.marker": "NULL"}
    )
    assert parse_line(b"h:NULL\tNULL\tNULL", 1, marked) == LineRecord(None, None, [("h", None)])
    assert parse_line(b"NULL\tk\tv", 1, marked) == LineRecord(b"k", b"v", [])  # no headers
    assert parse_line(b"h:x\tk\tNULLs", 1, marked).value == b"NULLs"  # the whole field only
    with pytest.raises(LineError, match=r"line 3: a header key cannot be the null marker 'NULL'"):
        parse_line(b"NULL:x\tk\tv", 3, marked)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"no delimiter", r"line 4 has no headers delimiter '\\t'"),
        (b"h:v\tno key separator", r"line 4 has no key separator '\\t'"),
        (b"a:1,b\tk\tv", r"line 4: header 'b' has no header key separator ':'"),
        (b"\xff:1\tk\tv", r"line 4: header key .* is not UTF-8"),
    ],
)
def test_bad_lines_are_named(line: bytes, message: str) -> None:
    with pytest.raises(LineError, match=message):
        parse_line(line, 4, HEADED)


def test_ignore_error_makes_the_best_of_a_line() -> None:
    lenient = LineFormat.from_properties(
        {"parse.headers": "true", "parse.key": "true", "ignore.error": "true"}
    )
    assert parse_line(b"just a value", 1, lenient) == LineRecord(None, b"just a value", [])
    assert parse_line(b"a:1,b\tk\tv", 1, lenient) == LineRecord(
        b"k", b"v", [("a", b"1"), ("b", None)]
    )


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"headers.separator": "\t"}, "headers.delimiter and headers.separator may not be equal"),
        ({"headers.key.separator": ","}, "headers.separator and headers.key.separator"),
        ({"headers.delimiter": ":"}, "headers.delimiter and headers.key.separator"),
        ({"null.marker": "\t"}, "null.marker and key.separator may not be equal"),
        ({"null.marker": ","}, "null.marker and headers.separator may not be equal"),
        ({"key.separator": ""}, "key.separator must not be empty"),
    ],
)
def test_ambiguous_properties_are_refused(properties: dict[str, str], message: str) -> None:
    with pytest.raises(LineFormatError, match=message):
        LineFormat.from_properties(properties)


def test_properties_default_as_kafkas_and_flags_ignore_case() -> None:
    assert LineFormat.from_properties({}) == LineFormat()
    assert LineFormat.from_properties({"parse.key": " TRUE "}).parse_key
