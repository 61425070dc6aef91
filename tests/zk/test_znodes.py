"""Kafka's znodes, one declaration each: paths, the bytes Kafka writes, the JSON every
Kafka version wrote, and bad bytes refused with an error that names the znode.

Samples marked "Kafka" are copied from ZkData.scala's documentation, from the Kafka
wiki's "Kafka data structures in Zookeeper", or from a live Kafka 2.x/3.x cluster."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirekafka.zk.znodes import (
    PERSISTENT_ZK_PATHS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerRegistration,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ConsumerOffset,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    EndPoint,
    PartitionState,
    ProducerIdBlock,
    ProducerIdBlockZNode,
    SupportedVersionRange,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZnodeFormatError,
    desanitize_entity_name,
    sanitize_entity_name,
)

TS = 1700000000123
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1) as Kafka's Uuid.toString writes it

DATA_ZNODES: list[Any] = [
    BrokerIdZNode,
    TopicZNode,
    TopicPartitionStateZNode,
    ControllerZNode,
    ControllerEpochZNode,
    ConfigEntityZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConsumerOffset,
    ClusterIdZNode,
    ProducerIdBlockZNode,
]


def _plaintext(host: str | None = "localhost", port: int = 9092) -> EndPoint:
    return EndPoint("PLAINTEXT", "PLAINTEXT", host, port)


# -- paths


def test_paths_as_kafka_names_them():
    assert BrokerIdsZNode.path == "/brokers/ids"
    assert BrokerIdZNode.path(3) == "/brokers/ids/3"
    assert TopicsZNode.path == "/brokers/topics"
    assert TopicZNode.path("t") == "/brokers/topics/t"
    assert TopicPartitionsZNode.path("t") == "/brokers/topics/t/partitions"
    assert TopicPartitionZNode.path("t", 2) == "/brokers/topics/t/partitions/2"
    assert TopicPartitionStateZNode.path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert ControllerZNode.path == "/controller"
    assert ControllerEpochZNode.path == "/controller_epoch"
    assert ConfigEntityTypeZNode.path("topics") == "/config/topics"
    assert ConfigEntityZNode.path("topics", "t") == "/config/topics/t"
    assert ConfigEntityZNode.path("brokers", "0") == "/config/brokers/0"
    assert ConfigEntityChangeNotificationZNode.path == "/config/changes"
    assert DeleteTopicsZNode.path == "/admin/delete_topics"
    assert DeleteTopicsTopicZNode.path("t") == "/admin/delete_topics/t"
    assert ConsumerOffset.path("g", "t", 0) == "/consumers/g/offsets/t/0"
    assert ClusterIdZNode.path == "/cluster/id"
    assert ProducerIdBlockZNode.path == "/latest_producer_id_block"


def test_persistent_paths_as_kafka_lists_them():
    assert PERSISTENT_ZK_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )


@pytest.mark.parametrize("bad", ["", "a/b", ".", ".."])
def test_a_name_that_cannot_be_a_znode_is_refused(bad):
    with pytest.raises(ValueError, match="cannot be a znode name"):
        TopicZNode.path(bad)
    with pytest.raises(ValueError, match="cannot be a znode name"):
        ConsumerOffset.path(bad, "t", 0)
    with pytest.raises(ValueError, match="cannot be a znode name"):
        ConfigEntityZNode.path("topics", bad)


def test_numbers_in_paths_must_be_ints():
    with pytest.raises(ValueError):
        BrokerIdZNode.path(True)
    with pytest.raises(ValueError):
        TopicPartitionZNode.path("t", "0")


# -- the bytes this broker writes (Kafka's current version of each), and back


def test_broker_id_znode_writes_version_5_in_kafkas_key_order():
    registration = BrokerRegistration(endpoints=(_plaintext(),), timestamp_ms=TS)
    data = BrokerIdZNode.encode(registration)
    assert data == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"localhost","version":5,"timestamp":"1700000000123"}'
    )
    assert BrokerIdZNode.decode(data) == registration


def test_broker_id_znode_with_every_field():
    registration = BrokerRegistration(
        endpoints=(
            EndPoint("REPLICATION", "SSL", "h1", 9093),
            EndPoint("CLIENT", "PLAINTEXT", "h1", 9092),
        ),
        jmx_port=9999,
        rack="dc1",
        timestamp_ms=TS,
        features={"metadata.version": SupportedVersionRange(1, 7)},
    )
    data = BrokerIdZNode.encode(registration)
    assert json.loads(data) == {
        "version": 5,
        "host": "h1",  # the first PLAINTEXT endpoint's, for old clients
        "port": 9092,
        "jmx_port": 9999,
        "timestamp": "1700000000123",
        "endpoints": ["REPLICATION://h1:9093", "CLIENT://h1:9092"],
        "rack": "dc1",
        "listener_security_protocol_map": {"REPLICATION": "SSL", "CLIENT": "PLAINTEXT"},
        "features": {"metadata.version": {"min_version": 1, "max_version": 7}},
    }
    assert BrokerIdZNode.decode(data) == registration


def test_broker_id_znode_without_a_plaintext_listener_has_null_host_and_port_minus_one():
    registration = BrokerRegistration(
        endpoints=(EndPoint("SSL", "SSL", "h", 9093),), timestamp_ms=TS
    )
    obj = json.loads(BrokerIdZNode.encode(registration))
    assert obj["host"] is None and obj["port"] == -1  # both keys there: pykafka reads them
    assert BrokerIdZNode.decode(BrokerIdZNode.encode(registration)) == registration


def test_broker_id_znode_ipv6_and_wildcard_endpoints():
    registration = BrokerRegistration(
        endpoints=(_plaintext("::1"), EndPoint("INTERNAL", "SASL_SSL", None, 9094)),
        timestamp_ms=TS,
    )
    obj = json.loads(BrokerIdZNode.encode(registration))
    assert obj["endpoints"] == ["PLAINTEXT://[::1]:9092", "INTERNAL://:9094"]
    assert obj["host"] == "::1"
    assert BrokerIdZNode.decode(BrokerIdZNode.encode(registration)) == registration


def test_broker_id_znode_timestamp_defaults_to_now():
    obj = json.loads(BrokerIdZNode.encode(BrokerRegistration((_plaintext(),))))
    assert obj["timestamp"].isdigit() and int(obj["timestamp"]) > TS


def test_broker_id_znode_refuses_what_it_cannot_write():
    with pytest.raises(ValueError, match="security protocol"):
        BrokerIdZNode.encode(BrokerRegistration((EndPoint("X", "TLS", "h", 1),)))
    with pytest.raises(ValueError, match="port"):
        BrokerIdZNode.encode(BrokerRegistration((_plaintext(port=2**31),)))


def test_topic_znode_writes_version_3():
    assignment = TopicAssignment(partitions={1: (2, 0), 0: (1, 2)}, topic_id=TOPIC_ID)
    data = TopicZNode.encode(assignment)
    assert data == (
        b'{"partitions":{"0":[1,2],"1":[2,0]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    assert TopicZNode.decode(data) == TopicAssignment({0: (1, 2), 1: (2, 0)}, TOPIC_ID)


def test_topic_znode_without_topic_id_and_under_reassignment():
    assignment = TopicAssignment(
        partitions={0: (1, 2, 3), 1: (2,)},
        adding_replicas={0: (3,), 1: ()},
        removing_replicas={0: (1,)},
    )
    data = TopicZNode.encode(assignment)
    assert data == (
        b'{"partitions":{"0":[1,2,3],"1":[2]},"adding_replicas":{"0":[3]},'
        b'"removing_replicas":{"0":[1]},"version":3}'
    )
    assert TopicZNode.decode(data) == TopicAssignment(
        {0: (1, 2, 3), 1: (2,)}, adding_replicas={0: (3,)}, removing_replicas={0: (1,)}
    )


def test_topic_znode_refuses_what_it_cannot_write():
    with pytest.raises(ValueError):
        TopicZNode.encode(TopicAssignment({-1: (0,)}))
    with pytest.raises(ValueError, match="topic_id"):
        TopicZNode.encode(TopicAssignment({0: (0,)}, topic_id="nope"))


def test_topic_partition_state_znode_writes_version_1():
    state = PartitionState(leader=0, leader_epoch=0, isr=(0,), controller_epoch=1)
    data = TopicPartitionStateZNode.encode(state)
    assert data == b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'
    assert TopicPartitionStateZNode.decode(data) == state


def test_topic_partition_state_znode_recovering_and_leaderless():
    recovering = PartitionState(2, 5, (2,), 3, leader_recovery_state=1)
    data = TopicPartitionStateZNode.encode(recovering)
    assert data == (
        b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":5,"isr":[2],'
        b'"leader_recovery_state":1}'
    )
    assert TopicPartitionStateZNode.decode(data) == recovering
    leaderless = PartitionState(-1, 7, (), 4)
    assert (
        TopicPartitionStateZNode.decode(TopicPartitionStateZNode.encode(leaderless)) == leaderless
    )
    with pytest.raises(ValueError, match="leader_recovery_state"):
        TopicPartitionStateZNode.encode(PartitionState(0, 0, (0,), 0, leader_recovery_state=2))


def test_controller_znode_writes_version_2():
    data = ControllerZNode.encode(0, timestamp_ms=TS)
    assert (
        data == b'{"version":2,"brokerid":0,"timestamp":"1700000000123","kraftControllerEpoch":-1}'
    )
    assert ControllerZNode.decode(data) == 0
    assert ControllerZNode.decode(ControllerZNode.encode(7)) == 7


def test_controller_epoch_znode():
    assert ControllerEpochZNode.encode(7) == b"7"
    assert ControllerEpochZNode.decode(b"7") == 7
    assert ControllerEpochZNode.decode(b"+7") == 7  # Integer.parseInt takes a sign
    with pytest.raises(ValueError):
        ControllerEpochZNode.encode(2**31)


def test_config_entity_znode():
    config = {"cleanup.policy": "compact", "retention.ms": "1000"}
    data = ConfigEntityZNode.encode(config)
    assert data == b'{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}'
    assert ConfigEntityZNode.decode(data) == config
    assert ConfigEntityZNode.encode({}) == b'{"version":1,"config":{}}'
    assert ConfigEntityZNode.decode(ConfigEntityZNode.encode({})) == {}


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("alice", "alice"),
        ("a.b-c_d", "a.b-c_d"),
        ("CN=x, O=y", "CN%3Dx%2C%20O%3Dy"),  # a space is %20, never +
        ("a*b~c", "a%2Ab%7Ec"),  # * and ~ encoded, as Java's URLEncoder and Sanitizer do
        ("a/b+c%d", "a%2Fb%2Bc%25d"),
        ("zo\u00eb", "zo%C3%AB"),  # UTF-8, upper-case hex
    ],
)
def test_entity_names_are_sanitized_as_kafka_does(name, sanitized):
    assert sanitize_entity_name(name) == sanitized
    assert desanitize_entity_name(sanitized) == name
    assert ConfigEntityZNode.path("users", sanitized) == f"/config/users/{sanitized}"


def test_desanitizing_reads_plus_as_a_space_and_refuses_broken_escapes():
    assert desanitize_entity_name("a+b") == "a b"  # URLDecoder's reading
    for bad in ("a%", "a%2", "a%zz", "%FF"):
        with pytest.raises(ValueError):
            desanitize_entity_name(bad)


def test_config_change_notification_writes_version_2():
    data = ConfigEntityChangeNotificationSequenceZNode.encode("users", "CN%3Dx")
    assert data == b'{"version":2,"entity_path":"users/CN%3Dx"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(data) == "users/CN%3Dx"
    assert (
        ConfigEntityChangeNotificationSequenceZNode.path_prefix == "/config/changes/config_change_"
    )
    version_1 = b'{"version":1,"entity_type":"topics","entity_name":"t"}'
    assert ConfigEntityChangeNotificationSequenceZNode.decode(version_1) == "topics/t"
    with pytest.raises(ValueError):
        ConfigEntityChangeNotificationSequenceZNode.encode("users", "a/b")


def test_config_entity_znode_writes_non_ascii_as_raw_utf8():
    data = ConfigEntityZNode.encode({"k": "caf\u00e9"})
    assert data == '{"version":1,"config":{"k":"caf\u00e9"}}'.encode()
    assert ConfigEntityZNode.decode(data) == {"k": "caf\u00e9"}


def test_config_entity_znode_values_are_strings():
    with pytest.raises(ValueError):
        ConfigEntityZNode.encode({"retention.ms": 1000})


def test_consumer_offset():
    assert ConsumerOffset.encode(42) == b"42"
    assert ConsumerOffset.encode(2**40) == b"1099511627776"
    assert ConsumerOffset.decode(b"1099511627776") == 2**40
    assert ConsumerOffset.decode(b"-1") == -1
    assert ConsumerOffset.decode(bytearray(b"5")) == ConsumerOffset.decode(memoryview(b"5")) == 5


def test_cluster_id_znode():
    data = ClusterIdZNode.encode("MkU3OEVBNTcwNTJENDM2Qk")
    assert data == b'{"version":"1","id":"MkU3OEVBNTcwNTJENDM2Qk"}'
    assert ClusterIdZNode.decode(data) == "MkU3OEVBNTcwNTJENDM2Qk"


def test_producer_id_block_znode():
    block = ProducerIdBlock.first(broker=0)
    data = ProducerIdBlockZNode.encode(block)
    assert data == b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'
    assert ProducerIdBlockZNode.decode(data) == block
    after = block.next_block(broker=2)
    assert ProducerIdBlockZNode.encode(after) == (
        b'{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
    )
    assert ProducerIdBlockZNode.decode(ProducerIdBlockZNode.encode(after)) == after
    with pytest.raises(ValueError):
        ProducerIdBlockZNode.encode(ProducerIdBlock(0, 10, 9))


# -- what Kafka wrote, every version


KAFKA_SAMPLES: list[tuple[Any, bytes, object]] = [
    (  # ZkData.scala, version 1
        BrokerIdZNode,
        b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}',
        BrokerRegistration((_plaintext(),), jmx_port=9999, timestamp_ms=2233345666),
    ),
    (  # ZkData.scala, version 2: listeners named after their protocol
        BrokerIdZNode,
        b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"]}',
        BrokerRegistration(
            (_plaintext("host1"), EndPoint("SSL", "SSL", "host1", 9093)),
            jmx_port=9999,
            timestamp_ms=2233345666,
        ),
    ),
    (  # ZkData.scala, version 3
        BrokerIdZNode,
        b'{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"],"rack":"dc1"}',
        BrokerRegistration(
            (_plaintext("host1"), EndPoint("SSL", "SSL", "host1", 9093)),
            jmx_port=9999,
            rack="dc1",
            timestamp_ms=2233345666,
        ),
    ),
    (  # a Kafka 2.x broker, version 4
        BrokerIdZNode,
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://zjj101:9092"],"jmx_port":-1,"host":"zjj101",'
        b'"timestamp":"1614570663881","port":9092,"version":4}',
        BrokerRegistration((_plaintext("zjj101"),), timestamp_ms=1614570663881),
    ),
    (  # version 4 with named listeners; Kafka takes a protocol in any case
        BrokerIdZNode,
        b'{"version":4,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"1",'
        b'"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":null,'
        b'"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"sasl_ssl"}}',
        BrokerRegistration(
            (
                EndPoint("CLIENT", "PLAINTEXT", "host1", 9092),
                EndPoint("REPLICATION", "SASL_SSL", "host1", 9093),
            ),
            jmx_port=9999,
            timestamp_ms=1,
        ),
    ),
    (  # ZkData.scala, version 5 (features with first_active_version, KIP-584)
        BrokerIdZNode,
        b'{"version":5,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],"rack":"dc1",'
        b'"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"SSL"},'
        b'"features": {"feature": {"min_version":1, "first_active_version":2, "max_version":3}}}',
        BrokerRegistration(
            (
                EndPoint("CLIENT", "PLAINTEXT", "host1", 9092),
                EndPoint("REPLICATION", "SSL", "host1", 9093),
            ),
            jmx_port=9999,
            rack="dc1",
            timestamp_ms=2233345666,
            features={"feature": SupportedVersionRange(1, 3)},
        ),
    ),
    (  # a Kafka 3 broker, version 5
        BrokerIdZNode,
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://kafka-1:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"kafka-1","version":5,"timestamp":"1638205238590"}',
        BrokerRegistration((_plaintext("kafka-1"),), timestamp_ms=1638205238590),
    ),
    (  # the Kafka wiki, version 1
        TopicZNode,
        b'{ "version": 1, "partitions": {"0": [0, 1, 3] } }',
        TopicAssignment({0: (0, 1, 3)}),
    ),
    (  # Kafka 2.4-2.7, version 2: adding replicas of a partition not listed are ignored
        TopicZNode,
        b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[2],"5":[9]},'
        b'"removing_replicas":{}}',
        TopicAssignment({0: (1, 2)}, adding_replicas={0: (2,)}),
    ),
    (  # Kafka 2.8+, version 3
        TopicZNode,
        b'{"partitions":{"0":[0]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","adding_replicas":{},'
        b'"removing_replicas":{},"version":3}',
        TopicAssignment({0: (0,)}, TOPIC_ID),
    ),
    (TopicZNode, b"{}", TopicAssignment({})),
    (  # the Kafka wiki
        TopicPartitionStateZNode,
        b'{ "version": 1, "isr": [0,1], "leader": 0, "controller_epoch": 1, "leader_epoch": 0 }',
        PartitionState(0, 0, (0, 1), 1),
    ),
    (  # a Kafka 2.x cluster
        TopicPartitionStateZNode,
        b'{"controller_epoch":33,"leader":102,"version":1,"leader_epoch":8,"isr":[102,103]}',
        PartitionState(102, 8, (102, 103), 33),
    ),
    (  # Kafka 3.2+ (KIP-704)
        TopicPartitionStateZNode,
        b'{"controller_epoch":4,"leader":-1,"version":1,"leader_epoch":7,"isr":[],'
        b'"leader_recovery_state":1}',
        PartitionState(-1, 7, (), 4, leader_recovery_state=1),
    ),
    (  # Kafka 2.x, version 1
        ControllerZNode,
        b'{"version":1,"brokerid":101,"timestamp":"1614570663255"}',
        101,
    ),
    (  # Kafka 3.4+ in migration: a KRaft controller holds /controller
        ControllerZNode,
        b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}',
        3000,
    ),
    (ControllerEpochZNode, b"33", 33),
    (  # the topic-config example of Kafka's docs (max.message.bytes=64000, flush.messages=1)
        ConfigEntityZNode,
        b'{"version":1,"config":{"max.message.bytes":"64000","flush.messages":"1"}}',
        {"max.message.bytes": "64000", "flush.messages": "1"},
    ),
    (ConfigEntityZNode, b'{"version":1}', {}),  # Kafka reads no config as empty
    (ConfigEntityZNode, b'{"config":null}', {}),
    (ConsumerOffset, b"42", 42),
    (ClusterIdZNode, b'{"version":"1","id":"MkU3OEVBNTcwNTJENDM2Qk"}', "MkU3OEVBNTcwNTJENDM2Qk"),
    (
        ProducerIdBlockZNode,
        b'{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}',
        ProducerIdBlock(1, 1000, 1999),
    ),
]


@pytest.mark.parametrize(
    ("znode", "data", "expected"),
    KAFKA_SAMPLES,
    ids=[f"{znode.__name__}-{i}" for i, (znode, _, _) in enumerate(KAFKA_SAMPLES)],
)
def test_decode_what_kafka_writes(znode, data, expected):
    assert znode.decode(data) == expected


def test_what_kafka_3_writes_is_what_this_broker_writes():
    """A Kafka 3 broker's registration, decoded and encoded again, is the same bytes."""
    data = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://kafka-1:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"kafka-1","version":5,"timestamp":"1638205238590"}'
    )
    assert BrokerIdZNode.encode(BrokerIdZNode.decode(data)) == data


