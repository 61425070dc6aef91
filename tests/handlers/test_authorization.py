"""Every API asks what Kafka asks (wirekafka.security.api_acls.API_ACLS), with Kafka's codes.

The walk is driven by API_ACLS: for each check of each served API a scenario
builds a request naming the check's resource and reads, from the answer, what
the check decides for that resource. The principal gets every other ACL the
request needs, so that only the check under test decides; without its ACL the
answer is the check's code (or the resource is left out, or a field withheld),
and with it (or with the ACL of the check's ``otherwise``) the request is served.
Super users and ``allow.everyone.if.no.acl.found`` are walked the same way, and
a denied principal gets the same answer for a topic that exists as for one
that does not.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.handlers.support import (
    TestBroker,
    fetch_request,
    make_batch,
    produce_request,
    run_autojump,
)
from wirekafka.handlers.registry import HANDLERS
from wirekafka.protocol.api_table import API_TABLE, ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from wirekafka.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest
from wirekafka.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from wirekafka.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from wirekafka.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from wirekafka.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from wirekafka.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from wirekafka.protocol.messages.delete_groups import DeleteGroupsRequest
from wirekafka.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from wirekafka.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from wirekafka.protocol.messages.describe_acls import DescribeAclsRequest
from wirekafka.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
from wirekafka.protocol.messages.describe_cluster import DescribeClusterRequest
from wirekafka.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from wirekafka.protocol.messages.describe_groups import DescribeGroupsRequest
from wirekafka.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from wirekafka.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
)
from wirekafka.protocol.messages.find_coordinator import FindCoordinatorRequest
from wirekafka.protocol.messages.heartbeat import HeartbeatRequest
from wirekafka.protocol.messages.incremental_alter_configs import (
    AlterableConfig as IncrementalConfig,
)
from wirekafka.protocol.messages.incremental_alter_configs import (
    AlterConfigsResource as IncrementalResource,
)
from wirekafka.protocol.messages.incremental_alter_configs import (
    ConfigOperation,
    IncrementalAlterConfigsRequest,
)
from wirekafka.protocol.messages.init_producer_id import InitProducerIdRequest
from wirekafka.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from wirekafka.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from wirekafka.protocol.messages.list_groups import ListGroupsRequest
from wirekafka.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from wirekafka.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from wirekafka.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from wirekafka.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from wirekafka.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from wirekafka.protocol.messages.sasl_handshake import SaslHandshakeRequest
from wirekafka.protocol.messages.sync_group import SyncGroupRequest
from wirekafka.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    operations_bit_field,
)
from wirekafka.security.api_acls import (
    API_ACLS,
    CONFIG_BROKER,
    CONFIG_GROUP,
    CONFIG_TOPIC,
    AclCheck,
    Denied,
    Source,
)
from wirekafka.security.authorizer import AclAuthorizer

ALICE, BOB = "User:alice", "User:bob"
TOPIC, MISSING = "orders", "orderz"  # the same length: answers compare with the names swapped
TWIN = {TOPIC: MISSING, MISSING: TOPIC}
GROUP, TRANSACTIONAL_ID = "payments", "tx-1"
OP, RT = AclOperation, ResourceType

LEFT_OUT, LISTED = "left out", "listed"  # a resource missing from the answer, or in it
WITHHELD, GIVEN = "withheld", "given"  # an authorized-operations field: 0, or the bits

# What a scenario reads from an answer for the topic it named: an error code, or one of the above
Outcome = int | str


def _only(items: list[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]


@dataclass(frozen=True)
class Scenario:
    """A request that meets check ``check`` of ``api``'s row in API_ACLS, naming ``topic``.

    ``request(topic)`` builds it; ``outcome(response, topic)`` reads the check's
    decision; ``allowed`` is the outcome with the ACL (the request served: NONE
    unless the API answers something else to this request on this broker)."""

    api: ApiKey
    check: int
    version: int
    request: Callable[[str], Any]
    outcome: Callable[[Any, str], Outcome]
    allowed: Outcome = ErrorCode.NONE
    topic: str = TOPIC
    # False where the check is only asked once the topic may be described, so
    # its existence is no secret (Metadata's auto-creation)
    hides_existence: bool = True

    @property
    def acl_check(self) -> AclCheck:
        return API_ACLS[self.api].checks[self.check]

    @property
    def denied(self) -> Outcome:
        check = self.acl_check
        if check.denied == Denied.LEFT_OUT:
            return LEFT_OUT
        if check.denied == Denied.FIELD_WITHHELD and self.allowed == GIVEN:
            return WITHHELD
        return check.error_code

    def __str__(self) -> str:
        check = self.acl_check
        return f"{self.api.name}-{check.operation.name}-{check.resource_type.name}-{self.check}"


# requests


def _produce(topic: str) -> Any:
    return produce_request(topic, make_batch([b"v"]))


def _fetch(replica_id: int) -> Callable[[str], Any]:
    def build(topic: str) -> Any:
        request = fetch_request([(topic, 0, 0, 1 << 20)])
        request.replica_id = replica_id
        return request

    return build


def _metadata(*, all_topics: bool = False, **flags: bool) -> Callable[[str], Any]:
    def build(topic: str) -> Any:
        topics = None if all_topics else [MetadataRequestTopic(name=topic)]
        return MetadataRequest(topics=topics, allow_auto_topic_creation=True, **flags)

    return build


def _commit(topic: str) -> Any:
    return OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=1, committed_metadata=""
                    )
                ],
            )
        ],
    )


def _offset_fetch(*, all_topics: bool = False) -> Callable[[str], Any]:
    def build(topic: str) -> Any:
        topics = (
            None if all_topics else [OffsetFetchRequestTopics(name=topic, partition_indexes=[0])]
        )
        return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=GROUP, topics=topics)])

    return build


def _config_resource(config_type: int, topic: str) -> str:
    return {CONFIG_TOPIC: topic, CONFIG_BROKER: "0", CONFIG_GROUP: GROUP}[config_type]


def _describe_configs(config_type: int) -> Callable[[str], Any]:
    def build(topic: str) -> Any:
        name = _config_resource(config_type, topic)
        return DescribeConfigsRequest(
            resources=[DescribeConfigsResource(resource_type=config_type, resource_name=name)]
        )

    return build


def _alter_configs(config_type: int) -> Callable[[str], Any]:
    def build(topic: str) -> Any:
        name = _config_resource(config_type, topic)
        configs = (
            [AlterableConfig(name="retention.ms", value="1000")]
            if config_type == CONFIG_TOPIC
            else []
        )
        return AlterConfigsRequest(
            resources=[
                AlterConfigsResource(resource_type=config_type, resource_name=name, configs=configs)
            ],
            validate_only=False,
        )

    return build


def _incremental_alter_configs(config_type: int) -> Callable[[str], Any]:
    def build(topic: str) -> Any:
        name = _config_resource(config_type, topic)
        configs = (
            [
                IncrementalConfig(
                    name="retention.ms", config_operation=ConfigOperation.SET, value="1000"
                )
            ]
            if config_type == CONFIG_TOPIC
            else []
        )
        return IncrementalAlterConfigsRequest(
            resources=[
                IncrementalResource(resource_type=config_type, resource_name=name, configs=configs)
            ],
            validate_only=False,
        )

    return build


def _join(topic: str) -> Any:
    return JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


def _create_topics(topic: str) -> Any:
    return CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=topic, num_partitions=1, replication_factor=1, assignments=[], configs=[]
            )
        ],
        timeout_ms=1000,
        validate_only=False,
    )


def _any_acl() -> dict[str, int]:
    return dict(
        resource_type_filter=RT.ANY,
        pattern_type_filter=PatternType.ANY,
        operation=OP.ANY,
        permission_type=AclPermissionType.ANY,
    )


# outcomes


def _partition_code(topics_field: str, partitions_field: str, name_field: str = "name") -> Any:
    def read(response: Any, topic: str) -> Outcome:
        entry = _only(
            [t for t in getattr(response, topics_field) if getattr(t, name_field) == topic]
        )
        return _only(getattr(entry, partitions_field)).error_code

    return read


def _topic_code(topics_field: str, name_field: str = "name") -> Any:
    def read(response: Any, topic: str) -> Outcome:
        entries = getattr(response, topics_field)
        return _only([t for t in entries if getattr(t, name_field) == topic]).error_code

    return read


def _listed(response: Any, topic: str) -> Outcome:
    names = [t.name for t in response.topics]
    return LISTED if topic in names else LEFT_OUT


def _offsets_listed(response: Any, topic: str) -> Outcome:
    group = _only(response.groups)
    assert group.error_code == ErrorCode.NONE
    return LISTED if topic in [t.name for t in group.topics] else LEFT_OUT


def _group_listed(response: Any, topic: str) -> Outcome:
    assert response.error_code == ErrorCode.NONE
    return LISTED if GROUP in [g.group_id for g in response.groups] else LEFT_OUT


def _cluster_operations(response: Any, topic: str) -> Outcome:
    bits = response.cluster_authorized_operations
    return WITHHELD if bits == 0 else GIVEN if bits & (1 << OP.DESCRIBE) else bits


def _top_level(response: Any, topic: str) -> Outcome:
    return response.error_code


def _only_result(field_name: str) -> Callable[[Any, str], Outcome]:
    def read(response: Any, topic: str) -> Outcome:
        return _only(getattr(response, field_name)).error_code

    return read


def _created_configs(response: Any, topic: str) -> Outcome:
    result = _only(response.topics)
    assert result.error_code == ErrorCode.NONE, result
    assert bool(result.configs) == (result.topic_config_error_code == ErrorCode.NONE)
    return result.topic_config_error_code


def _offset_fetch_group(response: Any, topic: str) -> Outcome:
    return _only(response.groups).error_code


def _offset_fetch_partition(response: Any, topic: str) -> Outcome:
    group = _only(response.groups)
    partition = _only(_only([t for t in group.topics if t.name == topic]).partitions)
    if partition.error_code:
        assert partition.committed_offset == -1
    return partition.error_code


def _coordinator(response: Any, topic: str) -> Outcome:
    found = _only(response.coordinators)
    if found.error_code:
        assert found.node_id == -1
    return found.error_code


def _describe_groups(response: Any, topic: str) -> Outcome:
    group = _only(response.groups)
    if group.error_code:
        assert not group.members
    return group.error_code


S = Scenario
TOPIC_CODE = _partition_code("responses", "partition_responses")
SCENARIOS: list[Scenario] = [
    S(ApiKey.PRODUCE, 1, 9, _produce, TOPIC_CODE),
    S(ApiKey.FETCH, 0, 12, _fetch(1), _partition_code("responses", "partitions", "topic")),
    S(ApiKey.FETCH, 1, 12, _fetch(-1), _partition_code("responses", "partitions", "topic")),
    S(
        ApiKey.LIST_OFFSETS,
        0,
        7,
        lambda t: ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                ListOffsetsTopic(
                    name=t, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
                )
            ],
        ),
        _partition_code("topics", "partitions"),
    ),
    S(ApiKey.METADATA, 0, 12, _metadata(), _topic_code("topics")),
    S(ApiKey.METADATA, 1, 12, _metadata(all_topics=True), _listed, allowed=LISTED),
    S(
        ApiKey.METADATA,
        2,
        12,
        _metadata(),
        _topic_code("topics"),
        topic=MISSING,
        hides_existence=False,
    ),
    S(
        ApiKey.METADATA,
        3,
        10,
        _metadata(include_cluster_authorized_operations=True),
        _cluster_operations,
        allowed=GIVEN,
    ),
    S(
        ApiKey.CONTROLLED_SHUTDOWN,
        0,
        3,
        lambda t: ControlledShutdownRequest(broker_id=0),
        _top_level,
    ),
    S(ApiKey.OFFSET_COMMIT, 0, 8, _commit, _partition_code("topics", "partitions")),
    S(ApiKey.OFFSET_COMMIT, 1, 8, _commit, _partition_code("topics", "partitions")),
    S(ApiKey.OFFSET_FETCH, 0, 8, _offset_fetch(), _offset_fetch_group),
    S(ApiKey.OFFSET_FETCH, 1, 8, _offset_fetch(), _offset_fetch_partition),
    S(ApiKey.OFFSET_FETCH, 2, 8, _offset_fetch(all_topics=True), _offsets_listed, allowed=LISTED),
    S(
        ApiKey.FIND_COORDINATOR,
        0,
        4,
        lambda t: FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]),
        _coordinator,
    ),
    S(
        ApiKey.FIND_COORDINATOR,
        1,
        4,
        lambda t: FindCoordinatorRequest(key_type=1, coordinator_keys=[TRANSACTIONAL_ID]),
        _coordinator,
        allowed=ErrorCode.COORDINATOR_NOT_AVAILABLE,  # transactions are not served
    ),
    S(ApiKey.JOIN_GROUP, 0, 5, _join, _top_level, allowed=ErrorCode.MEMBER_ID_REQUIRED),
    S(
        ApiKey.HEARTBEAT,
        0,
        4,
        lambda t: HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="m"),
        _top_level,
        allowed=ErrorCode.UNKNOWN_MEMBER_ID,
    ),
    S(
        ApiKey.LEAVE_GROUP,
        0,
        5,
        lambda t: LeaveGroupRequest(group_id=GROUP, members=[MemberIdentity(member_id="m")]),
        _top_level,
    ),
    S(
        ApiKey.SYNC_GROUP,
        0,
        5,
        lambda t: SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="m", assignments=[]),
        _top_level,
        allowed=ErrorCode.UNKNOWN_MEMBER_ID,
    ),
    S(
        ApiKey.DESCRIBE_GROUPS,
        0,
        5,
        lambda t: DescribeGroupsRequest(groups=[GROUP]),
        _describe_groups,
    ),
    S(ApiKey.LIST_GROUPS, 0, 4, lambda t: ListGroupsRequest(), _group_listed, allowed=LISTED),
    S(ApiKey.CREATE_TOPICS, 0, 7, _create_topics, _topic_code("topics"), topic=MISSING),
    S(
        ApiKey.CREATE_TOPICS,
        1,
        7,
        _create_topics,
        _created_configs,
        topic=MISSING,
        hides_existence=False,  # Create is granted: a topic that exists answers so
    ),
    S(
        ApiKey.DELETE_TOPICS,
        1,
        6,
        lambda t: DeleteTopicsRequest(topics=[DeleteTopicState(name=t)], timeout_ms=1000),
        _topic_code("responses"),
    ),
    S(
        ApiKey.DELETE_RECORDS,
        0,
        2,
        lambda t: DeleteRecordsRequest(
            topics=[
                DeleteRecordsTopic(
                    name=t, partitions=[DeleteRecordsPartition(partition_index=0, offset=1)]
                )
            ],
            timeout_ms=1000,
        ),
        _partition_code("topics", "partitions"),
    ),
    S(
        ApiKey.INIT_PRODUCER_ID,
        1,
        4,
        lambda t: InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000),
        _top_level,
    ),
    S(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        0,
        4,
        lambda t: OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderTopic(
                    topic=t, partitions=[OffsetForLeaderPartition(partition=0, leader_epoch=0)]
                )
            ],
        ),
        _partition_code("topics", "partitions", "topic"),
    ),
    S(ApiKey.DESCRIBE_ACLS, 0, 3, lambda t: DescribeAclsRequest(**_any_acl()), _top_level),
    S(
        ApiKey.CREATE_ACLS,
        0,
        3,
        lambda t: CreateAclsRequest(
            creations=[
                AclCreation(
                    resource_type=RT.TOPIC,
                    resource_name="other",
                    principal=BOB,
                    host="*",
                    operation=OP.READ,
                    permission_type=AclPermissionType.ALLOW,
                )
            ]
        ),
        _only_result("results"),
    ),
    S(
        ApiKey.DELETE_ACLS,
        0,
        3,
        lambda t: DeleteAclsRequest(filters=[DeleteAclsFilter(principal_filter=BOB, **_any_acl())]),
        _only_result("filter_results"),
    ),
    S(ApiKey.DESCRIBE_CONFIGS, 0, 4, _describe_configs(CONFIG_TOPIC), _only_result("results")),
    S(ApiKey.DESCRIBE_CONFIGS, 1, 4, _describe_configs(CONFIG_BROKER), _only_result("results")),
    S(
        ApiKey.DESCRIBE_CONFIGS,
        2,
        4,
        _describe_configs(CONFIG_GROUP),
        _only_result("results"),
        allowed=ErrorCode.INVALID_REQUEST,
    ),  # group configs are not served
    S(ApiKey.ALTER_CONFIGS, 0, 2, _alter_configs(CONFIG_TOPIC), _only_result("responses")),
    S(ApiKey.ALTER_CONFIGS, 1, 2, _alter_configs(CONFIG_BROKER), _only_result("responses")),
    S(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        0,
        1,
        _incremental_alter_configs(CONFIG_TOPIC),
        _only_result("responses"),
    ),
    S(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        1,
        _incremental_alter_configs(CONFIG_BROKER),
        _only_result("responses"),
    ),
    S(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        2,
        1,
        _incremental_alter_configs(CONFIG_GROUP),
        _only_result("responses"),
        allowed=ErrorCode.INVALID_REQUEST,
    ),
    S(ApiKey.DESCRIBE_LOG_DIRS, 0, 4, lambda t: DescribeLogDirsRequest(topics=None), _top_level),
    S(
        ApiKey.CREATE_PARTITIONS,
        0,
        3,
        lambda t: CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=t, count=2, assignments=None)],
            timeout_ms=1000,
            validate_only=False,
        ),
        _only_result("results"),
    ),
    S(
        ApiKey.DELETE_GROUPS,
        0,
        2,
        lambda t: DeleteGroupsRequest(groups_names=[GROUP]),
        _only_result("results"),
    ),
    S(
        ApiKey.OFFSET_DELETE,
        0,
        0,
        lambda t: OffsetDeleteRequest(
            group_id=GROUP,
            topics=[
                OffsetDeleteRequestTopic(
                    name=t, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        ),
        _top_level,
    ),
    S(
        ApiKey.OFFSET_DELETE,
        1,
        0,
        lambda t: OffsetDeleteRequest(
            group_id=GROUP,
            topics=[
                OffsetDeleteRequestTopic(
                    name=t, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        ),
        _partition_code("topics", "partitions"),
    ),
    S(
        ApiKey.DESCRIBE_CLUSTER,
        0,
        1,
        lambda t: DescribeClusterRequest(include_cluster_authorized_operations=True),
        _cluster_operations,
        allowed=GIVEN,
    ),
    S(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        0,
        1,
        lambda t: DescribeClientQuotasRequest(components=[], strict=False),
        _top_level,
    ),
    S(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        0,
        0,
        lambda t: DescribeUserScramCredentialsRequest(users=None),
        _top_level,
    ),
    S(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        0,
        lambda t: AlterUserScramCredentialsRequest(
            deletions=[],
            upsertions=[
                ScramCredentialUpsertion(
                    name="carol", mechanism=1, iterations=4096, salt=b"s", salted_password=b"p"
                )
            ],
        ),
        _only_result("results"),
    ),
]

# Checks in API_ACLS that cannot be met on this broker, and why
NOT_HERE: dict[tuple[ApiKey, int], str] = {
    (ApiKey.PRODUCE, 0): "transactions are not served: a transactional id is always refused "
    "with TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    (ApiKey.INIT_PRODUCER_ID, 0): "transactions are not served: a transactional id is always "
    "refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    (ApiKey.DELETE_TOPICS, 0): "no topic has an id here, so none is deleted by id",
}


# the broker and its ACLs


@dataclass
class Brokers:
    """Fresh brokers, each with topic TOPIC (one record) and group GROUP (an offset)."""

    directory: Path
    made: list[TestBroker] = field(default_factory=list)

    def new(self, authorizer: AclAuthorizer | None) -> TestBroker:
        broker = TestBroker(
            self.directory / str(len(self.made)), {"offsets.topic.num.partitions": "1"}
        )
        self.made.append(broker)
        broker.create_topic(TOPIC)
        assert broker.produce(TOPIC, make_batch([b"v"])).error_code == ErrorCode.NONE
        [committed] = broker.call(ApiKey.OFFSET_COMMIT, 8, _commit(TOPIC)).topics
        assert committed.partitions[0].error_code == ErrorCode.NONE
        broker.ctx.authorizer = authorizer
        return broker


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[Brokers]:
    made = Brokers(tmp_path)
    yield made
    for broker in made.made:
        broker.close()


def _resource_name(check: AclCheck, topic: str) -> str:
    if check.source == Source.CLUSTER:
        return CLUSTER_NAME
    if check.source == Source.ANY_OF_TYPE:
        return topic  # a Write on one topic is Write on some topic
    return {RT.TOPIC: topic, RT.GROUP: GROUP, RT.TRANSACTIONAL_ID: TRANSACTIONAL_ID}[
        check.resource_type
    ]


def _binding(check: AclCheck, topic: str, principal: str = ALICE, name: str = "") -> AclBinding:
    return AclBinding(
        check.resource_type,
        name or _resource_name(check, topic),
        PatternType.LITERAL,
        principal,
        "*",
        check.operation,
        AclPermissionType.ALLOW,
    )


def _covers(granted: AclCheck, wanted: AclCheck, topic: str) -> bool:
    """Would ``granted``'s ACL also allow ``wanted``? (Describe follows from Read, ...)"""
    probe = AclAuthorizer()
    probe.add([_binding(granted, topic)])
    return probe.authorize(
        ALICE, "*", wanted.operation, wanted.resource_type, _resource_name(wanted, topic)
    )


