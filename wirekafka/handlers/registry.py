"""Which handler answers which API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.alter_configs import handle_alter_configs
from wirekafka.handlers.alter_user_scram_credentials import handle_alter_user_scram_credentials
from wirekafka.handlers.api_versions import handle_api_versions
from wirekafka.handlers.controlled_shutdown import handle_controlled_shutdown
from wirekafka.handlers.create_acls import handle_create_acls
from wirekafka.handlers.create_partitions import handle_create_partitions
from wirekafka.handlers.create_topics import handle_create_topics
from wirekafka.handlers.delete_acls import handle_delete_acls
from wirekafka.handlers.delete_groups import handle_delete_groups
from wirekafka.handlers.delete_records import handle_delete_records
from wirekafka.handlers.delete_topics import handle_delete_topics
from wirekafka.handlers.describe_acls import handle_describe_acls
from wirekafka.handlers.describe_client_quotas import handle_describe_client_quotas
from wirekafka.handlers.describe_cluster import handle_describe_cluster
from wirekafka.handlers.describe_configs import handle_describe_configs
from wirekafka.handlers.describe_groups import handle_describe_groups
from wirekafka.handlers.describe_log_dirs import handle_describe_log_dirs
from wirekafka.handlers.describe_user_scram_credentials import (
    handle_describe_user_scram_credentials,
)
from wirekafka.handlers.fetch import handle_fetch
from wirekafka.handlers.find_coordinator import handle_find_coordinator
from wirekafka.handlers.heartbeat import handle_heartbeat
from wirekafka.handlers.incremental_alter_configs import handle_incremental_alter_configs
from wirekafka.handlers.init_producer_id import handle_init_producer_id
from wirekafka.handlers.join_group import handle_join_group
from wirekafka.handlers.leave_group import handle_leave_group
from wirekafka.handlers.list_groups import handle_list_groups
from wirekafka.handlers.list_offsets import handle_list_offsets
from wirekafka.handlers.metadata import handle_metadata
from wirekafka.handlers.offset_commit import handle_offset_commit
from wirekafka.handlers.offset_delete import handle_offset_delete
from wirekafka.handlers.offset_fetch import handle_offset_fetch
from wirekafka.handlers.offset_for_leader_epoch import handle_offset_for_leader_epoch
from wirekafka.handlers.produce import handle_produce
from wirekafka.handlers.sasl import handle_sasl_authenticate, handle_sasl_handshake
from wirekafka.handlers.sync_group import handle_sync_group
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.rpc import Request

# A handler returns the response body, or None when no response is sent (acks=0).
Handler = Callable[[BrokerContext, Request], Awaitable[Any | None]]

HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: handle_produce,
    ApiKey.FETCH: handle_fetch,
    ApiKey.LIST_OFFSETS: handle_list_offsets,
    ApiKey.METADATA: handle_metadata,
    ApiKey.CONTROLLED_SHUTDOWN: handle_controlled_shutdown,
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.API_VERSIONS: handle_api_versions,
    ApiKey.CREATE_TOPICS: handle_create_topics,
    ApiKey.DELETE_TOPICS: handle_delete_topics,
    ApiKey.DELETE_RECORDS: handle_delete_records,
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: handle_offset_for_leader_epoch,
    ApiKey.DESCRIBE_ACLS: handle_describe_acls,
    ApiKey.CREATE_ACLS: handle_create_acls,
    ApiKey.DELETE_ACLS: handle_delete_acls,
    ApiKey.DESCRIBE_CONFIGS: handle_describe_configs,
    ApiKey.ALTER_CONFIGS: handle_alter_configs,
    ApiKey.DESCRIBE_LOG_DIRS: handle_describe_log_dirs,
    ApiKey.CREATE_PARTITIONS: handle_create_partitions,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: handle_incremental_alter_configs,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: handle_describe_client_quotas,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: handle_alter_user_scram_credentials,
    ApiKey.DESCRIBE_CLUSTER: handle_describe_cluster,
    ApiKey.SASL_HANDSHAKE: handle_sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: handle_sasl_authenticate,
}