def test_an_old_topic_znode_is_written_back_in_the_current_version():
    old = TopicZNode.decode(b'{"version":1,"partitions":{"0":[1]}}')
    assert json.loads(TopicZNode.encode(old))["version"] == 3


def test_pykafka_reads_the_topic_znode():
    data = TopicZNode.encode(TopicAssignment({0: (0,), 1: (0,)}, topic_id=TOPIC_ID))
    partitions = json.loads(data.decode("utf-8"))["partitions"]  # as pykafka does
    assert {int(p): r for p, r in partitions.items()} == {0: [0], 1: [0]}


# -- bad bytes: ZnodeFormatError naming the znode and what is wrong

MALFORMED: list[tuple[Any, bytes, str]] = [
    (BrokerIdZNode, b'{"host":"h","port":1,"jmx_port":-1}', "the key 'version' is missing"),
    (BrokerIdZNode, b'{"version":5,"endpoints":[]}', "'jmx_port' is missing"),
    (BrokerIdZNode, b'{"version":0,"jmx_port":-1}', "unsupported version 0"),
    (
        BrokerIdZNode,
        b'{"version":"5","jmx_port":-1,"endpoints":[]}',
        "'version' must be a 32-bit integer",
    ),
    (
        BrokerIdZNode,
        b'{"version":5.0,"jmx_port":-1,"endpoints":[]}',
        "'version' must be a 32-bit integer",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":true,"endpoints":[]}',
        "'jmx_port' must be a 32-bit integer",
    ),
    (BrokerIdZNode, b'{"version":5,"jmx_port":2147483648,"endpoints":[]}', "32-bit"),
    (BrokerIdZNode, b'{"version":1,"jmx_port":-1,"port":1}', "'host' is missing"),
    (BrokerIdZNode, b'{"version":1,"jmx_port":-1,"host":"h","port":"1"}', "'port' must be"),
    (BrokerIdZNode, b'{"version":5,"jmx_port":-1}', "'endpoints' is missing"),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":"PLAINTEXT://h:1"}',
        "'endpoints' must be an array",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[1]}',
        "'endpoints[0]' must be a string",
    ),
    (BrokerIdZNode, b'{"version":5,"jmx_port":-1,"endpoints":["h:1"]}', "unable to parse 'h:1'"),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:x"]}',
        "unable to parse",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:99999999999"]}',
        "out of range",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}',
        "no security protocol defined for listener CLIENT",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"],'
        b'"listener_security_protocol_map":{"PLAINTEXT":"TLS"}}',
        "unknown security protocol 'TLS'",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[],"listener_security_protocol_map":[]}',
        "'listener_security_protocol_map' must be a JSON object",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[],"rack":3}',
        "'rack' must be a string",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[],"timestamp":"soon"}',
        "'timestamp'",
    ),
    (BrokerIdZNode, b'{"version":5,"jmx_port":-1,"endpoints":[],"timestamp":[]}', "'timestamp'"),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"max_version":1}}}',
        "'features.f.min_version' is missing",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":2,"max_version":1}}}',
        "min_version <= max_version",
    ),
    (
        BrokerIdZNode,
        b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":1}}',
        "'features.f' must be a JSON object",
    ),
    (TopicZNode, b'{"partitions":[]}', "'partitions' must be a JSON object"),
    (TopicZNode, b'{"partitions":{"x":[1]}}', "partition 'x' must be a decimal integer"),
    (TopicZNode, b'{"partitions":{"-1":[1]}}', "out of range"),
    (TopicZNode, b'{"partitions":{"0":1}}', "'partitions.0' must be an array of integers"),
    (TopicZNode, b'{"partitions":{"0":[1.5]}}', "'partitions.0[0]' must be a 32-bit integer"),
    (TopicZNode, b'{"partitions":{"0":["1"]}}', "'partitions.0[0]'"),
    (TopicZNode, b'{"partitions":{"0":[1]},"adding_replicas":{"0":"x"}}', "'adding_replicas.0'"),
    (TopicZNode, b'{"partitions":{},"removing_replicas":1}', "'removing_replicas' must be"),
    (TopicZNode, b'{"partitions":{},"topic_id":"not a uuid"}', "topic_id"),
    (TopicZNode, b'{"partitions":{},"topic_id":"AAAA"}', "not a base64 Uuid"),
    (
        TopicZNode,
        b'{"partitions":{},"topic_id":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}',
        "not a base64 Uuid",
    ),
    (TopicZNode, b'{"partitions":{},"topic_id":7}', "'topic_id' must be a string"),
    (
        TopicPartitionStateZNode,
        b'{"leader_epoch":0,"isr":[0],"controller_epoch":1}',
        "'leader' is missing",
    ),
    (
        TopicPartitionStateZNode,
        b'{"leader":0,"isr":[0],"controller_epoch":1}',
        "'leader_epoch' is missing",
    ),
    (
        TopicPartitionStateZNode,
        b'{"leader":0,"leader_epoch":0,"controller_epoch":1}',
        "'isr' is missing",
    ),
    (
        TopicPartitionStateZNode,
        b'{"leader":0,"leader_epoch":0,"isr":[0]}',
        "'controller_epoch' is missing",
    ),
    (
        TopicPartitionStateZNode,
        b'{"leader":"0","leader_epoch":0,"isr":[0],"controller_epoch":1}',
        "'leader' must be",
    ),
    (
        TopicPartitionStateZNode,
        b'{"leader":0,"leader_epoch":0,"isr":0,"controller_epoch":1}',
        "'isr' must be an array",
    ),
    (
        TopicPartitionStateZNode,
        b'{"leader":0,"leader_epoch":0,"isr":[0],"controller_epoch":1,"leader_recovery_state":2}',
        "unknown leader_recovery_state 2",
    ),
    (ControllerZNode, b'{"version":1}', "'brokerid' is missing"),
    (ControllerZNode, b'{"brokerid":"1"}', "'brokerid' must be a 32-bit integer"),
    (ControllerEpochZNode, b"x", "the epoch must be a decimal integer"),
    (ControllerEpochZNode, b" 7", "decimal integer"),
    (ControllerEpochZNode, b"7\n", "decimal integer"),
    (ControllerEpochZNode, b"1_0", "decimal integer"),
    (ControllerEpochZNode, b"2147483648", "out of range"),
    (ControllerEpochZNode, b"\xd9\xa3", "decimal integer"),  # an Arabic-Indic digit
    (
        ConfigEntityZNode,
        b'{"config":{"retention.ms":1000}}',
        "'config.retention.ms' must be a string",
    ),
    (ConfigEntityZNode, b'{"config":[]}', "'config' must be a JSON object"),
    (ConfigEntityZNode, b'{"config":{"a":null}}', "'config.a' must be a string"),
    (ConsumerOffset, b"4.2", "the offset must be a decimal integer"),
    (ConsumerOffset, b"0x10", "decimal integer"),
    (ConsumerOffset, b"9223372036854775808", "out of range"),
    (ConsumerOffset, b"{}", "decimal integer"),
    (ClusterIdZNode, b'{"version":"1"}', "'id' is missing"),
    (ClusterIdZNode, b'{"id":5}', "'id' must be a string"),
    (
        ProducerIdBlockZNode,
        b'{"version":1,"broker":0,"block_start":0,"block_end":"999"}',
        "'block_start' must be a string",
    ),
    (ProducerIdBlockZNode, b'{"version":1,"broker":0,"block_start":"0"}', "'block_end' is missing"),
    (
        ProducerIdBlockZNode,
        b'{"version":1,"block_start":"0","block_end":"999"}',
        "'broker' is missing",
    ),
    (
        ProducerIdBlockZNode,
        b'{"version":1,"broker":0,"block_start":"0","block_end":"9223372036854775808"}',
        "out of range",
    ),
    (
        ProducerIdBlockZNode,
        b'{"version":1,"broker":0,"block_start":"0","block_end":"9000000000000"}',
        "does not fit an int",
    ),
    (
        ProducerIdBlockZNode,
        b'{"version":1,"broker":0,"block_start":"a","block_end":"999"}',
        "'block_start' must be a decimal integer",
    ),
]


