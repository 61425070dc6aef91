"""Kafka's znode JSON, as ZkData.scala (Kafka 2.8-3.x) writes and reads it."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirekafka.zk import znodes as z
from wirekafka.zk.znodes import ZnodeFormatError

TS = 1700000000123
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid(0, 1) as Kafka's Uuid.toString writes it


# -- paths


def test_paths():
    assert z.broker_path(3) == "/brokers/ids/3"
    assert z.topic_path("t") == "/brokers/topics/t"
    assert z.topic_partitions_path("t") == "/brokers/topics/t/partitions"
    assert z.partition_path("t", 2) == "/brokers/topics/t/partitions/2"
    assert z.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert z.CONTROLLER_PATH == "/controller"
    assert z.CONTROLLER_EPOCH_PATH == "/controller_epoch"
    assert z.topic_config_path("t") == "/config/topics/t"
    assert z.config_entity_path("brokers", "0") == "/config/brokers/0"
    assert z.CONFIG_CHANGES_PATH == "/config/changes"
    assert z.config_change_path() == "/config/changes/config_change_"
    assert z.config_change_path("0000000007") == "/config/changes/config_change_0000000007"
    assert z.delete_topic_path("t") == "/admin/delete_topics/t"
    assert z.consumer_offset_path("g", "t", 0) == "/consumers/g/offsets/t/0"
    assert z.CLUSTER_ID_PATH == "/cluster/id"
    assert z.PRODUCER_ID_BLOCK_PATH == "/latest_producer_id_block"


def test_persistent_paths_as_kafka_lists_them():
    assert z.PERSISTENT_ZK_PATHS == (
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


def test_persistent_paths_with_parents_first():
    paths = list(z.iter_persistent_paths())
    assert len(paths) == len(set(paths))
    for path in paths:
        parent = path.rsplit("/", 1)[0]
        if parent:
            assert paths.index(parent) < paths.index(path)
    assert set(z.PERSISTENT_ZK_PATHS) <= set(paths)
    assert {"/brokers", "/config", "/admin"} <= set(paths)


@pytest.mark.parametrize("bad", ["", "a/b", ".", ".."])
def test_bad_path_segments(bad):
    with pytest.raises(ValueError):
        z.topic_path(bad)
    with pytest.raises(ValueError):
        z.consumer_offset_path(bad, "t", 0)


def test_bad_int_segments():
    with pytest.raises(ValueError):
        z.broker_path(True)
    with pytest.raises(ValueError):
        z.partition_path("t", "0")


# -- /brokers/ids/<id>


def _plaintext(host="localhost", port=9092, name="PLAINTEXT"):
    return z.EndPoint(name, "PLAINTEXT", host, port)


def test_broker_v5_exact():
    reg = z.BrokerRegistration(endpoints=(_plaintext(),), timestamp_ms=TS)
    assert z.encode_broker(reg) == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"localhost","version":5,"timestamp":"1700000000123"}'
    )


def test_broker_v5_types_as_kafka_writes_them():
    reg = z.BrokerRegistration(
        endpoints=(
            z.EndPoint("REPLICATION", "SSL", "h1", 9093),
            z.EndPoint("CLIENT", "PLAINTEXT", "h1", 9092),
        ),
        jmx_port=9999,
        rack="dc1",
        timestamp_ms=TS,
        features={"metadata.version": z.SupportedVersionRange(1, 7)},
    )
    obj = json.loads(z.encode_broker(reg))
    assert obj == {
        "version": 5,
        "host": "h1",
        "port": 9092,
        "jmx_port": 9999,
        "timestamp": "1700000000123",
        "endpoints": ["REPLICATION://h1:9093", "CLIENT://h1:9092"],
        "rack": "dc1",
        "listener_security_protocol_map": {"REPLICATION": "SSL", "CLIENT": "PLAINTEXT"},
        "features": {"metadata.version": {"min_version": 1, "max_version": 7}},
    }
    assert isinstance(obj["timestamp"], str)
    assert isinstance(obj["port"], int) and isinstance(obj["jmx_port"], int)
    assert z.decode_broker(z.encode_broker(reg)) == reg


def test_broker_without_plaintext_listener_has_null_host_and_port_minus_one():
    reg = z.BrokerRegistration(endpoints=(z.EndPoint("SSL", "SSL", "h", 9093),), timestamp_ms=TS)
    obj = json.loads(z.encode_broker(reg))
    assert obj["host"] is None and obj["port"] == -1
    assert "host" in obj and "port" in obj  # pykafka reads both keys
    assert z.decode_broker(z.encode_broker(reg)) == reg


def test_broker_ipv6_and_wildcard_endpoints():
    reg = z.BrokerRegistration(
        endpoints=(_plaintext("::1", 9092), z.EndPoint("INTERNAL", "SASL_SSL", None, 9094)),
        timestamp_ms=TS,
    )
    obj = json.loads(z.encode_broker(reg))
    assert obj["endpoints"] == ["PLAINTEXT://[::1]:9092", "INTERNAL://:9094"]
    assert obj["host"] == "::1"
    assert z.decode_broker(z.encode_broker(reg)) == reg


def test_broker_rack_only_from_version_3_and_map_from_4_and_features_from_5():
    reg = z.BrokerRegistration(endpoints=(_plaintext(),), rack="r", timestamp_ms=TS, version=2)
    assert z.encode_broker(reg) == (
        b'{"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"localhost","version":2,"timestamp":"1700000000123"}'
    )
    three = json.loads(z.encode_broker(z.BrokerRegistration((_plaintext(),), rack="r", version=3)))
    assert three["rack"] == "r" and "listener_security_protocol_map" not in three
    four = json.loads(z.encode_broker(z.BrokerRegistration((_plaintext(),), version=4)))
    assert "listener_security_protocol_map" in four and "features" not in four


def test_broker_timestamp_defaults_to_now():
    obj = json.loads(z.encode_broker(z.BrokerRegistration((_plaintext(),))))
    assert obj["timestamp"].isdigit() and int(obj["timestamp"]) > TS


def test_decode_broker_v1_reads_host_and_port():
    data = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    reg = z.decode_broker(data)
    assert reg.version == 1
    assert reg.endpoints == (z.EndPoint("PLAINTEXT", "PLAINTEXT", "localhost", 9092),)
    assert (reg.host, reg.port, reg.jmx_port, reg.timestamp_ms) == (
        "localhost",
        9092,
        9999,
        2233345666,
    )


def test_decode_broker_v2_default_protocol_map():
    data = (
        b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"]}'
    )
    reg = z.decode_broker(data)
    assert reg.endpoints == (
        z.EndPoint("PLAINTEXT", "PLAINTEXT", "host1", 9092),
        z.EndPoint("SSL", "SSL", "host1", 9093),
    )
    assert reg.rack is None and reg.features == {}


def test_decode_broker_v3_rack_v4_listener_names():
    v3 = z.decode_broker(
        b'{"version":3,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"1",'
        b'"endpoints":["PLAINTEXT://host1:9092"],"rack":"dc1"}'
    )
    assert v3.rack == "dc1"
    v4 = z.decode_broker(
        b'{"version":4,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"1",'
        b'"endpoints":["CLIENT://host1:9092","REPLICATION://host1:9093"],"rack":null,'
        b'"listener_security_protocol_map":{"CLIENT":"PLAINTEXT","REPLICATION":"sasl_ssl"}}'
    )
    assert v4.endpoints == (
        z.EndPoint("CLIENT", "PLAINTEXT", "host1", 9092),
        z.EndPoint("REPLICATION", "SASL_SSL", "host1", 9093),
    )
    assert v4.rack is None


def test_decode_broker_as_kafka_3_writes_it():
    data = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://kafka-1:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"kafka-1","version":5,"timestamp":"1638205238590"}'
    )
    reg = z.decode_broker(data)
    assert reg == z.BrokerRegistration(
        endpoints=(z.EndPoint("PLAINTEXT", "PLAINTEXT", "kafka-1", 9092),),
        timestamp_ms=1638205238590,
    )
    assert z.encode_broker(reg) == data


def test_decode_broker_lowercase_listener_is_normalised():
    reg = z.decode_broker(b'{"version":2,"jmx_port":-1,"endpoints":["plaintext://h:1"]}')
    assert reg.endpoints == (z.EndPoint("PLAINTEXT", "PLAINTEXT", "h", 1),)
    assert reg.timestamp_ms is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"host":"h","port":1,"jmx_port":-1}', "'version' is missing"),
        (b'{"version":5,"endpoints":[]}', "'jmx_port' is missing"),
        (b'{"version":0,"jmx_port":-1}', "unsupported version"),
        (b'{"version":"5","jmx_port":-1,"endpoints":[]}', "'version' must be a 32-bit integer"),
        (b'{"version":5.0,"jmx_port":-1,"endpoints":[]}', "'version' must be a 32-bit integer"),
        (b'{"version":5,"jmx_port":true,"endpoints":[]}', "'jmx_port' must be a 32-bit integer"),
        (b'{"version":5,"jmx_port":2147483648,"endpoints":[]}', "32-bit"),
        (b'{"version":1,"jmx_port":-1,"port":1}', "'host' is missing"),
        (b'{"version":1,"jmx_port":-1,"host":"h","port":"1"}', "'port' must be"),
        (b'{"version":5,"jmx_port":-1}', "'endpoints' is missing"),
        (b'{"version":5,"jmx_port":-1,"endpoints":"PLAINTEXT://h:1"}', "'endpoints' must be"),
        (b'{"version":5,"jmx_port":-1,"endpoints":[1]}', "endpoints[0]"),
        (b'{"version":5,"jmx_port":-1,"endpoints":["h:1"]}', "unable to parse"),
        (b'{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:x"]}', "unable to parse"),
        (b'{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:99999999999"]}', "out of range"),
        (b'{"version":5,"jmx_port":-1,"endpoints":["CLIENT://h:1"]}', "no security protocol"),
        (
            b'{"version":5,"jmx_port":-1,"endpoints":["PLAINTEXT://h:1"],'
            b'"listener_security_protocol_map":{"PLAINTEXT":"TLS"}}',
            "unknown security protocol",
        ),
        (
            b'{"version":5,"jmx_port":-1,"endpoints":[],"listener_security_protocol_map":[]}',
            "must be a JSON object",
        ),
        (b'{"version":5,"jmx_port":-1,"endpoints":[],"rack":3}', "'rack' must be a string"),
        (b'{"version":5,"jmx_port":-1,"endpoints":[],"timestamp":"soon"}', "timestamp"),
        (b'{"version":5,"jmx_port":-1,"endpoints":[],"timestamp":[]}', "timestamp"),
        (
            b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"max_version":1}}}',
            "min_version",
        ),
        (
            b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":{"min_version":2,"max_version":1}}}',
            "min_version <= max_version",
        ),
        (b'{"version":5,"jmx_port":-1,"endpoints":[],"features":{"f":1}}', "features.f"),
    ],
)
def test_decode_broker_malformed(data, message):
    with pytest.raises(ZnodeFormatError, match="broker registration") as info:
        z.decode_broker(data)
    assert message in str(info.value)


# -- /brokers/topics/<topic>


def test_topic_assignment_v3_exact():
    assignment = z.TopicAssignment(partitions={1: (2, 0), 0: (1, 2)}, topic_id=TOPIC_ID)
    assert z.encode_topic_assignment(assignment) == (
        b'{"partitions":{"0":[1,2],"1":[2,0]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )


def test_topic_assignment_v3_without_topic_id_and_with_reassignment():
    assignment = z.TopicAssignment(
        partitions={0: (1, 2, 3)}, adding_replicas={0: (3,)}, removing_replicas={0: (1,)}
    )
    data = z.encode_topic_assignment(assignment)
    assert data == (
        b'{"partitions":{"0":[1,2,3]},"adding_replicas":{"0":[3]},'
        b'"removing_replicas":{"0":[1]},"version":3}'
    )
    assert z.decode_topic_assignment(data) == assignment


def test_topic_assignment_v1_is_what_design_asks_at_minimum():
    assignment = z.TopicAssignment(partitions={0: (0,)}, topic_id=TOPIC_ID, version=1)
    assert z.encode_topic_assignment(assignment) == b'{"partitions":{"0":[0]},"version":1}'
    two = z.TopicAssignment(partitions={0: (0,)}, topic_id=TOPIC_ID, version=2)
    assert json.loads(z.encode_topic_assignment(two)) == {
        "version": 2,
        "partitions": {"0": [0]},
        "adding_replicas": {},
        "removing_replicas": {},
    }


def test_topic_assignment_v3_is_readable_as_pykafka_reads_it():
    data = z.encode_topic_assignment(z.TopicAssignment({0: (0,), 1: (0,)}, topic_id=TOPIC_ID))
    partitions = json.loads(data.decode("utf-8"))["partitions"]
    assert {int(p): r for p, r in partitions.items()} == {0: [0], 1: [0]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}',
            z.TopicAssignment({0: (1, 2), 1: (2, 1)}, version=1),
        ),
        (
            b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[2],"5":[9]},"removing_replicas":{}}',
            z.TopicAssignment({0: (1, 2)}, adding_replicas={0: (2,)}, version=2),
        ),
        (
            b'{"partitions":{"0":[0]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","adding_replicas":{},"removing_replicas":{},"version":3}',
            z.TopicAssignment({0: (0,)}, topic_id=TOPIC_ID),
        ),
        (b'{"version":1}', z.TopicAssignment({}, version=1)),
        (b"{}", z.TopicAssignment({}, version=None)),
    ],
)
def test_decode_topic_assignment_every_version(data, expected):
    assert z.decode_topic_assignment(data) == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"partitions":[]}', "'partitions' must be a JSON object"),
        (b'{"partitions":{"x":[1]}}', "partition key 'x'"),
        (b'{"partitions":{"-1":[1]}}', "negative"),
        (b'{"partitions":{"0":1}}', "partitions.0"),
        (b'{"partitions":{"0":[1.5]}}', "partitions.0[0]"),
        (b'{"partitions":{"0":["1"]}}', "partitions.0[0]"),
        (b'{"partitions":{"0":[1]},"adding_replicas":{"0":"x"}}', "adding_replicas.0"),
        (b'{"partitions":{},"removing_replicas":1}', "'removing_replicas' must be"),
        (b'{"partitions":{},"topic_id":"not a uuid"}', "topic_id"),
        (b'{"partitions":{},"topic_id":"AAAA"}', "16 bytes"),
        (b'{"partitions":{},"topic_id":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}', "too long"),
        (b'{"partitions":{},"topic_id":7}', "'topic_id' must be a string"),
        (b'{"partitions":{},"version":"3"}', "'version'"),
    ],
)
def test_decode_topic_assignment_malformed(data, message):
    with pytest.raises(ZnodeFormatError, match="topic assignment") as info:
        z.decode_topic_assignment(data)
    assert message in str(info.value)


def test_encode_topic_assignment_rejects_bad_input():
    with pytest.raises(ValueError):
        z.encode_topic_assignment(z.TopicAssignment({-1: (0,)}))
    with pytest.raises(ValueError):
        z.encode_topic_assignment(z.TopicAssignment({0: (0,)}, topic_id="nope"))


# -- /brokers/topics/<topic>/partitions/<p>/state


def test_partition_state_exact():
    state = z.PartitionState(leader=0, leader_epoch=0, isr=(0,), controller_epoch=1)
    assert (
        z.encode_partition_state(state)
        == b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}'
    )
    assert z.decode_partition_state(z.encode_partition_state(state)) == state


def test_partition_state_recovering():
    state = z.PartitionState(
        leader=2, leader_epoch=5, isr=(2,), controller_epoch=3, leader_recovery_state=1
    )
    data = z.encode_partition_state(state)
    assert data == (
        b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":5,"isr":[2],'
        b'"leader_recovery_state":1}'
    )
    assert z.decode_partition_state(data) == state


def test_partition_state_no_leader():
    data = b'{"controller_epoch":4,"leader":-1,"version":1,"leader_epoch":7,"isr":[]}'
    assert z.decode_partition_state(data) == z.PartitionState(-1, 7, (), 4)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"leader_epoch":0,"isr":[0],"controller_epoch":1}', "'leader' is missing"),
        (b'{"leader":0,"isr":[0],"controller_epoch":1}', "'leader_epoch' is missing"),
        (b'{"leader":0,"leader_epoch":0,"controller_epoch":1}', "'isr' is missing"),
        (b'{"leader":0,"leader_epoch":0,"isr":[0]}', "'controller_epoch' is missing"),
        (b'{"leader":"0","leader_epoch":0,"isr":[0],"controller_epoch":1}', "'leader'"),
        (b'{"leader":0,"leader_epoch":0,"isr":0,"controller_epoch":1}', "'isr' must be an array"),
        (
            b'{"leader":0,"leader_epoch":0,"isr":[0],"controller_epoch":1,"leader_recovery_state":2}',
            "leader_recovery_state",
        ),
    ],
)
def test_decode_partition_state_malformed(data, message):
    with pytest.raises(ZnodeFormatError, match="partition state") as info:
        z.decode_partition_state(data)
    assert message in str(info.value)


# -- /controller, /controller_epoch


def test_controller_v2_exact():
    data = z.encode_controller(z.ControllerRegistration(broker_id=0, timestamp_ms=TS))
    assert (
        data == b'{"version":2,"brokerid":0,"timestamp":"1700000000123","kraftControllerEpoch":-1}'
    )
    assert z.decode_controller(data) == z.ControllerRegistration(0, TS, -1, 2)


def test_controller_v1_exact():
    data = z.encode_controller(z.ControllerRegistration(1, TS, None, version=1))
    assert data == b'{"version":1,"brokerid":1,"timestamp":"1700000000123"}'
    assert z.decode_controller(data) == z.ControllerRegistration(1, TS, None, 1)


def test_decode_controller_kraft():
    data = b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":5}'
    assert z.decode_controller(data).kraft_controller_epoch == 5


@pytest.mark.parametrize(
    "data",
    [b'{"version":1}', b'{"brokerid":"1"}', b'{"brokerid":1,"kraftControllerEpoch":"x"}', b"[1]"],
)
def test_decode_controller_malformed(data):
    with pytest.raises(ZnodeFormatError, match="controller registration"):
        z.decode_controller(data)


def test_controller_epoch():
    assert z.encode_controller_epoch(7) == b"7"
    assert z.decode_controller_epoch(b"7") == 7
    assert z.decode_controller_epoch(b"+7") == 7  # Integer.parseInt takes a sign


@pytest.mark.parametrize(
    "data", [b"", b"x", b" 7", b"7\n", b"1_0", b"2147483648", b"\xff", b"\xd9\xa3"]
)
def test_controller_epoch_malformed(data):
    with pytest.raises(ZnodeFormatError, match="controller epoch"):
        z.decode_controller_epoch(data)


# -- /config/<type>/<name>, /config/changes


def test_entity_config_exact():
    config = z.EntityConfig({"cleanup.policy": "compact", "retention.ms": "1000"})
    data = z.encode_entity_config(config)
    assert data == b'{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}'
    assert z.decode_entity_config(data) == config
    assert z.encode_entity_config(z.EntityConfig()) == b'{"version":1,"config":{}}'


def test_entity_config_lenient_as_kafka():
    assert z.decode_entity_config(b'{"version":1}') == z.EntityConfig({})
    assert z.decode_entity_config(b'{"config":null}') == z.EntityConfig({})


def test_entity_config_non_ascii_is_raw_utf8():
    data = z.encode_entity_config(z.EntityConfig({"k": "caf\u00e9"}))
    assert data == '{"version":1,"config":{"k":"caf\u00e9"}}'.encode()
    assert z.decode_entity_config(data).config == {"k": "caf\u00e9"}


@pytest.mark.parametrize(
    "data", [b'{"config":{"retention.ms":1000}}', b'{"config":[]}', b'{"config":{"a":null}}']
)
def test_entity_config_malformed(data):
    with pytest.raises(ZnodeFormatError, match="entity config"):
        z.decode_entity_config(data)


def test_encode_entity_config_rejects_non_strings():
    with pytest.raises(ValueError):
        z.encode_entity_config(z.EntityConfig({"retention.ms": 1000}))


def test_config_change_notification():
    change = z.ConfigChangeNotification("topics", "foo")
    data = z.encode_config_change(change)
    assert data == b'{"version":2,"entity_path":"topics/foo"}'
    assert z.decode_config_change(data) == change
    assert z.decode_config_change(
        b'{"version":1,"entity_type":"clients","entity_name":"c"}'
    ) == z.ConfigChangeNotification("clients", "c")
    nested = z.decode_config_change(b'{"version":2,"entity_path":"users/u/clients/c"}')
    assert nested == z.ConfigChangeNotification("users", "u/clients/c")


@pytest.mark.parametrize(
    "data",
    [
        b'{"entity_path":"topics/foo"}',
        b'{"version":3,"entity_path":"topics/foo"}',
        b'{"version":2}',
        b'{"version":2,"entity_path":"topics"}',
        b'{"version":1,"entity_type":"brokers","entity_name":"0"}',
        b'{"version":1,"entity_type":"topics"}',
    ],
)
def test_config_change_malformed(data):
    with pytest.raises(ZnodeFormatError, match="config change notification"):
        z.decode_config_change(data)


# -- /consumers/<group>/offsets/<topic>/<p>


def test_consumer_offset():
    assert z.encode_consumer_offset(42) == b"42"
    assert z.encode_consumer_offset(2**40) == b"1099511627776"
    assert z.decode_consumer_offset(b"1099511627776") == 2**40
    assert z.decode_consumer_offset(b"-1") == -1


@pytest.mark.parametrize("data", [b"", b"4.2", b"0x10", b"9223372036854775808", b"{}"])
def test_consumer_offset_malformed(data):
    with pytest.raises(ZnodeFormatError, match="consumer offset"):
        z.decode_consumer_offset(data)


# -- /cluster/id


def test_cluster_id_exact():
    data = z.encode_cluster_id(z.ClusterId("MkU3OEVBNTcwNTJENDM2Qk"))
    assert data == b'{"version":"1","id":"MkU3OEVBNTcwNTJENDM2Qk"}'
    assert z.decode_cluster_id(data) == z.ClusterId("MkU3OEVBNTcwNTJENDM2Qk", "1")


@pytest.mark.parametrize("data", [b'{"version":"1"}', b'{"id":5}', b'{"id":"x","version":[]}'])
def test_cluster_id_malformed(data):
    with pytest.raises(ZnodeFormatError, match="cluster id"):
        z.decode_cluster_id(data)


# -- /latest_producer_id_block


def test_producer_id_block_exact():
    block = z.ProducerIdBlock.first(broker=0)
    data = z.encode_producer_id_block(block)
    assert data == b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'
    assert z.decode_producer_id_block(data) == block
    assert block.size == 1000
    after = block.next_block(broker=2)
    assert z.encode_producer_id_block(after) == (
        b'{"version":1,"broker":2,"block_start":"1000","block_end":"1999"}'
    )


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":1,"broker":0,"block_start":0,"block_end":"999"}',
        b'{"version":1,"broker":0,"block_start":"0"}',
        b'{"version":1,"block_start":"0","block_end":"999"}',
        b'{"version":1,"broker":0,"block_start":"0","block_end":"9223372036854775808"}',
        b'{"version":1,"broker":0,"block_start":"0","block_end":"9000000000000"}',
        b'{"version":1,"broker":0,"block_start":"a","block_end":"999"}',
    ],
)
def test_producer_id_block_malformed(data):
    with pytest.raises(ZnodeFormatError, match="producer id block"):
        z.decode_producer_id_block(data)


# -- malformed input in general: only ZnodeFormatError, never another exception

DECODERS = [
    z.decode_broker,
    z.decode_topic_assignment,
    z.decode_partition_state,
    z.decode_controller,
    z.decode_controller_epoch,
    z.decode_entity_config,
    z.decode_config_change,
    z.decode_consumer_offset,
    z.decode_cluster_id,
    z.decode_producer_id_block,
]

GARBAGE = [
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


@pytest.mark.parametrize("decode", DECODERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("data", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_raises_only_znode_format_error(decode, data):
    with pytest.raises(ZnodeFormatError):
        decode(data)


def test_znode_format_error_is_a_value_error():
    assert issubclass(ZnodeFormatError, ValueError)


def test_memoryview_and_bytearray_accepted():
    assert z.decode_controller_epoch(bytearray(b"3")) == 3
    assert z.decode_consumer_offset(memoryview(b"5")) == 5


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
        "entity_path",
        "entity_type",
        "entity_name",
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
    for decode in DECODERS:
        with contextlib.suppress(ZnodeFormatError):
            decode(data)


@pytest.mark.fuzz
@FUZZ
@given(obj=st.dictionaries(KEYS, JSON_VALUES, max_size=8))
def test_fuzz_json_objects(obj):
    data = json.dumps(obj).encode()
    for decode in DECODERS:
        with contextlib.suppress(ZnodeFormatError):
            decode(data)
