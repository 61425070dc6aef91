"""``__consumer_offsets`` belongs to the broker.

kafka-python's admin client cannot create it (not even validate_only), delete
it, or delete its records: the broker answers Kafka's error codes, naming the
topic. A Metadata request for it on a fresh broker does not create it; once a
consumer group forms it exists, made by the broker with
``offsets.topic.num.partitions`` partitions and ``cleanup.policy=compact``. A
``__consumer_offsets`` stored without compaction (as a client could create it
before) gets compaction back at the next start, keeping its partition count.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import (
    BrokerResponseError,
    CommitFailedError,
    InvalidRequestError,
    InvalidTopicError,
)
from kafka.structs import OffsetAndMetadata

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.protocol_client import ProtocolClient
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.storage.cluster_metadata import CLUSTER_METADATA_FILE

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 4
SETTINGS = {
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
    "group.initial.rebalance.delay.ms": "0",
}
TIMEOUT_S = 30.0


def admin_client(broker: Broker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)


def metadata_for(broker: Broker, topic: str) -> tuple[int, bool, int]:
    """(error code, is_internal, partition count) of a Metadata v12 request that
    allows auto-creation."""
    with ProtocolClient(broker.host or "", broker.port or 0) as client:
        request = MetadataRequest(
            topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
        )
        [answer] = client.request(ApiKey.METADATA, 12, request).topics
    return answer.error_code, answer.is_internal, len(answer.partitions)


def topic_config(broker: Broker, topic: str, key: str) -> str:
    admin = admin_client(broker)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    (entries,) = described.values()
    return entries[topic][key]["value"]


def form_a_group(broker: Broker, topic: str, group: str) -> None:
    """A kafka-python member subscribes, is assigned the topic's partition, and commits.

    On a loaded machine the member may lead a first generation before its metadata
    has the topic (it assigns nothing, then rejoins once a metadata refresh shows the
    partition: hence the short metadata age), or commit while it rejoins (the commit
    fails): it polls and commits again until the commit is there. Each poll may take
    long: it returns with the record once the partition is assigned, and kafka-python
    3.0.12 loses the SyncGroup answer that comes after a poll timed out mid-join (the
    member then stays without an assignment)."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send(topic, b"one").get(timeout=TIMEOUT_S)
    producer.close()
    partition = TopicPartition(topic, 0)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=1000,
    )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            assert time.monotonic() < deadline, "the group did not form and commit"
            consumer.poll(timeout_ms=int(TIMEOUT_S * 1000))
            if partition not in consumer.assignment():
                continue
            try:
                consumer.commit({partition: OffsetAndMetadata(1, "", -1)})
            except CommitFailedError:  # a rebalance came between
                continue
            if consumer.committed(partition) == 1:
                return
    finally:
        consumer.close()


def test_clients_cannot_create_delete_or_trim_the_offsets_topic(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=SETTINGS)
    admin = admin_client(broker)
    try:
        for validate_only in (False, True):
            with pytest.raises(InvalidRequestError, match=f"internal topic {OFFSETS_TOPIC}"):
                admin.create_topics([NewTopic(OFFSETS_TOPIC, 1, 1)], validate_only=validate_only)
        assert OFFSETS_TOPIC not in admin.list_topics()

        topic = topic_name()
        admin.create_topics([NewTopic(topic, 1, 1)])
        form_a_group(broker, topic, "trim-group")
        assert OFFSETS_TOPIC in admin.list_topics()

        with pytest.raises(
            InvalidTopicError, match=f"Cannot delete internal topic {OFFSETS_TOPIC}"
        ):
            admin.delete_topics([OFFSETS_TOPIC])
        with pytest.raises(InvalidTopicError, match=f"topic {OFFSETS_TOPIC} partition 0"):
            admin.delete_records({TopicPartition(OFFSETS_TOPIC, 0): -1})
        every = {TopicPartition(OFFSETS_TOPIC, p): -1 for p in range(OFFSETS_PARTITIONS)}
        with pytest.raises(BrokerResponseError) as refused:
            admin.delete_records(every)
        assert str(refused.value).count("InvalidTopicError") == OFFSETS_PARTITIONS
        [described] = admin.describe_topics([OFFSETS_TOPIC])
        assert (described["error_code"], len(described["partitions"])) == (0, OFFSETS_PARTITIONS)
    finally:
        admin.close()
    # the committed offset is still there: nothing of the topic went
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="trim-group")
    try:
        assert consumer.committed(TopicPartition(topic, 0)) == 1
    finally:
        consumer.close()

    # the raw answer, with Kafka's message for its own internal topic
    with ProtocolClient(broker.host or "", broker.port or 0) as client:
        request = CreateTopicsRequest(
            topics=[CreatableTopic(name=OFFSETS_TOPIC, num_partitions=1, replication_factor=1)],
            timeout_ms=1000,
            validate_only=True,
        )
        [result] = client.request(ApiKey.CREATE_TOPICS, 7, request).topics
    assert (result.error_code, result.error_message) == (
        ErrorCode.INVALID_REQUEST,
        f"Creation of internal topic {OFFSETS_TOPIC} is prohibited: the broker creates it",
    )
    broker.assert_running()


def test_metadata_does_not_create_the_offsets_topic_a_group_does(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=SETTINGS)
    for _ in range(2):  # asked again: still not there
        assert metadata_for(broker, OFFSETS_TOPIC) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            True,
            0,
        )
    assert not list(broker.data_dir.glob(f"{OFFSETS_TOPIC}-*"))

    topic = topic_name()
    form_a_group(broker, topic, "forming-group")
    assert metadata_for(broker, OFFSETS_TOPIC) == (ErrorCode.NONE, True, OFFSETS_PARTITIONS)
    assert topic_config(broker, OFFSETS_TOPIC, "cleanup.policy") == "compact"
    assert len(list(broker.data_dir.glob(f"{OFFSETS_TOPIC}-*"))) == OFFSETS_PARTITIONS


def test_an_offsets_topic_stored_without_compaction_gets_it_back_at_startup(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=SETTINGS)
    topic = topic_name()
    form_a_group(broker, topic, "repaired-group")
    broker.stop()
    # what a client-made topic looked like: no configs of its own, so the broker's
    # cleanup.policy=delete
    path = broker.data_dir / CLUSTER_METADATA_FILE
    stored = json.loads(path.read_text())
    stored["topics"][OFFSETS_TOPIC]["configs"] = {}
    path.write_text(json.dumps(stored))
    broker.overrides["offsets.topic.num.partitions"] = "7"  # the topic's own count rules
    broker.start()

    assert "restoring compaction, keeping its 4 partitions" in broker.stderr_text()
    assert topic_config(broker, OFFSETS_TOPIC, "cleanup.policy") == "compact"
    assert metadata_for(broker, OFFSETS_TOPIC) == (ErrorCode.NONE, True, OFFSETS_PARTITIONS)
    assert json.loads(path.read_text())["topics"][OFFSETS_TOPIC]["configs"]["cleanup.policy"] == (
        "compact"
    )
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="repaired-group")
    try:
        assert consumer.committed(TopicPartition(topic, 0)) == 1
    finally:
        consumer.close()
    broker.stop()
