"""``produce``: lines of input as records."""

from __future__ import annotations

import io

import pytest

from wirekafka.cli.record_lines import LineError, numbered_lines, split_key


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
def test_split_key(line: bytes, separator: bytes, expected: tuple[bytes, bytes]) -> None:
    assert split_key(line, separator, 1) == expected


def test_a_line_without_the_separator_names_its_number() -> None:
    with pytest.raises(LineError, match=r"line 7 has no key separator ':'"):
        split_key(b"no separator here", b":", 7)