@pytest.mark.parametrize(
    ("znode", "data", "message"),
    MALFORMED,
    ids=[f"{znode.__name__}-{i}" for i, (znode, _, _) in enumerate(MALFORMED)],
)
def test_malformed_json_is_refused_naming_the_znode(znode, data, message):
    with pytest.raises(ZnodeFormatError) as info:
        znode.decode(data)
    assert str(info.value).startswith(f"{znode.__name__}: ")
    assert message in str(info.value)


GARBAGE: list[Any] = [
    b"",
    b"{",
    b"null",
    b"[]",
    b'"x"',
    b"1.5",
    b"\xff\xfe",
    b'{"a":NaN}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"version":' + b"9" * 5000 + b"}",
    b"\x00",
    None,
    "text",
    12,
]


@pytest.mark.parametrize("znode", DATA_ZNODES, ids=lambda znode: znode.__name__)
@pytest.mark.parametrize("data", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_raises_only_znode_format_error_naming_the_znode(znode, data):
    with pytest.raises(ZnodeFormatError, match=f"^{znode.__name__}: "):
        znode.decode(data)


def test_garbage_errors_say_what_is_wrong():
    with pytest.raises(ZnodeFormatError, match="TopicZNode: the znode has no data"):
        TopicZNode.decode(b"")
    with pytest.raises(ZnodeFormatError, match="TopicZNode: not JSON"):
        TopicZNode.decode(b"{")
    with pytest.raises(ZnodeFormatError, match="TopicZNode: expected a JSON object, got an array"):
        TopicZNode.decode(b"[]")
    with pytest.raises(ZnodeFormatError, match="TopicZNode: not UTF-8"):
        TopicZNode.decode(b"\xff\xfe")


def test_znode_format_error_is_a_value_error():
    assert issubclass(ZnodeFormatError, ValueError)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "version",
        "host",
        "port",
        "jmx_port",
        "endpoints",
        "rack",
        "features",
        "timestamp",
        "listener_security_protocol_map",
        "partitions",
        "adding_replicas",
        "removing_replicas",
        "topic_id",
        "leader",
        "leader_epoch",
        "isr",
        "controller_epoch",
        "leader_recovery_state",
        "brokerid",
        "kraftControllerEpoch",
        "config",
        "id",
        "broker",
        "block_start",
        "block_end",
    ]
)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.fuzz
@FUZZ
@given(data=st.binary(max_size=64))
def test_fuzz_bytes(data):
    for znode in DATA_ZNODES:
        with contextlib.suppress(ZnodeFormatError):
            znode.decode(data)


@pytest.mark.fuzz
@FUZZ
@given(obj=st.dictionaries(KEYS, JSON_VALUES, max_size=8))
def test_fuzz_json_objects(obj):
    data = json.dumps(obj).encode()
    for znode in DATA_ZNODES:
        with contextlib.suppress(ZnodeFormatError):
            znode.decode(data)
