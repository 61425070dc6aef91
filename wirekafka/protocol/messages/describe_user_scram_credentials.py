"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms each user has, never the keys."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class UserName:
    name: str = wire.string("0+")


@wire.message
class DescribeUserScramCredentialsRequest:
    # null or empty: every user that has a credential
    users: list[UserName] | None = wire.array(UserName, "0+", nullable="0+")


@wire.message
class CredentialInfo:
    # the mechanism's type byte: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
    mechanism: int = wire.int8("0+")
    iterations: int = wire.int32("0+")


@wire.message
class DescribeUserScramCredentialsResult:
    user: str = wire.string("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)
    credential_infos: list[CredentialInfo] = wire.array(CredentialInfo, "0+")


@wire.message
class DescribeUserScramCredentialsResponse:
    throttle_time_ms: int = wire.int32("0+")
    error_code: int = wire.int16("0+")
    error_message: str | None = wire.string("0+", nullable="0+", default=None)
    results: list[DescribeUserScramCredentialsResult] = wire.array(
        DescribeUserScramCredentialsResult, "0+"
    )
