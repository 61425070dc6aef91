"""The principal of a TLS client: its certificate's subject, through ``ssl.principal.mapping.rules``.

Kafka names a client by its certificate's distinguished name as RFC 2253
writes it (most specific part first: ``CN=alice,OU=eng,O=Example,C=US``),
then rewrites that with the first mapping rule whose pattern matches it:
``RULE:<regex>/<replacement>/[L|U]`` (``$1`` refers to a group; ``L`` or ``U``
changes the case), or ``DEFAULT`` (the name unchanged). No match leaves the
name as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Python's long attribute names -> the keywords RFC 2253 (and Java) write
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
# attributes without a keyword are written as OID=#<DER hex> (here: IA5String values)
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1"}
_IA5_STRING_TAG = 0x16

# one attribute: ((name, value),), as ssl.SSLSocket.getpeercert() gives a subject
Rdn = Sequence[tuple[str, str]]


def _escaped(value: str) -> str:
    out = []
    for index, char in enumerate(value):
        if char in ',+"\\<>;' or (char == "#" and index == 0):
            out.append("\\" + char)
        elif char == " " and index in (0, len(value) - 1):
            out.append("\\ ")
        else:
            out.append(char)
    return "".join(out)


def _attribute(name: str, value: str) -> str:
    keyword = _KEYWORDS.get(name)
    if keyword is not None:
        return f"{keyword}={_escaped(value)}"
    encoded = value.encode()
    oid = _OIDS.get(name, name)
    if len(encoded) < 128:
        der = bytes([_IA5_STRING_TAG, len(encoded)]) + encoded
        return f"{oid}=#{der.hex()}"
    return f"{oid}={_escaped(value)}"


def rfc2253_name(subject: Sequence[Rdn]) -> str:
    """A subject as ``getpeercert()`` gives it, written as RFC 2253 (last RDN first)."""
    return ",".join(
        "+".join(_attribute(name, value) for name, value in rdn) for rdn in reversed(subject)
    )


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "", "L" or "U"

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        match = self.pattern.fullmatch(name)
        if match is None:
            return None
        # Java's $1 references become the match's groups
        result = re.sub(
            r"\$(\d+)", lambda ref: match.group(int(ref.group(1))) or "", self.replacement
        )
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^/])*)/((?:\\.|[^/])*)/([LU]?))\s*(?:,|$)")


class PrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed once; ValueError naming a bad rule."""

    def __init__(self, rules: str) -> None:
        self.rules: list[_Rule] = []
        text = rules.strip() or "DEFAULT"
        position = 0
        while position < len(text):
            match = _RULE.match(text, position)
            if match is None or match.end() == position:
                raise ValueError(f"cannot read a rule at {text[position:]!r}")
            if match.group(1):
                self.rules.append(_Rule(None))
            else:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as exc:
                    raise ValueError(f"{match.group(2)!r}: {exc}") from None
                self.rules.append(_Rule(pattern, match.group(3), match.group(4)))
            position = match.end()

    def name_of(self, distinguished_name: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(distinguished_name)
            if mapped is not None:
                return mapped
        return distinguished_name
