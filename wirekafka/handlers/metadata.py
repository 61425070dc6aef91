"""Metadata: this broker, and the topics asked for (created when allowed).

Internal topics are never created here: the broker creates ``__consumer_offsets``
when a group first needs it, so asking for it before gets
UNKNOWN_TOPIC_OR_PARTITION. An auto-creation that cannot be recorded answers
LEADER_NOT_AVAILABLE, which clients retry (Kafka's answer for a topic whose
creation is not complete).
"""

from __future__ import annotations

from uuid import UUID

from wirekafka.broker.cluster import NO_LEADER
from wirekafka.broker.context import BrokerContext
from wirekafka.broker.topics import INTERNAL_TOPICS, topic_name_error
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from wirekafka.protocol.rpc import Request
from wirekafka.worker_threads import METADATA, run_blocking

NO_TOPIC_ID = UUID(int=0)  # topic ids declined: clients stay on name-based requests
FIRST_AUTO_CREATE_FLAG_VERSION = 4


def _described(ctx: BrokerContext, name: str) -> MetadataResponseTopic:
    topic = ctx.topics.topic(name)
    assert topic is not None
    cluster = ctx.cluster
    partitions = []
    for index in range(topic.partitions):
        leader = cluster.leader(name, index)
        partitions.append(
            MetadataResponsePartition(
                error_code=ErrorCode.NONE
                if leader != NO_LEADER
                else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=index,
                leader_id=leader,
                replica_nodes=cluster.replicas(name, index),
                isr_nodes=[leader] if leader != NO_LEADER else [],
            )
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=NO_TOPIC_ID,
        is_internal=name in INTERNAL_TOPICS,
        partitions=partitions,
    )


def _missing(name: str | None, code: ErrorCode) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=code,
        name=name,
        topic_id=NO_TOPIC_ID,
        is_internal=name in INTERNAL_TOPICS,
        partitions=[],
    )


async def handle_metadata(ctx: BrokerContext, request: Request) -> MetadataResponse:
    body: MetadataRequest = request.body
    version = request.version
    if body.topics is None or (version == 0 and not body.topics):
        names: list[str | None] = list(ctx.topics.names())
    else:
        names = [t.name for t in body.topics]
    may_create = ctx.config.auto_create_topics_enable and (
        version < FIRST_AUTO_CREATE_FLAG_VERSION or body.allow_auto_topic_creation
    )
    topics = []
    for name in dict.fromkeys(names):
        if name is None:
            topics.append(_missing(None, ErrorCode.UNKNOWN_TOPIC_ID))
            continue
        if ctx.topics.topic(name) is None:
            invalid = topic_name_error(name)
            if invalid is not None:
                topics.append(_missing(name, invalid.code))
                continue
            if not may_create or name in INTERNAL_TOPICS:
                topics.append(_missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            failed = await run_blocking(METADATA, ctx.topics.auto_create, name)
            # As Kafka's auto-creation does, the topic gets the error creating it gave:
            # past max.broker.partitions, POLICY_VIOLATION, which clients do not retry
            # (it lasts until topics are deleted), and the broker's log says why.
            if failed is not None and failed.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                code = failed.code
                if code == ErrorCode.KAFKA_STORAGE_ERROR:  # not recorded: the client retries
                    code = ErrorCode.LEADER_NOT_AVAILABLE
                topics.append(_missing(name, code))
                continue
        topics.append(_described(ctx, name))
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port)
            for b in ctx.cluster.brokers()
        ],
        cluster_id=ctx.cluster_id,
        controller_id=ctx.cluster.controller_id(),
        topics=topics,
    )
