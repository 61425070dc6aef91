"""Metadata: this broker, the cluster id, topics listed and created on demand."""

from __future__ import annotations

import uuid

import pytest

from tests.handlers.support import TestBroker, make_batch
from wirekafka.broker.cluster import BrokerEndpoint
from wirekafka.broker.topics import TopicError
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.storage.cluster_metadata import CLUSTER_METADATA_FILE
from wirekafka.storage.meta_properties import read_meta_properties

NO_TOPIC_ID = uuid.UUID(int=0)


def metadata(broker: TestBroker, version: int, topics: list[str | None] | None, allow: bool = True):
    request = MetadataRequest(
        topics=None
        if topics is None
        else [MetadataRequestTopic(topic_id=NO_TOPIC_ID, name=name) for name in topics],
        allow_auto_topic_creation=allow,
    )
    return broker.call(ApiKey.METADATA, version, request)


def summary(response) -> list[tuple[str | None, int, int]]:
    return [(t.name, t.error_code, len(t.partitions)) for t in response.topics]


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_all_topics_when_topics_is_null(broker, version):
    broker.create_topic("b", 2)
    broker.create_topic("a", 3)
    response = metadata(broker, version, None)
    assert summary(response) == [("a", ErrorCode.NONE, 3), ("b", ErrorCode.NONE, 2)]


def test_all_topics_when_topics_is_empty_at_v0(broker):
    broker.create_topic("b")
    broker.create_topic("a")
    assert summary(metadata(broker, 0, [])) == [("a", 0, 1), ("b", 0, 1)]


@pytest.mark.parametrize("version", [1, 4, 12])
def test_no_topics_when_topics_is_empty_from_v1(broker, version):
    broker.create_topic("a")
    assert metadata(broker, version, []).topics == []


@pytest.mark.parametrize("version", [0, 1, 5, 9, 12])
def test_partitions_are_led_by_this_broker(broker, version):
    broker.create_topic("t", 2)
    [topic] = metadata(broker, version, ["t"]).topics
    assert topic.error_code == ErrorCode.NONE
    assert topic.name == "t"
    assert topic.is_internal is False
    assert [
        (p.error_code, p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes)
        for p in topic.partitions
    ] == [(0, 0, 0, [0], [0]), (0, 1, 0, [0], [0])]


@pytest.mark.parametrize("version", [0, 1, 2, 12])
def test_broker_host_port_controller_and_cluster_id(broker, version):
    response = metadata(broker, version, None if version else [])
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(0, "localhost", 9092)]
    meta = read_meta_properties(broker.directory)
    assert meta is not None
    assert broker.ctx.cluster_id == meta.cluster_id
    assert len(meta.cluster_id) == 22
    if version >= 2:
        assert response.cluster_id == meta.cluster_id
    else:
        assert response.cluster_id is None  # not on the wire before v2
    assert response.controller_id == (0 if version >= 1 else -1)


def test_configured_cluster_id_is_written_and_reported(make_broker):
    broker = make_broker({"cluster.id": "my-cluster-id"})
    meta = read_meta_properties(broker.directory)
    assert meta is not None
    assert meta.cluster_id == "my-cluster-id"
    assert metadata(broker, 12, None).cluster_id == "my-cluster-id"


def test_cluster_id_survives_a_restart(broker):
    first = metadata(broker, 12, None).cluster_id
    broker.restart()
    assert metadata(broker, 12, None).cluster_id == first


@pytest.mark.parametrize("version", [0, 1, 3])
def test_auto_creation_before_v4(make_broker, version):
    broker = make_broker({"num.partitions": "3"})
    assert summary(metadata(broker, version, ["fresh"])) == [("fresh", ErrorCode.NONE, 3)]
    topic = broker.ctx.topics.topic("fresh")
    assert topic is not None
    assert topic.partitions == 3
    assert [broker.log_end("fresh", p) for p in range(3)] == [0, 0, 0]


@pytest.mark.parametrize("version", [4, 9, 12])
def test_auto_creation_when_asked_from_v4(broker, version):
    assert summary(metadata(broker, version, ["fresh"], allow=True)) == [
        ("fresh", ErrorCode.NONE, 1)
    ]
    assert broker.ctx.topics.names() == ["fresh"]


