"""JAAS config values as Kafka reads ``sasl.jaas.config`` and ``listener.name.<l>.<mech>.sasl.jaas.config``.

One login module entry, as Kafka requires of these keys::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

Tokens are split as Kafka's JaasConfig does (Java's StreamTokenizer): blanks
and control characters separate; ``=`` and ``;`` stand alone; values are bare
words or quoted with ``"`` or ``'`` (backslash escapes ``\\n``, ``\\t``, octal,
and any other character as itself); ``//`` and ``/* */`` are comments, and a
``/`` outside quotes starts a comment to the end of the line. Errors name the
problem and never an option's value, which may be a password.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")
# PlainLoginModule's option for each user's password: user_<name>="<password>"
PLAIN_USER_PREFIX = "user_"


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    # one of CONTROL_FLAGS, in lower case
    control_flag: str
    # may hold passwords: left out of the repr
    options: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class _Token:
    # a word or quoted text; "=" and ";" are themselves with text None
    text: str | None
    symbol: str | None = None
    quoted: bool = False


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_SEPARATE = frozenset("=;\"'/")


def _tokens(text: str) -> Iterator[_Token]:
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        if char <= " ":
            i += 1
        elif char == "/":
            if text.startswith("/*", i):
                close = text.find("*/", i + 2)
                if close < 0:
                    raise ValueError("JAAS config has a /* comment that is never closed")
                i = close + 2
            else:
                newline = min(
                    (p for p in (text.find("\n", i), text.find("\r", i)) if p >= 0), default=end
                )
                i = newline
        elif char in "=;":
            yield _Token(None, symbol=char)
            i += 1
        elif char in "\"'":
            value, i = _quoted(text, i)
            yield _Token(value, quoted=True)
        else:
            start = i
            while i < end and text[i] > " " and text[i] not in _SEPARATE:
                i += 1
            yield _Token(text[start:i])


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The text of the quote opened at ``start`` and the index after it."""
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        char = text[i]
        if char == quote:
            return "".join(out), i + 1
        if char in "\r\n":
            break
        if char == "\\" and i + 1 < len(text):
            i += 1
            char = text[i]
            if char in "01234567":
                # up to three octal digits, two when the first is above 3 (at most \377)
                digits, limit = char, 3 if char <= "3" else 2
                while len(digits) < limit and i + 1 < len(text) and text[i + 1] in "01234567":
                    i += 1
                    digits += text[i]
                char = chr(int(digits, 8))
            else:
                char = _ESCAPES.get(char, char)
        out.append(char)
        i += 1
    raise ValueError("JAAS config has a quoted value that is not closed on its line")


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login module entry of a JAAS config value; ValueError naming the problem."""
    tokens = list(_tokens(text))
    entries: list[JaasEntry] = []
    position = 0
    while position < len(tokens):
        entry, position = _entry(tokens, position)
        entries.append(entry)
    if not entries:
        raise ValueError("JAAS config specifies no login module")
    if len(entries) > 1:
        raise ValueError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module"
        )
    return entries[0]


def _entry(tokens: list[_Token], position: int) -> tuple[JaasEntry, int]:
    module = tokens[position]
    if module.text is None or module.quoted:
        raise ValueError("JAAS config entry does not start with a login module class name")
    flag = tokens[position + 1] if position + 1 < len(tokens) else None
    if flag is None or flag.text is None:
        raise ValueError(f"JAAS config names no control flag after login module {module.text}")
    if flag.text.lower() not in CONTROL_FLAGS:
        raise ValueError(
            f"JAAS config has an invalid control flag after login module {module.text}"
            f" (expected one of {', '.join(CONTROL_FLAGS)})"
        )
    options: dict[str, str] = {}
    position += 2
    while position < len(tokens) and tokens[position].symbol != ";":
        key, equals = tokens[position], tokens[position + 1 : position + 2]
        value = tokens[position + 2 : position + 3]
        if (
            key.text is None
            or not equals
            or equals[0].symbol != "="
            or not value
            or value[0].text is None
        ):
            after = f" after option {list(options)[-1]!r}" if options else ""
            raise ValueError(
                f"JAAS config has an option{after} that is not key=value"
                " (quote values that hold blanks, '=', ';' or '/')"
            )
        options[key.text] = value[0].text  # a repeated key keeps its last value, as in Kafka
        position += 3
    if position == len(tokens):
        raise ValueError("JAAS config entry is not terminated by a semicolon")
    return JaasEntry(module.text, flag.text.lower(), options), position + 1


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """PlainLoginModule's users and their passwords: each ``user_<name>="<password>"`` option."""
    if entry.login_module != PLAIN_LOGIN_MODULE:
        raise ValueError(
            f"the PLAIN mechanism's JAAS config names login module {entry.login_module},"
            f" not {PLAIN_LOGIN_MODULE}"
        )
    return {
        key.removeprefix(PLAIN_USER_PREFIX): value
        for key, value in entry.options.items()
        if key.startswith(PLAIN_USER_PREFIX) and len(key) > len(PLAIN_USER_PREFIX)
    }
