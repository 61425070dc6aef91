"""AlterUserScramCredentials (key 51): add, replace and delete users' SCRAM credentials.

The client sends the salt and the salted password (KIP-554), never the password.
"""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class ScramCredentialDeletion:
    name: str = wire.string("0+")
    # the mechanism's type byte: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
    mechanism: int = wire.int8("0+")


@wire.message
class ScramCredentialUpsertion:
    name: str = wire.string("0+")
    mechanism: int = wire.int8("0+")
    iterations: int = wire.int32("0+")
    salt: bytes = wire.bytes_("0+")
    salted_password: bytes = wire.bytes_("0+", secret=True)


@wire.message
class AlterUserScramCredentialsRequest:
    deletions: list[ScramCredentialDeletion] = wire.array(ScramCredentialDeletion, "0+")
    upsertions: list[ScramCredentialUpsertion] = wire.array(ScramCredentialUpsertion, "0+")


@wire.message
class AlterUserScramCredentialsResult:
    user: str = wire.string("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)


@wire.message
class AlterUserScramCredentialsResponse:
    throttle_time_ms: int = wire.int32("0+")
    results: list[AlterUserScramCredentialsResult] = wire.array(
        AlterUserScramCredentialsResult, "0+"
    )
