"""DescribeUserScramCredentials: which SCRAM mechanisms each user has, with their
iterations (never a salt or a key).

As Kafka answers: no users (null or empty) lists every user that has a credential,
by name; otherwise one result a user named, in the request's order, DUPLICATE_RESOURCE
for a user named twice and RESOURCE_NOT_FOUND for one without a credential.
"""

from __future__ import annotations

from collections import Counter

from wirekafka.broker.context import BrokerContext, CloseConnection
from wirekafka.broker.scram_users import ScramUsers
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation
from wirekafka.security.scram_credentials import SCRAM_MECHANISMS

# Kafka's messages (ScramImage), the user's name appended
DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
NO_CREDENTIAL = "Attempt to describe a user credential that does not exist: "
UNREADABLE = "The stored SCRAM credential cannot be read: "


def _result(scram_users: ScramUsers, user: str) -> DescribeUserScramCredentialsResult:
    stored = scram_users.credentials().get(user, {})
    infos: list[CredentialInfo] = []
    for name, mechanism in SCRAM_MECHANISMS.items():
        if name not in stored:
            continue
        credential = scram_users.lookup(name, user)
        if credential is None:
            return DescribeUserScramCredentialsResult(
                user=user,
                error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message=UNREADABLE + user,
            )
        infos.append(CredentialInfo(mechanism=mechanism.type, iterations=credential.iterations))
    if not infos:
        return DescribeUserScramCredentialsResult(
            user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND, error_message=NO_CREDENTIAL + user
        )
    return DescribeUserScramCredentialsResult(
        user=user, error_code=ErrorCode.NONE, credential_infos=infos
    )


async def handle_describe_user_scram_credentials(
    ctx: BrokerContext, request: Request
) -> DescribeUserScramCredentialsResponse:
    body: DescribeUserScramCredentialsRequest = request.body
    if not cluster_authorized(ctx, request, AclOperation.DESCRIBE):
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            results=[],
        )
    scram_users = ctx.scram_users
    if scram_users is None:
        raise CloseConnection("this broker keeps no SCRAM credentials")
    results: list[DescribeUserScramCredentialsResult] = []
    if not body.users:
        results = [_result(scram_users, user) for user in sorted(scram_users.credentials())]
    else:
        named = Counter(user.name for user in body.users)
        for user in named:  # each once, in the order first named
            if named[user] > 1:
                results.append(
                    DescribeUserScramCredentialsResult(
                        user=user,
                        error_code=ErrorCode.DUPLICATE_RESOURCE,
                        error_message=DUPLICATE_USER + user,
                    )
                )
            else:
                results.append(_result(scram_users, user))
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, results=results
    )