@pytest.mark.parametrize("version", [4, 9, 12])
def test_no_auto_creation_when_not_asked(broker, version):
    assert summary(metadata(broker, version, ["fresh"], allow=False)) == [
        ("fresh", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)
    ]
    assert broker.ctx.topics.topic("fresh") is None
    assert broker.ctx.logs.get_log("fresh", 0) is None


@pytest.mark.parametrize("version", [0, 3, 4, 12])
def test_no_auto_creation_when_disabled(make_broker, version):
    broker = make_broker({"auto.create.topics.enable": "false"})
    assert summary(metadata(broker, version, ["fresh"], allow=True)) == [
        ("fresh", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)
    ]
    assert broker.ctx.topics.topic("fresh") is None
    assert not (broker.directory / "fresh-0").exists()


def test_auto_created_topics_are_in_the_next_listing_and_survive_a_restart(broker):
    metadata(broker, 12, ["fresh"])
    broker.restart()
    assert summary(metadata(broker, 12, None)) == [("fresh", ErrorCode.NONE, 1)]


@pytest.mark.parametrize("name", [".", "..", "a" * 250, "a/b", "a b", "ü", ""])
@pytest.mark.parametrize("version", [1, 12])
def test_invalid_names_are_invalid_topic(broker, version, name):
    response = metadata(broker, version, [name])
    assert summary(response) == [(name, ErrorCode.INVALID_TOPIC_EXCEPTION, 0)]
    assert broker.ctx.topics.names() == []


def test_a_249_character_name_is_fine(broker):
    name = "a" * 249
    assert summary(metadata(broker, 12, [name])) == [(name, ErrorCode.NONE, 1)]


def test_mixed_known_unknown_and_invalid(broker):
    broker.create_topic("known")
    response = metadata(broker, 12, ["known", "bad/name", "unknown", "known"], allow=False)
    assert summary(response) == [
        ("known", ErrorCode.NONE, 1),
        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION, 0),
        ("unknown", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
    ]


# Topics named by id. No topic has an id in wirekafka, so no id is known.

SOME_ID = uuid.UUID("5b2d1e4f-0c3a-4d7e-9f10-2a3b4c5d6e7f")
OTHER_ID = uuid.UUID("00000000-0000-0000-0000-00000000002a")


def metadata_by(broker: TestBroker, version: int, topics: list[tuple[uuid.UUID, str | None]]):
    request = MetadataRequest(
        topics=[MetadataRequestTopic(topic_id=topic_id, name=name) for topic_id, name in topics]
    )
    return broker.call(ApiKey.METADATA, version, request)


def test_a_topic_named_by_id_is_an_unknown_topic_id_from_v12(broker):
    broker.create_topic("known")
    response = metadata_by(broker, 12, [(SOME_ID, None), (OTHER_ID, "known"), (SOME_ID, None)])
    assert [(t.topic_id, t.name, t.error_code, len(t.partitions)) for t in response.topics] == [
        (SOME_ID, None, ErrorCode.UNKNOWN_TOPIC_ID, 0),  # once, though asked for twice
        (OTHER_ID, None, ErrorCode.UNKNOWN_TOPIC_ID, 0),  # an id rules over a name beside it
    ]
    assert [b.node_id for b in response.brokers] == [0]


def test_a_request_naming_a_topic_by_id_is_answered_by_id_alone_as_in_kafka(broker):
    broker.create_topic("known")
    response = metadata_by(broker, 12, [(NO_TOPIC_ID, "known"), (SOME_ID, None)])
    assert [(t.topic_id, t.name, t.error_code) for t in response.topics] == [
        (SOME_ID, None, ErrorCode.UNKNOWN_TOPIC_ID)
    ]


def test_a_null_name_without_an_id_is_an_unknown_topic_id(broker):
    response = metadata(broker, 12, [None])
    assert [(t.topic_id, t.name, t.error_code) for t in response.topics] == [
        (NO_TOPIC_ID, None, ErrorCode.UNKNOWN_TOPIC_ID)
    ]


