"""What Kafka's broker (4.x, KafkaApis) checks before it serves each API: the
table handlers follow when they ask the authorizer.

Each API has a row of :class:`AclCheck`\\ s. A check names the operation and
resource type, where the resource's name comes from (a field path of the
request or response declaration, the cluster, or "some resource of the
type"), when Kafka asks it, how a denial shows in the answer, and the error
code. A check with ``otherwise`` is allowed when either it or the check it
names allows (Kafka asks the second only when the first is denied).

Field paths use the declarations' attribute names: ``topics[].name`` is the
``name`` of every element of ``topics``; a bare array of strings is
``groups[]``. Several paths joined by `` | `` are the same thing in different
versions (OffsetFetch v8 moved its group into ``groups[]``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.security.acl import AUTHORIZATION_FAILED, AclOperation, ResourceType


class Source(enum.Enum):
    """Where a check's resource name comes from."""

    REQUEST = "request"  # a field of the request: ``AclCheck.field``
    RESPONSE = "response"  # a field of the response being built (ListGroups filters it)
    CLUSTER = "cluster"  # the one cluster resource, ``kafka-cluster``
    ANY_OF_TYPE = "any"  # some resource of the type: AclAuthorizer.authorize_any


class Denied(enum.Enum):
    """How a denial shows in the answer."""

    WHOLE = "whole"  # the request is not served: every entry (or the top level) gets the error
    PER_RESOURCE = "per resource"  # that resource's entries get the error; the others are served
    LEFT_OUT = "left out"  # that resource is silently missing from the answer
    FIELD_WITHHELD = "field withheld"  # served, but one field is not filled (see ``note``)


@dataclass(frozen=True, slots=True)
class AclCheck:
    operation: AclOperation
    resource_type: ResourceType
    source: Source
    field: str = ""  # for REQUEST and RESPONSE: the field path naming the resource
    when: str = ""  # the condition under which Kafka asks, in words; "" = always
    denied: Denied = Denied.PER_RESOURCE
    error: ErrorCode | None = None  # None: the resource type's *_AUTHORIZATION_FAILED
    otherwise: AclCheck | None = None
    note: str = ""

    @property
    def error_code(self) -> ErrorCode:
        if self.error is not None:
            return self.error
        return AUTHORIZATION_FAILED[self.resource_type]

    def field_paths(self) -> list[str]:
        return [path.strip() for path in self.field.split("|") if path.strip()]


@dataclass(frozen=True, slots=True)
class AuthorizedOperationsField:
    """A response field carrying the bit field of allowed operations
    (AclAuthorizer.authorized_operations), filled when the request flag is set."""

    resource_type: ResourceType
    response_field: str
    request_flag: str


@dataclass(frozen=True, slots=True)
class ApiAcls:
    checks: tuple[AclCheck, ...] = ()
    authorized_operations: tuple[AuthorizedOperationsField, ...] = ()
    note: str = ""


# APIs served by the SASL and SCRAM work (issue 20), by key, before ApiKey names them
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
DESCRIBE_CLIENT_QUOTAS = 48
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51

_R = Source.REQUEST
_T = ResourceType.TOPIC
_G = ResourceType.GROUP
_C = ResourceType.CLUSTER
_X = ResourceType.TRANSACTIONAL_ID
_Op = AclOperation


def _cluster(
    operation: AclOperation,
    *,
    when: str = "",
    denied: Denied = Denied.WHOLE,
    error: ErrorCode | None = None,
    otherwise: AclCheck | None = None,
    note: str = "",
) -> AclCheck:
    return AclCheck(
        operation,
        _C,
        Source.CLUSTER,
        when=when,
        denied=denied,
        error=error,
        otherwise=otherwise,
        note=note,
    )


def _read_group() -> ApiAcls:
    """The group membership APIs: Read on the group, or the request is refused."""
    return ApiAcls((AclCheck(_Op.READ, _G, _R, "group_id", denied=Denied.WHOLE),))


