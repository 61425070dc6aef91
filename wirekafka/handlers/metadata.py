"""Metadata: this broker, and the topics asked for (created when allowed).

Internal topics are never created here: the broker creates ``__consumer_offsets``
when a group first needs it, so asking for it before gets
UNKNOWN_TOPIC_OR_PARTITION. An auto-creation that cannot be recorded answers
LEADER_NOT_AVAILABLE, which clients retry (Kafka's answer for a topic whose
creation is not complete).

Topics named by id: wirekafka assigns no topic ids (every topic's is the zero
UUID), so from v12 a topic asked for by id (a null name, or an id that is not
zero) gets UNKNOWN_TOPIC_ID with its id and a null name, as Kafka answers an id
it does not know; as in Kafka, a request naming any topic by id is answered by
id alone, the topics it names by name left out. Versions 10 and 11 carry the
id field but Kafka refuses ids and null names in them
(KafkaApis.handleTopicMetadataRequest throws InvalidRequestException): the
answer is MetadataRequest.getErrorResponse's, INVALID_REQUEST for every topic
asked for, a null name given back as "" (the response cannot hold null before
v12), and no brokers. Apache Kafka 4.3 answers so on the wire, except for a
null name beside the zero id from v12, which it fails on (UNKNOWN_SERVER_ERROR)
and which gets UNKNOWN_TOPIC_ID here.
"""

from __future__ import annotations

from uuid import UUID

from wirekafka.broker.cluster import NO_LEADER
from wirekafka.broker.context import BrokerContext
from wirekafka.broker.topics import INTERNAL_TOPICS, topic_name_error
from wirekafka.handlers.authorization import (
    NOTHING_DENIED,
    authorized_operations,
    cluster_authorized,
    denied_names,
)
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_cluster import AUTHORIZED_OPERATIONS_OMITTED
from wirekafka.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from wirekafka.worker_threads import METADATA, run_blocking

NO_TOPIC_ID = UUID(int=0)  # topic ids declined: clients stay on name-based requests
FIRST_AUTO_CREATE_FLAG_VERSION = 4
FIRST_TOPIC_ID_VERSION = 12  # the first in which Kafka accepts a topic named by id
FIRST_AUTHORIZED_OPERATIONS_VERSION = 8
LAST_CLUSTER_OPERATIONS_VERSION = 10  # later, DescribeCluster carries the cluster's


def _described(ctx: BrokerContext, name: str) -> MetadataResponseTopic:
    """Each partition's leader, leader epoch, replicas, ISR and the replicas whose
    broker is not live. As Kafka's MetadataCache answers, a leader that is -1 or
    not a live broker is LEADER_NOT_AVAILABLE with leader -1 (the rest still
    given, so clients see whom the partition waits for).

    A topic that exists but that this broker does not know yet (created a moment
    ago through another broker of a ZooKeeper cluster, or created here and not
    yet back from ZooKeeper's watch) is LEADER_NOT_AVAILABLE too, which clients
    retry, as Kafka answers for a topic whose partitions have no leader yet."""
    topic = ctx.topics.topic(name)
    if topic is None:
        return _missing(name, ErrorCode.LEADER_NOT_AVAILABLE)
    cluster = ctx.cluster
    live = {broker.node_id for broker in cluster.brokers()}
    partitions = []
    for index in range(topic.partitions):
        leader = cluster.leader(name, index)
        if leader not in live:
            leader = NO_LEADER
        replicas = cluster.replicas(name, index)
        partitions.append(
            MetadataResponsePartition(
                error_code=ErrorCode.NONE
                if leader != NO_LEADER
                else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=index,
                leader_id=leader,
                leader_epoch=cluster.leader_epoch(name, index),
                replica_nodes=replicas,
                isr_nodes=cluster.isr(name, index),
                offline_replicas=[r for r in replicas if r not in live],
            )
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=NO_TOPIC_ID,
        is_internal=name in INTERNAL_TOPICS,
        partitions=partitions,
    )


def _missing(
    name: str | None, code: ErrorCode, topic_id: UUID = NO_TOPIC_ID
) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=name in INTERNAL_TOPICS,
        partitions=[],
    )


def _denied(name: str) -> MetadataResponseTopic:
    """A topic named that the principal may not Describe: Kafka's answer, the same
    whether it exists or not (not even whether it is internal)."""
    return MetadataResponseTopic(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        name=name,
        topic_id=NO_TOPIC_ID,
        is_internal=False,
        partitions=[],
    )


def _named_by_id(topic: MetadataRequestTopic) -> bool:
    return topic.name is None or topic.topic_id != NO_TOPIC_ID