def test_a_topic_named_by_id_is_never_created(broker):
    metadata_by(broker, 12, [(SOME_ID, None)])
    assert list(broker.ctx.topics.names()) == []


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize(
    "by_id",
    [(SOME_ID, None), (NO_TOPIC_ID, None), (SOME_ID, "named-too")],
    ids=["id", "null-name", "id-and-name"],
)
def test_topic_ids_before_v12_are_an_invalid_request_as_kafka_answers(broker, version, by_id):
    """Kafka refuses a null name or an id below v12 and answers every topic asked
    for with INVALID_REQUEST, a null name as "" (the response cannot hold null), and
    lists no brokers. The response used to fail to encode and close the connection."""
    broker.create_topic("known")
    response = metadata_by(broker, version, [(NO_TOPIC_ID, "known"), by_id])
    topic_id, name = by_id
    assert [(t.topic_id, t.name, t.error_code, t.is_internal) for t in response.topics] == [
        (NO_TOPIC_ID, "known", ErrorCode.INVALID_REQUEST, False),
        (topic_id, name or "", ErrorCode.INVALID_REQUEST, False),
    ]
    assert (response.brokers, response.cluster_id, response.controller_id) == ([], None, -1)
    assert list(broker.ctx.topics.names()) == ["known"]


def test_internal_topic_flag(broker):
    assert broker.ctx.groups.offsets_log.ensure_topic() == ErrorCode.NONE  # the broker's own
    [topic] = metadata(broker, 12, ["__consumer_offsets"]).topics
    assert topic.is_internal is True


def test_partition_dirs_without_metadata_are_adopted(broker):
    broker.create_topic("orphan", 2)
    broker.produce("orphan", make_batch([b"x"]), partition=1)
    broker.close()
    (broker.directory / CLUSTER_METADATA_FILE).unlink()
    broker.restart()
    assert summary(metadata(broker, 12, None)) == [("orphan", ErrorCode.NONE, 2)]
    assert broker.log_end("orphan", 1) == 1


@pytest.mark.parametrize("version", [5, 7, 9, 12])
def test_partitions_give_their_isr_offline_replicas_and_leader_epoch(broker, version):
    broker.create_topic("t", 2)
    [topic] = metadata(broker, version, ["t"]).topics
    assert [
        (p.leader_id, p.replica_nodes, p.isr_nodes, p.offline_replicas, p.leader_epoch)
        for p in topic.partitions
    ] == [(0, [0], [0], [], 0 if version >= 7 else -1)] * 2


class Replicated:
    """Broker 0 of three, broker 2 gone: partition 0 led by 1, partition 1 by
    nobody (its ISR, [2], is dead), partition 2 by 2 still, as a stale state says."""

    def __init__(self, brokers):
        self.live = brokers

    def brokers(self, listener_name=None):
        return self.live

    def controller_id(self):
        return 0

    def leader(self, topic, partition):
        return [1, -1, 2][partition]

    def replicas(self, topic, partition):
        return [[1, 2, 0], [2, 0, 1], [2, 1, 0]][partition]

    def isr(self, topic, partition):
        return [[1, 0], [2], [2, 1, 0]][partition]

    def leader_epoch(self, topic, partition):
        return [3, 4, 5][partition]


def test_a_replicated_partition_names_its_replicas_isr_and_offline_ones(broker):
    broker.create_topic("t", 3)
    broker.ctx.cluster = Replicated([BrokerEndpoint(n, "localhost", 9092 + n) for n in (0, 1)])
    [topic] = metadata(broker, 12, ["t"]).topics
    assert [
        (
            p.error_code,
            p.leader_id,
            p.leader_epoch,
            p.replica_nodes,
            p.isr_nodes,
            p.offline_replicas,
        )
        for p in topic.partitions
    ] == [
        (ErrorCode.NONE, 1, 3, [1, 2, 0], [1, 0], [2]),
        (ErrorCode.LEADER_NOT_AVAILABLE, -1, 4, [2, 0, 1], [2], [2]),
        # a leader that is not a live broker is no leader, as in Kafka's MetadataCache
        (ErrorCode.LEADER_NOT_AVAILABLE, -1, 5, [2, 1, 0], [2, 1, 0], [2]),
    ]


def test_a_topic_another_broker_just_created_is_leader_not_available(broker, monkeypatch):
    """In a ZooKeeper cluster, a topic created through another broker a moment ago
    makes auto-creation here answer TOPIC_ALREADY_EXISTS before this broker's view
    holds it: the client is told to retry, not disconnected."""

    def created_elsewhere(name: str) -> TopicError:
        return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")

    monkeypatch.setattr(broker.ctx.topics, "auto_create", created_elsewhere)
    [topic] = metadata(broker, 9, ["new"]).topics
    assert (topic.name, topic.error_code, topic.partitions) == (
        "new",
        ErrorCode.LEADER_NOT_AVAILABLE,
        [],
    )
