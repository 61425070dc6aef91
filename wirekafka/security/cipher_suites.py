"""``ssl.cipher.suites`` as Kafka's users write it (the IANA names Java uses), for OpenSSL.

TLS 1.2 suites are named by IANA (``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384``)
or by OpenSSL (``ECDHE-RSA-AES256-GCM-SHA384``); the IANA names below are
looked up by their registry code among the suites OpenSSL has. TLS 1.3's three
suites have the same name in both, but Python 3.11's ssl cannot narrow them:
a list may name all of them or none. Naming none leaves TLS 1.3 out (as with
Java, where a handshake then finds no suite), naming only them leaves TLS 1.2
out.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass

# IANA name -> its code in the TLS Cipher Suites registry (TLS 1.2, forward-secret
# and RSA key exchange with AES-GCM, ChaCha20-Poly1305 and AES-CBC-SHA2)
TLS12_SUITE_CODES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": 0xC02C,
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": 0xC030,
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": 0xC02B,
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": 0xC02F,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA9,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA8,
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCAA,
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": 0x009F,
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": 0x009E,
    "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384": 0x00A3,
    "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256": 0x00A2,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": 0xC024,
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": 0xC028,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": 0xC023,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": 0xC027,
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": 0x006B,
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": 0x0067,
    "TLS_RSA_WITH_AES_256_GCM_SHA384": 0x009D,
    "TLS_RSA_WITH_AES_128_GCM_SHA256": 0x009C,
    "TLS_RSA_WITH_AES_256_CBC_SHA256": 0x003D,
    "TLS_RSA_WITH_AES_128_CBC_SHA256": 0x003C,
}
TLS13_SUITES = frozenset(
    {"TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"}
)
_OPENSSL_CODE_BITS = 0x03000000  # OpenSSL's id of a suite: 0x0300 then its 16-bit code


@dataclass(frozen=True, slots=True)
class CipherChoice:
    """What a listener's ``ssl.cipher.suites`` comes to."""

    tls12_openssl: tuple[str, ...]  # OpenSSL's names, for set_ciphers; empty: none
    tls13: bool  # TLS 1.3 allowed (its three suites)


def _openssl_names_by_code() -> dict[int, str]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers("ALL:@SECLEVEL=0")
    return {
        cipher["id"] & 0xFFFF: cipher["name"]
        for cipher in context.get_ciphers()
        if cipher["id"] & 0xFFFF0000 == _OPENSSL_CODE_BITS
    }


def cipher_choice(names: Sequence[str]) -> CipherChoice:
    """The suites ``names`` (IANA or OpenSSL names) allow; ValueError naming one OpenSSL
    lacks, or a list that names some of TLS 1.3's suites but not all."""
    by_code = _openssl_names_by_code()
    known = set(by_code.values())
    tls12: list[str] = []
    tls13 = [name for name in names if name in TLS13_SUITES]
    for name in names:
        if name in TLS13_SUITES:
            continue
        code = TLS12_SUITE_CODES.get(name)
        openssl = by_code.get(code) if code is not None else (name if name in known else None)
        if openssl is None:
            raise ValueError(f"{name!r} is not a TLS 1.2 or 1.3 cipher suite OpenSSL has here")
        tls12.append(openssl)
    if tls13 and set(tls13) != TLS13_SUITES:
        raise ValueError(
            f"names {', '.join(tls13)} of TLS 1.3's suites: Python's ssl cannot narrow "
            f"TLS 1.3 to some of them; name all of {', '.join(sorted(TLS13_SUITES))} or none"
        )
    return CipherChoice(tuple(tls12), bool(tls13))
