"""SCRAM credentials as Kafka stores them: a salt, a stored key, a server key, an iteration count.

Never a password. ``format_credential`` / ``parse_credential`` give Kafka's text
form, the value of a mechanism's key in ZooKeeper's ``/config/users/<name>``
(``zk.znodes.ConfigEntityZNode`` writes the node around it)::

    {"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}

The keys follow RFC 5802: the salted password is PBKDF2 (Hi) of the password's
UTF-8 bytes, as Kafka's clients and ``kafka-configs`` compute it (no SASLprep).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from wirekafka.protocol.errors import ErrorCode

# Kafka's limits for a SCRAM credential (ScramMechanism, ScramControlManager): fewer
# iterations are refused by AlterUserScramCredentials and by the SASL exchange.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
# What kafka-configs uses when --add-config names no iterations
DEFAULT_ITERATIONS = 4096

# ScramMechanism.UNKNOWN's type byte in Describe/AlterUserScramCredentials
UNKNOWN_MECHANISM_TYPE = 0


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    # the type byte of Describe/AlterUserScramCredentials
    type: int
    # hashlib's name of the hash
    hash_name: str

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
SCRAM_MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
_BY_TYPE = {m.type: m for m in SCRAM_MECHANISMS.values()}


def scram_mechanism(name: str) -> ScramMechanism:
    """The SCRAM mechanism called ``name``; ValueError naming the known ones otherwise."""
    mechanism = SCRAM_MECHANISMS.get(name)
    if mechanism is None:
        raise ValueError(
            f"{name!r} is not a SCRAM mechanism (known: {', '.join(SCRAM_MECHANISMS)})"
        )
    return mechanism


def scram_mechanism_of_type(mechanism_type: int) -> ScramMechanism | None:
    """The mechanism a type byte of Describe/AlterUserScramCredentials names, if any."""
    return _BY_TYPE.get(mechanism_type)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's credential for one mechanism; its repr shows the iterations only."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def salt_from_bits(bits: int) -> bytes:
    """A salt shaped like Kafka's (ScramFormatter): a 130-bit number written in base 36, as ASCII."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    bits &= (1 << 130) - 1
    text = ""
    while True:
        bits, digit = divmod(bits, 36)
        text = digits[digit] + text
        if not bits:
            return text.encode("ascii")


def new_salt() -> bytes:
    return salt_from_bits(secrets.randbits(130))


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(password, salt, i): PBKDF2-HMAC over the password's UTF-8 bytes."""
    hash_name = scram_mechanism(mechanism).hash_name
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """The stored and server keys of a salted password (what AlterUserScramCredentials sends)."""
    hash_name = scram_mechanism(mechanism).hash_name
    client_key = hmac.digest(salted_password, b"Client Key", hash_name)
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=hmac.digest(salted_password, b"Server Key", hash_name),
        iterations=iterations,
    )


def new_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A credential for ``password``, with a new random salt unless one is given."""
    salt = new_salt() if salt is None else salt
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


# Kafka's text form (ScramCredentialUtils)

_KEYS = ("salt", "stored_key", "server_key", "iterations")


def format_credential(credential: ScramCredential) -> str:
    """``salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>``."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return (
        f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
        f"server_key={b64(credential.server_key)},iterations={credential.iterations}"
    )


def parse_credential(text: str) -> ScramCredential:
    """A credential from Kafka's text form; ValueError naming the problem (never the keys)."""
    values: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError("SCRAM credential is not a list of key=value separated by commas")
        if key not in _KEYS:
            raise ValueError(f"SCRAM credential has an unknown key {key!r}")
        if key in values:
            raise ValueError(f"SCRAM credential has {key!r} twice")
        values[key] = value
    missing = [key for key in _KEYS if key not in values]
    if missing:
        raise ValueError(f"SCRAM credential lacks {', '.join(missing)}")
    iterations_text = values["iterations"]
    if not iterations_text.isascii() or not iterations_text.isdigit():
        raise ValueError("SCRAM credential's iterations is not a positive number")
    iterations = int(iterations_text)
    if iterations <= 0:
        raise ValueError("SCRAM credential's iterations is not a positive number")
    return ScramCredential(
        salt=_b64decode("salt", values["salt"]),
        stored_key=_b64decode("stored_key", values["stored_key"]),
        server_key=_b64decode("server_key", values["server_key"]),
        iterations=iterations,
    )


def _b64decode(key: str, text: str) -> bytes:
    try:
        decoded = binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ValueError(f"SCRAM credential's {key} is not base64") from None
    if not decoded:
        raise ValueError(f"SCRAM credential's {key} is empty")
    return decoded


# AlterUserScramCredentials' checks, with Kafka's codes and messages (ScramControlManager)

CredentialError = tuple[ErrorCode, str]


def _user_and_mechanism_error(name: str, mechanism_type: int) -> CredentialError | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if scram_mechanism_of_type(mechanism_type) is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def deletion_error(name: str, mechanism_type: int) -> CredentialError | None:
    """Why a deletion is refused before the store is asked (RESOURCE_NOT_FOUND is the store's)."""
    return _user_and_mechanism_error(name, mechanism_type)


def upsertion_error(
    name: str, mechanism_type: int, iterations: int, salt: bytes, salted_password: bytes
) -> CredentialError | None:
    """Why an upsertion is refused, or None: the user, the mechanism, the iterations, the parts."""
    error = _user_and_mechanism_error(name, mechanism_type)
    if error is not None:
        return error
    if iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not salt:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt must not be empty"
    if not salted_password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salted password must not be empty"
    return None