def _alternatives(check: AclCheck) -> list[AclCheck]:
    return [check] if check.otherwise is None else [check, check.otherwise]


def _others(scenario: Scenario, topic: str) -> list[AclBinding]:
    """ALICE's ACLs for every check of the API but the one under test (and none
    that would allow it)."""
    tested = _alternatives(scenario.acl_check)
    granted = []
    for index, check in enumerate(API_ACLS[scenario.api].checks):
        if index == scenario.check:
            continue
        for alternative in _alternatives(check):
            if not any(_covers(alternative, wanted, topic) for wanted in tested):
                granted.append(_binding(alternative, topic))
    return granted


def _secured(*bindings: AclBinding, **options: Any) -> AclAuthorizer:
    authorizer = AclAuthorizer(**options)
    authorizer.add(bindings)
    return authorizer


def _outcome(broker: TestBroker, scenario: Scenario, topic: str) -> tuple[Outcome, Any]:
    response = broker.call(scenario.api, scenario.version, scenario.request(topic), ALICE)
    return scenario.outcome(response, topic), response


# the walk


def test_every_api_has_a_row():
    assert set(API_TABLE) <= set(API_ACLS)


def test_every_check_of_every_served_api_is_walked():
    walked = {(s.api, s.check) for s in SCENARIOS}
    assert not walked & set(NOT_HERE)
    for api in HANDLERS:
        for index, _ in enumerate(API_ACLS[api].checks):
            assert (api, index) in walked | set(NOT_HERE), (ApiKey(api).name, index)
    assert len(walked) == len(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_without_the_acl_the_request_is_denied(brokers, scenario):
    broker = brokers.new(_secured(*_others(scenario, scenario.topic)))
    outcome, _ = _outcome(broker, scenario, scenario.topic)
    assert outcome == scenario.denied


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_with_the_acl_the_request_is_served(brokers, scenario):
    check, topic = scenario.acl_check, scenario.topic
    for alternative in _alternatives(check):
        broker = brokers.new(_secured(*_others(scenario, topic), _binding(alternative, topic)))
        outcome, _ = _outcome(broker, scenario, topic)
        assert outcome == scenario.allowed, alternative


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_a_super_user_needs_no_acl(brokers, scenario):
    broker = brokers.new(_secured(super_users=frozenset({ALICE})))
    assert _outcome(broker, scenario, scenario.topic)[0] == scenario.allowed


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allow_everyone_if_no_acl_found(brokers, scenario):
    """Allowed while no ACL names the resource; once one does (for someone else), denied."""
    topic = scenario.topic
    broker = brokers.new(_secured(allow_everyone_if_no_acl_found=True))
    assert _outcome(broker, scenario, topic)[0] == scenario.allowed
    bob_only = [
        _binding(
            alternative,
            topic,
            BOB,
            WILDCARD_RESOURCE if alternative.source == Source.ANY_OF_TYPE else "",
        )
        for alternative in _alternatives(scenario.acl_check)
    ]
    broker = brokers.new(_secured(*bob_only, allow_everyone_if_no_acl_found=True))
    assert _outcome(broker, scenario, topic)[0] == scenario.denied


TOPIC_SCENARIOS = [
    s
    for s in SCENARIOS
    if s.hides_existence
    and s.acl_check.resource_type == RT.TOPIC
    and s.acl_check.source == Source.REQUEST
]


@pytest.mark.parametrize("scenario", TOPIC_SCENARIOS, ids=str)
def test_a_denied_client_learns_nothing_of_a_topic(brokers, scenario):
    """The whole answer for a topic that exists is the answer for one that does not."""
    answers = {}
    for topic in (TOPIC, MISSING):
        broker = brokers.new(_secured(*_others(scenario, topic)))
        outcome, answer = _outcome(broker, scenario, topic)
        assert outcome == scenario.denied
        # each broker has a cluster id of its own
        answers[topic] = repr(_plain(answer)).replace(broker.ctx.cluster_id, "<cluster id>")
    assert answers[TOPIC].replace(TOPIC, MISSING) == answers[MISSING]


def _plain(value: Any) -> Any:
    """A decoded answer as plain values (record data as bytes), to compare."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


# APIs without checks, and the authorized-operations fields

UNCHECKED = {
    ApiKey.API_VERSIONS: (
        3,
        ApiVersionsRequest(client_software_name="tests", client_software_version="1"),
    ),
    ApiKey.SASL_HANDSHAKE: (1, SaslHandshakeRequest(mechanism="PLAIN")),
    ApiKey.SASL_AUTHENTICATE: (2, SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00secret")),
}


def test_every_api_without_checks_is_walked():
    unchecked = {api for api in HANDLERS if not API_ACLS[api].checks}
    assert unchecked == set(UNCHECKED)


@pytest.mark.parametrize("api", UNCHECKED, ids=lambda api: api.name)
def test_an_api_without_checks_answers_everyone_alike(brokers, api):
    version, request = UNCHECKED[api]
    open_broker = brokers.new(None)
    denying = brokers.new(_secured(_binding(API_ACLS[ApiKey.DESCRIBE_ACLS].checks[0], TOPIC, BOB)))
    assert repr(denying.call(api, version, request, ALICE)) == repr(
        open_broker.call(api, version, request, ALICE)
    )


def _operations(*operations: AclOperation) -> int:
    return operations_bit_field(set(operations))


OPERATIONS = {
    ApiKey.METADATA: (
        12,
        _metadata(include_topic_authorized_operations=True)(TOPIC),
        lambda response: _only(response.topics).topic_authorized_operations,
    ),
    ApiKey.DESCRIBE_GROUPS: (
        5,
        DescribeGroupsRequest(groups=[GROUP], include_authorized_operations=True),
        lambda response: _only(response.groups).authorized_operations,
    ),
}


def test_every_authorized_operations_field_is_walked():
    fields = {api for api in HANDLERS if API_ACLS[api].authorized_operations}
    assert fields == set(OPERATIONS)


@pytest.mark.parametrize("api", OPERATIONS, ids=lambda api: api.name)
def test_authorized_operations(brokers, api):
    [operations_field] = API_ACLS[api].authorized_operations
    resource_type = operations_field.resource_type
    version, request, read = OPERATIONS[api]
    name = {RT.TOPIC: TOPIC, RT.GROUP: GROUP}[resource_type]
    # without an authorizer: every operation the type supports, as Kafka answers
    everything = operations_bit_field(SUPPORTED_OPERATIONS[resource_type])
    assert read(brokers.new(None).call(api, version, request, ALICE)) == everything
    read_acl = AclBinding(
        resource_type, name, PatternType.LITERAL, ALICE, "*", OP.READ, AclPermissionType.ALLOW
    )
    secured = brokers.new(_secured(read_acl))
    assert read(secured.call(api, version, request, ALICE)) == _operations(OP.READ, OP.DESCRIBE)


# answers of older versions


def test_old_versions_carry_the_denial_where_they_can(brokers):
    broker = brokers.new(_secured())
    fetched = broker.call(
        ApiKey.OFFSET_FETCH,
        1,
        OffsetFetchRequest(
            group_id=GROUP, topics=[OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]
        ),
        ALICE,
    )
    partition = _only(_only(fetched.topics).partitions)
    assert (partition.error_code, partition.committed_offset) == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        -1,
    )
    fetched = broker.call(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id=GROUP), ALICE)
    assert (fetched.error_code, fetched.topics) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
    found = broker.call(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key=GROUP), ALICE)
    assert (found.error_code, found.node_id) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, -1)
    dirs = broker.call(ApiKey.DESCRIBE_LOG_DIRS, 1, DescribeLogDirsRequest(topics=None), ALICE)
    assert dirs.results == []
    # Metadata v0's empty list means every topic: the undescribable ones are left out
    listed = broker.call(ApiKey.METADATA, 0, MetadataRequest(topics=[]), ALICE)
    assert listed.topics == []


def test_a_request_asks_once_per_topic(brokers):
    """Many partitions of one topic cost one question, however many partitions."""
    asked = []

    class Counting(AclAuthorizer):
        def authorize(self, *args: Any) -> bool:
            asked.append(args)
            return super().authorize(*args)

    broker = brokers.new(Counting())
    request = fetch_request([(TOPIC, p, 0, 1024) for p in range(5)])
    answer = broker.call(ApiKey.FETCH, 12, request, ALICE)
    codes = {p.error_code for p in _only(answer.responses).partitions}
    assert codes == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert len(asked) == 1
    asked.clear()
    topic_data = produce_request(TOPIC, make_batch([b"v"])).topic_data[0]
    request = produce_request(TOPIC, make_batch([b"v"]))
    request.topic_data[0].partition_data = list(itertools.repeat(topic_data.partition_data[0], 3))
    broker.call(ApiKey.PRODUCE, 9, request, ALICE)
    assert len(asked) == 1


def test_a_fetch_of_denied_topics_alone_does_not_wait(brokers):
    """As in Kafka a denied topic does not end a long poll on others, but a fetch
    with nothing it may read is answered at once, not after max_wait_ms."""
    broker = brokers.new(_secured())
    request = fetch_request([(TOPIC, 0, 1, 1024)], max_wait_ms=60_000, min_bytes=1)

    async def fetch() -> tuple[Any, float]:
        started = trio.current_time()
        answer = await broker.acall(ApiKey.FETCH, 12, request, ALICE)
        return answer, trio.current_time() - started

    answer, waited = run_autojump(fetch)
    partition = _only(_only(answer.responses).partitions)
    assert (partition.error_code, waited) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 0)