def _config_checks(operation: AclOperation, resource_types: dict[ResourceType, str]) -> ApiAcls:
    return ApiAcls(
        tuple(
            AclCheck(
                operation,
                resource_type,
                Source.CLUSTER if resource_type == _C else _R,
                "" if resource_type == _C else "resources[].resource_name",
                when=f"resources[].resource_type is {codes}",
            )
            for resource_type, codes in resource_types.items()
        )
    )


# ConfigResource.Type codes as DescribeConfigs and (Incremental)AlterConfigs carry them
CONFIG_TOPIC = 2
CONFIG_BROKER = 4
CONFIG_BROKER_LOGGER = 8
CONFIG_CLIENT_METRICS = 16
CONFIG_GROUP = 32

API_ACLS: dict[int, ApiAcls] = {
    ApiKey.PRODUCE: ApiAcls(
        (
            AclCheck(
                _Op.WRITE,
                _X,
                _R,
                "transactional_id",
                when="the batches are transactional (a null transactional_id is denied too)",
                denied=Denied.WHOLE,
            ),
            AclCheck(_Op.WRITE, _T, _R, "topic_data[].name"),
        )
    ),
    ApiKey.FETCH: ApiAcls(
        (
            _cluster(
                _Op.CLUSTER_ACTION,
                when="replica_id >= 0 (a follower fetching)",
                error=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                note="every partition answers TOPIC_AUTHORIZATION_FAILED",
            ),
            AclCheck(_Op.READ, _T, _R, "topics[].topic", when="replica_id < 0 (a consumer)"),
        )
    ),
    ApiKey.LIST_OFFSETS: ApiAcls((AclCheck(_Op.DESCRIBE, _T, _R, "topics[].name"),)),
    ApiKey.METADATA: ApiAcls(
        (
            AclCheck(
                _Op.DESCRIBE,
                _T,
                _R,
                "topics[].name",
                when="topics are named",
                note="the topic answers TOPIC_AUTHORIZATION_FAILED with a zero topic id; "
                "it is not looked up, so its existence is not disclosed",
            ),
            AclCheck(
                _Op.DESCRIBE,
                _T,
                Source.RESPONSE,
                "topics[].name",
                when="all topics are asked for (topics null, or empty in v0)",
                denied=Denied.LEFT_OUT,
            ),
            _cluster(
                _Op.CREATE,
                when="a named, describable topic does not exist, allow_auto_topic_creation "
                "and auto.create.topics.enable",
                denied=Denied.PER_RESOURCE,
                otherwise=AclCheck(_Op.CREATE, _T, _R, "topics[].name"),
                error=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                note="the topic answers TOPIC_AUTHORIZATION_FAILED and is not created",
            ),
            _cluster(
                _Op.DESCRIBE,
                when="include_cluster_authorized_operations (v8-10)",
                denied=Denied.FIELD_WITHHELD,
                note="cluster_authorized_operations is 0 when denied, the bit field when allowed",
            ),
        ),
        authorized_operations=(
            AuthorizedOperationsField(
                _T, "topics[].topic_authorized_operations", "include_topic_authorized_operations"
            ),
        ),
    ),
    ApiKey.CONTROLLED_SHUTDOWN: ApiAcls((_cluster(_Op.CLUSTER_ACTION),)),
    ApiKey.OFFSET_COMMIT: ApiAcls(
        (
            AclCheck(_Op.READ, _G, _R, "group_id", denied=Denied.WHOLE),
            AclCheck(_Op.READ, _T, _R, "topics[].name"),
        )
    ),
    ApiKey.OFFSET_FETCH: ApiAcls(
        (
            AclCheck(
                _Op.DESCRIBE,
                _G,
                _R,
                "group_id | groups[].group_id",
                note="v0-7: the top-level error; v8+: that group's error",
            ),
            AclCheck(
                _Op.DESCRIBE,
                _T,
                _R,
                "topics[].name | groups[].topics[].name",
                when="topics are named",
                note="each partition answers TOPIC_AUTHORIZATION_FAILED with offset -1",
            ),
            AclCheck(
                _Op.DESCRIBE,
                _T,
                Source.RESPONSE,
                "topics[].name | groups[].topics[].name",
                when="all of the group's offsets are asked for (topics null)",
                denied=Denied.LEFT_OUT,
            ),
        )
    ),
    ApiKey.FIND_COORDINATOR: ApiAcls(
        (
            AclCheck(
                _Op.DESCRIBE,
                _G,
                _R,
                "key | coordinator_keys[]",
                when="key_type is 0 (group)",
                note="v0-3: the top-level error; v4+: that key's error; no coordinator is named",
            ),
            AclCheck(
                _Op.DESCRIBE,
                _X,
                _R,
                "key | coordinator_keys[]",
                when="key_type is 1 (transaction)",
                note="v0-3: the top-level error; v4+: that key's error; no coordinator is named",
            ),
        )
    ),
    ApiKey.JOIN_GROUP: _read_group(),
    ApiKey.HEARTBEAT: _read_group(),
    ApiKey.LEAVE_GROUP: _read_group(),
    ApiKey.SYNC_GROUP: _read_group(),
    ApiKey.DESCRIBE_GROUPS: ApiAcls(
        (AclCheck(_Op.DESCRIBE, _G, _R, "groups[]"),),
        authorized_operations=(
            AuthorizedOperationsField(
                _G, "groups[].authorized_operations", "include_authorized_operations"
            ),
        ),
    ),
    ApiKey.LIST_GROUPS: ApiAcls(
        (
            _cluster(
                _Op.DESCRIBE,
                denied=Denied.LEFT_OUT,
                otherwise=AclCheck(
                    _Op.DESCRIBE, _G, Source.RESPONSE, "groups[].group_id", denied=Denied.LEFT_OUT
                ),
                note="with Describe on the cluster every group is listed, else the describable ones",
            ),
        )
    ),
    ApiKey.API_VERSIONS: ApiAcls(note="served to everyone, before authentication too"),
    ApiKey.CREATE_TOPICS: ApiAcls(
        (
            _cluster(
                _Op.CREATE,
                denied=Denied.PER_RESOURCE,
                otherwise=AclCheck(_Op.CREATE, _T, _R, "topics[].name"),
                error=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                note="a denied topic answers TOPIC_AUTHORIZATION_FAILED and is not created",
            ),
            AclCheck(
                _Op.DESCRIBE_CONFIGS,
                _T,
                _R,
                "topics[].name",
                denied=Denied.FIELD_WITHHELD,
                note="topic_config_error_code is TOPIC_AUTHORIZATION_FAILED and no configs are "
                "returned (v5+); the topic is still created",
            ),
        )
    ),
    ApiKey.DELETE_TOPICS: ApiAcls(
        (
            AclCheck(
                _Op.DESCRIBE,
                _T,
                _R,
                "topics[].topic_id",
                when="a topic is named by id (v6+): the check is on the name the id resolves to",
                note="the name is withheld (null) and the topic answers TOPIC_AUTHORIZATION_FAILED",
            ),
            AclCheck(_Op.DELETE, _T, _R, "topic_names[] | topics[].name"),
        )
    ),
    ApiKey.DELETE_RECORDS: ApiAcls((AclCheck(_Op.DELETE, _T, _R, "topics[].name"),)),
    ApiKey.INIT_PRODUCER_ID: ApiAcls(
        (
            AclCheck(
                _Op.WRITE,
                _X,
                _R,
                "transactional_id",
                when="transactional_id is not null",
                denied=Denied.WHOLE,
            ),
            _cluster(
                _Op.IDEMPOTENT_WRITE,
                when="transactional_id is null (an idempotent producer)",
                otherwise=AclCheck(_Op.WRITE, _T, Source.ANY_OF_TYPE, denied=Denied.WHOLE),
                note="Write on any topic is enough: AclAuthorizer.authorize_any",
            ),
        )
    ),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ApiAcls(
        (
            _cluster(
                _Op.CLUSTER_ACTION,
                denied=Denied.PER_RESOURCE,
                otherwise=AclCheck(_Op.DESCRIBE, _T, _R, "topics[].topic"),
                error=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                note="replicas pass with ClusterAction, consumers (KIP-320) with Describe on the topic",
            ),
        )
    ),
    ApiKey.DESCRIBE_CONFIGS: _config_checks(
        _Op.DESCRIBE_CONFIGS,
        {
            _T: f"{CONFIG_TOPIC} (topic)",
            _C: f"{CONFIG_BROKER}, {CONFIG_BROKER_LOGGER} or {CONFIG_CLIENT_METRICS} "
            "(broker, broker logger, client metrics)",
            _G: f"{CONFIG_GROUP} (group)",
        },
    ),
    ApiKey.ALTER_CONFIGS: _config_checks(
        _Op.ALTER_CONFIGS,
        {
            _T: f"{CONFIG_TOPIC} (topic)",
            _C: f"{CONFIG_BROKER} or {CONFIG_CLIENT_METRICS} (broker, client metrics)",
        },
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _config_checks(
        _Op.ALTER_CONFIGS,
        {
            _T: f"{CONFIG_TOPIC} (topic)",
            _C: f"{CONFIG_BROKER}, {CONFIG_BROKER_LOGGER} or {CONFIG_CLIENT_METRICS} "
            "(broker, broker logger, client metrics)",
            _G: f"{CONFIG_GROUP} (group)",
        },
    ),
    ApiKey.DESCRIBE_LOG_DIRS: ApiAcls(
        (
            _cluster(
                _Op.DESCRIBE,
                note="no results; error_code (v3+) is CLUSTER_AUTHORIZATION_FAILED",
            ),
        )
    ),
    ApiKey.CREATE_PARTITIONS: ApiAcls((AclCheck(_Op.ALTER, _T, _R, "topics[].name"),)),
    ApiKey.DELETE_GROUPS: ApiAcls((AclCheck(_Op.DELETE, _G, _R, "groups_names[]"),)),
    ApiKey.OFFSET_DELETE: ApiAcls(
        (
            AclCheck(_Op.DELETE, _G, _R, "group_id", denied=Denied.WHOLE),
            AclCheck(_Op.READ, _T, _R, "topics[].name"),
        )
    ),
    ApiKey.DESCRIBE_CLUSTER: ApiAcls(
        (
            _cluster(
                _Op.DESCRIBE,
                when="include_cluster_authorized_operations",
                denied=Denied.FIELD_WITHHELD,
                note="cluster_authorized_operations is 0 when denied, the bit field when allowed",
            ),
        ),
        note="served to everyone: only the authorized-operations field is checked",
    ),
    ApiKey.DESCRIBE_ACLS: ApiAcls((_cluster(_Op.DESCRIBE),)),
    ApiKey.CREATE_ACLS: ApiAcls((_cluster(_Op.ALTER),)),
    ApiKey.DELETE_ACLS: ApiAcls((_cluster(_Op.ALTER),)),
    SASL_HANDSHAKE: ApiAcls(note="served before authentication"),
    SASL_AUTHENTICATE: ApiAcls(note="served before authentication"),
    DESCRIBE_CLIENT_QUOTAS: ApiAcls(
        (
            _cluster(
                _Op.DESCRIBE_CONFIGS,
                note="the top-level error_code is CLUSTER_AUTHORIZATION_FAILED",
            ),
        )
    ),
    DESCRIBE_USER_SCRAM_CREDENTIALS: ApiAcls(
        (
            _cluster(
                _Op.DESCRIBE,
                note="the top-level error_code is CLUSTER_AUTHORIZATION_FAILED",
            ),
        )
    ),
    ALTER_USER_SCRAM_CREDENTIALS: ApiAcls(
        (
            _cluster(
                _Op.ALTER,
                note="every user's result is CLUSTER_AUTHORIZATION_FAILED",
            ),
        )
    ),
}

# ConfigResource type code -> the ACL resource type its configs are checked on
CONFIG_RESOURCE_ACL_TYPES: dict[int, ResourceType] = {
    CONFIG_TOPIC: ResourceType.TOPIC,
    CONFIG_BROKER: ResourceType.CLUSTER,
    CONFIG_BROKER_LOGGER: ResourceType.CLUSTER,
    CONFIG_CLIENT_METRICS: ResourceType.CLUSTER,
    CONFIG_GROUP: ResourceType.GROUP,
}