def _refused_topic_ids(body: MetadataRequest) -> MetadataResponse:
    """Kafka's answer to topic ids or null names before v12: INVALID_REQUEST for
    every topic asked for, and nothing else."""
    assert body.topics is not None
    return MetadataResponse(
        topics=[
            MetadataResponseTopic(
                error_code=ErrorCode.INVALID_REQUEST,
                name=topic.name or "",
                topic_id=topic.topic_id,
                is_internal=False,
                partitions=[],
            )
            for topic in body.topics
        ]
    )


def _cluster_authorized_operations(
    ctx: BrokerContext, request: Request, body: MetadataRequest
) -> int:
    """v8-10 with include_cluster_authorized_operations: 0 without Describe on the
    cluster, else the bit field (as Kafka); the field's default otherwise."""
    versions = range(FIRST_AUTHORIZED_OPERATIONS_VERSION, LAST_CLUSTER_OPERATIONS_VERSION + 1)
    if request.version not in versions or not body.include_cluster_authorized_operations:
        return AUTHORIZED_OPERATIONS_OMITTED
    if not cluster_authorized(ctx, request, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(ctx, request, ResourceType.CLUSTER, CLUSTER_NAME)


async def handle_metadata(ctx: BrokerContext, request: Request) -> MetadataResponse:
    body: MetadataRequest = request.body
    version = request.version
    asked: list[MetadataRequestTopic] | None = body.topics
    if version == 0 and not asked:
        asked = None  # v0's empty list means every topic
    by_id = [] if asked is None else [t for t in asked if _named_by_id(t)]
    if by_id and version < FIRST_TOPIC_ID_VERSION:
        return _refused_topic_ids(body)
    may_create = ctx.config.auto_create_topics_enable and (
        version < FIRST_AUTO_CREATE_FLAG_VERSION or body.allow_auto_topic_creation
    )
    if asked is None:
        names = list(ctx.topics.names())
    elif by_id:
        names = []  # answered by id alone
    else:
        names = [t.name for t in asked if t.name is not None]
    names = list(dict.fromkeys(names))
    # Topics the principal may not Describe: left out of "every topic"; a topic
    # named answers TOPIC_AUTHORIZATION_FAILED without being looked up, so that
    # whether it exists is not disclosed.
    undescribable = denied_names(ctx, request, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    if asked is None and undescribable:
        names = [name for name in names if name not in undescribable]
    # Auto-creation needs Create on the cluster or on the topic, asked only when a
    # describable topic named is missing; without it the topic is not created.
    uncreatable: frozenset[str] = NOTHING_DENIED
    if ctx.authorizer is not None and asked is not None and may_create:
        missing = [n for n in names if n not in undescribable and ctx.topics.topic(n) is None]
        if missing and not cluster_authorized(ctx, request, AclOperation.CREATE):
            uncreatable = denied_names(
                ctx, request, AclOperation.CREATE, ResourceType.TOPIC, missing
            )
    with_operations = (
        version >= FIRST_AUTHORIZED_OPERATIONS_VERSION and body.include_topic_authorized_operations
    )
    # No topic has an id here, so none is known by one.
    topics = [
        _missing(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id)
        for topic_id in dict.fromkeys(t.topic_id for t in by_id)
    ]
    for name in names:
        if name in undescribable:
            topics.append(_denied(name))
            continue
        if name in uncreatable:
            topics.append(_missing(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        answer = await _answer(ctx, name, may_create)
        if with_operations:
            answer.topic_authorized_operations = authorized_operations(
                ctx, request, ResourceType.TOPIC, name
            )
        topics.append(answer)
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port)
            for b in ctx.cluster.brokers(request.listener_name or None)
        ],
        cluster_id=ctx.cluster_id,
        controller_id=ctx.cluster.controller_id(),
        topics=topics,
        cluster_authorized_operations=_cluster_authorized_operations(ctx, request, body),
    )


async def _answer(ctx: BrokerContext, name: str, may_create: bool) -> MetadataResponseTopic:
    """A describable topic's answer, created first when it is missing and may be."""
    if ctx.topics.topic(name) is None:
        invalid = topic_name_error(name)
        if invalid is not None:
            return _missing(name, invalid.code)
        if not may_create or name in INTERNAL_TOPICS:
            return _missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        failed = await run_blocking(METADATA, ctx.topics.auto_create, name)
        # As Kafka's auto-creation does, the topic gets the error creating it gave:
        # past max.broker.partitions, POLICY_VIOLATION, which clients do not retry
        # (it lasts until topics are deleted), and the broker's log says why.
        if failed is not None and failed.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            code = failed.code
            if code == ErrorCode.KAFKA_STORAGE_ERROR:  # not recorded: the client retries
                code = ErrorCode.LEADER_NOT_AVAILABLE
            return _missing(name, code)
    return _described(ctx, name)
