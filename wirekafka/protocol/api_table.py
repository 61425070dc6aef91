"""The APIs wirekafka speaks: the single source of what ApiVersions advertises.

Each row names the API's request and response declarations, the version
range served and the versions that are flexible (KIP-482). The ranges start
at 0 and follow a real Kafka release (3.9), because clients infer a broker
release from them and switch features on by it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from wirekafka.protocol.messages import (
    alter_configs,
    alter_user_scram_credentials,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_user_scram_credentials,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
)
from wirekafka.protocol.schema import VersionRange


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60


@dataclass(frozen=True, slots=True)
class Api:
    key: ApiKey
    request: type
    response: type
    min_version: int
    max_version: int
    flexible_versions: VersionRange

    @property
    def name(self) -> str:
        return self.request.__name__.removesuffix("Request")

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions


def _api(key: ApiKey, module: object, max_version: int, flexible: str) -> Api:
    stem = "".join(part.title() for part in key.name.split("_"))
    return Api(
        key=key,
        request=getattr(module, f"{stem}Request"),
        response=getattr(module, f"{stem}Response"),
        min_version=0,
        max_version=max_version,
        flexible_versions=VersionRange.parse(flexible),
    )


API_TABLE: dict[int, Api] = {
    api.key: api
    for api in (
        _api(ApiKey.PRODUCE, produce, 9, "9+"),
        _api(ApiKey.FETCH, fetch, 12, "12+"),
        _api(ApiKey.LIST_OFFSETS, list_offsets, 7, "6+"),
        _api(ApiKey.METADATA, metadata, 12, "9+"),
        _api(ApiKey.CONTROLLED_SHUTDOWN, controlled_shutdown, 3, "3+"),
        _api(ApiKey.OFFSET_COMMIT, offset_commit, 8, "8+"),
        _api(ApiKey.OFFSET_FETCH, offset_fetch, 8, "6+"),
        _api(ApiKey.FIND_COORDINATOR, find_coordinator, 4, "3+"),
        _api(ApiKey.JOIN_GROUP, join_group, 9, "6+"),
        _api(ApiKey.HEARTBEAT, heartbeat, 4, "4+"),
        _api(ApiKey.LEAVE_GROUP, leave_group, 5, "4+"),
        _api(ApiKey.SYNC_GROUP, sync_group, 5, "4+"),
        _api(ApiKey.DESCRIBE_GROUPS, describe_groups, 5, "5+"),
        _api(ApiKey.LIST_GROUPS, list_groups, 4, "3+"),
        _api(ApiKey.SASL_HANDSHAKE, sasl_handshake, 1, "none"),
        _api(ApiKey.API_VERSIONS, api_versions, 4, "3+"),
        _api(ApiKey.CREATE_TOPICS, create_topics, 7, "5+"),
        _api(ApiKey.DELETE_TOPICS, delete_topics, 6, "4+"),
        _api(ApiKey.DELETE_RECORDS, delete_records, 2, "2+"),
        _api(ApiKey.INIT_PRODUCER_ID, init_producer_id, 4, "2+"),
        _api(ApiKey.OFFSET_FOR_LEADER_EPOCH, offset_for_leader_epoch, 4, "4+"),
        _api(ApiKey.DESCRIBE_ACLS, describe_acls, 3, "2+"),
        _api(ApiKey.CREATE_ACLS, create_acls, 3, "2+"),
        _api(ApiKey.DELETE_ACLS, delete_acls, 3, "2+"),
        _api(ApiKey.DESCRIBE_CONFIGS, describe_configs, 4, "4+"),
        _api(ApiKey.ALTER_CONFIGS, alter_configs, 2, "2+"),
        _api(ApiKey.DESCRIBE_LOG_DIRS, describe_log_dirs, 4, "2+"),
        _api(ApiKey.SASL_AUTHENTICATE, sasl_authenticate, 2, "2+"),
        _api(ApiKey.CREATE_PARTITIONS, create_partitions, 3, "2+"),
        _api(ApiKey.DELETE_GROUPS, delete_groups, 2, "2+"),
        _api(ApiKey.INCREMENTAL_ALTER_CONFIGS, incremental_alter_configs, 1, "1+"),
        _api(ApiKey.OFFSET_DELETE, offset_delete, 0, "none"),
        _api(ApiKey.DESCRIBE_CLIENT_QUOTAS, describe_client_quotas, 1, "1+"),
        _api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, describe_user_scram_credentials, 0, "0+"),
        _api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, alter_user_scram_credentials, 0, "0+"),
        _api(ApiKey.DESCRIBE_CLUSTER, describe_cluster, 1, "0+"),
    )
}


def api_for(api_key: int) -> Api | None:
    return API_TABLE.get(api_key)


def advertised_versions() -> list[tuple[int, int, int]]:
    """(api key, min version, max version) for every API, in key order."""
    return [(api.key, api.min_version, api.max_version) for api in API_TABLE.values()]
