"""AlterUserScramCredentials: add, replace and delete users' SCRAM credentials.

The client sends a salt and a salted password; the broker keeps the salt, the stored
key and the server key (never the salted password). One result a user, in the order
first named, and each user's changes are made all together or not at all. As Kafka
checks them in ZooKeeper mode (the mode whose behaviour ``kafka-configs`` relies on:
one user's mechanisms are changed in one request):

* an empty name, an unknown mechanism, iterations out of 4096..16384 or an empty salt
  or salted password refuses the user (UNACCEPTABLE_CREDENTIAL, UNSUPPORTED_SASL_MECHANISM);
* the same user and mechanism twice, in deletions or upsertions or both, refuses the
  user (DUPLICATE_RESOURCE);
* the deletion of a credential the user does not have refuses the user
  (RESOURCE_NOT_FOUND);
* changes that cannot be stored refuse their users (UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

import logging
from collections import Counter

from wirekafka.broker.context import BrokerContext, CloseConnection
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation
from wirekafka.security.scram_credentials import (
    CredentialError,
    credential_from_salted_password,
    deletion_error,
    format_credential,
    scram_mechanism_of_type,
    upsertion_error,
)
from wirekafka.storage.cluster_metadata import MetadataSaveError

log = logging.getLogger("wirekafka.handlers")

# Kafka's messages (ZkAdminManager, ScramControlManager)
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
NO_CREDENTIAL = "Attempt to delete a user credential that does not exist"
NOT_STORED = "The SCRAM credentials could not be stored"


def _mechanism_name(mechanism_type: int) -> str:
    mechanism = scram_mechanism_of_type(mechanism_type)
    assert mechanism is not None, "checked by deletion_error / upsertion_error"
    return mechanism.name


async def handle_alter_user_scram_credentials(
    ctx: BrokerContext, request: Request
) -> AlterUserScramCredentialsResponse:
    body: AlterUserScramCredentialsRequest = request.body
    scram_users = ctx.scram_users
    if scram_users is None:
        raise CloseConnection("this broker keeps no SCRAM credentials")
    users = list(
        dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    )
    if not cluster_authorized(ctx, request, AclOperation.ALTER):
        return AlterUserScramCredentialsResponse(
            throttle_time_ms=0,
            results=[
                AlterUserScramCredentialsResult(
                    user=user, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                for user in users
            ],
        )
    errors: dict[str, CredentialError] = {}
    for deletion in body.deletions:
        error = deletion_error(deletion.name, deletion.mechanism)
        if error is not None:
            errors.setdefault(deletion.name, error)
    for upsertion in body.upsertions:
        error = upsertion_error(
            upsertion.name,
            upsertion.mechanism,
            upsertion.iterations,
            upsertion.salt,
            upsertion.salted_password,
        )
        if error is not None:
            errors.setdefault(upsertion.name, error)
    named = Counter(
        (name, mechanism)
        for name, mechanism in [
            *((d.name, d.mechanism) for d in body.deletions),
            *((u.name, u.mechanism) for u in body.upsertions),
        ]
        if name not in errors
    )
    for (user, _), times in named.items():
        if times > 1:
            errors.setdefault(user, (ErrorCode.DUPLICATE_RESOURCE, ALTERED_TWICE))
    stored = scram_users.credentials()
    for deletion in body.deletions:
        if deletion.name not in errors and _mechanism_name(deletion.mechanism) not in stored.get(
            deletion.name, {}
        ):
            errors[deletion.name] = (ErrorCode.RESOURCE_NOT_FOUND, NO_CREDENTIAL)

    changes: dict[tuple[str, str], str | None] = {}
    for deletion in body.deletions:
        if deletion.name not in errors:
            changes[(deletion.name, _mechanism_name(deletion.mechanism))] = None
    for upsertion in body.upsertions:
        if upsertion.name not in errors:
            mechanism = _mechanism_name(upsertion.mechanism)
            credential = credential_from_salted_password(
                mechanism, upsertion.salt, upsertion.salted_password, upsertion.iterations
            )
            changes[(upsertion.name, mechanism)] = format_credential(credential)
    if changes:
        try:
            await scram_users.change(changes)
        except MetadataSaveError as exc:
            log.error("AlterUserScramCredentials: %s", exc)
            for user, _ in changes:
                errors[user] = (ErrorCode.UNKNOWN_SERVER_ERROR, NOT_STORED)
    return AlterUserScramCredentialsResponse(
        throttle_time_ms=0,
        results=[
            AlterUserScramCredentialsResult(user=user, error_code=ErrorCode.NONE)
            if user not in errors
            else AlterUserScramCredentialsResult(
                user=user, error_code=errors[user][0], error_message=errors[user][1]
            )
            for user in users
        ],
    )
