"""The Java Admin client (kafka-clients 3.9 and 4.x) against wirekafka: every
call an operator's tools make, with exact answers; data produced and
cross-checked with confluent-kafka.

One JVM per client version serves the whole module (``jvm_admin.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as TP

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.jvm_admin import AdminDriver, AdminError, start_admin_driver
from interop_tests.jvm_jars import KAFKA_CLIENTS_3, KAFKA_CLIENTS_4
from interop_tests.polling import wait_for


class Admin:
    """The driver bound to one broker."""

    def __init__(self, driver: AdminDriver, bootstrap: str, jars: str) -> None:
        self.driver, self.bootstrap, self.jars = driver, bootstrap, jars

    def __call__(self, name: str, *args: object):  # type: ignore[no-untyped-def]
        return self.driver.call(self.bootstrap, name, *args)

    def error(self, name: str, *args: object) -> str:
        """The Java exception's class name that the call fails with."""
        with pytest.raises(AdminError) as failed:
            self(name, *args)
        return failed.value.exception


@pytest.fixture(scope="module", params=[KAFKA_CLIENTS_3, KAFKA_CLIENTS_4])
def driver(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[AdminDriver]:  # type: ignore[no-untyped-def]
    started = start_admin_driver(request.param, tmp_path_factory.mktemp("admin"))
    started.jars = request.param  # type: ignore[attr-defined]
    yield started
    started.close()


@pytest.fixture
def admin(driver: AdminDriver, broker: Broker) -> Admin:
    return Admin(driver, broker.bootstrap, driver.jars)  # type: ignore[attr-defined]


def produce(bootstrap: str, topic: str, records: list[tuple[int, int, bytes]]) -> None:
    """(partition, timestamp, value) records, acknowledged one by one in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    failures: list[object] = []
    for partition, timestamp, value in records:
        producer.produce(
            topic,
            value,
            partition=partition,
            timestamp=timestamp,
            on_delivery=lambda err, _msg: err and failures.append(err),
        )
        assert producer.flush(60) == 0
    assert failures == []


def stored_bytes(log: Path) -> int:
    """The bytes of the record batches in a segment file (the active one runs on in zeros)."""
    data = log.read_bytes()
    position = 0
    while position + 12 <= len(data):
        length = int.from_bytes(data[position + 8 : position + 12], "big")
        if length == 0:
            break
        position += 12 + length
    return position


# topics


def test_create_describe_grow_and_delete_topics(admin: Admin, topic_name) -> None:  # type: ignore[no-untyped-def]
    topic = topic_name()
    assert admin("createTopics", topic, 2, "retention.ms=3600000") == {"partitions": 2}
    assert admin.error("createTopics", topic, 2) == "TopicExistsException"
    assert topic in admin("listTopics")
    assert admin("describeTopic", topic) == {
        "name": topic,
        "internal": False,
        "partitions": [[0, 0, [0], [0]], [1, 0, [0], [0]]],
    }
    assert admin("createPartitions", topic, 5) == "created"
    assert [p[0] for p in admin("describeTopic", topic)["partitions"]] == [0, 1, 2, 3, 4]
    produce(admin.bootstrap, topic, [(4, 1_000, b"in the new partition")])
    assert admin("listOffsets", topic, 4, "latest") == [1, -1]
    assert admin.error("createPartitions", topic, 3) == "InvalidPartitionsException"
    assert admin.error("createPartitions", topic, 5) == "InvalidPartitionsException"
    assert admin.error("createPartitions", topic_name("missing"), 2) == (
        "UnknownTopicOrPartitionException"
    )
    assert admin("deleteTopics", topic) == "deleted"
    assert topic not in admin("listTopics")
    assert admin.error("describeTopic", topic) == "UnknownTopicOrPartitionException"


def test_list_offsets_and_delete_records(admin: Admin, topic_name) -> None:  # type: ignore[no-untyped-def]
    topic = topic_name()
    admin("createTopics", topic, 1)
    stamps = [1_000, 5_000, 3_000, 4_000]
    produce(admin.bootstrap, topic, [(0, ts, b"v%d" % ts) for ts in stamps])
    assert admin("listOffsets", topic, 0, "earliest") == [0, -1]
    assert admin("listOffsets", topic, 0, "latest") == [4, -1]
    assert admin("listOffsets", topic, 0, 2_500) == [1, 5_000]
    assert admin("listOffsets", topic, 0, 1_000) == [0, 1_000]
    assert admin("listOffsets", topic, 0, 5_001) == [-1, -1]
    assert admin("listOffsets", topic, 0, "maxTimestamp") == [1, 5_000]
    assert admin("deleteRecords", topic, 0, 2) == 2
    assert admin("listOffsets", topic, 0, "earliest") == [2, -1]
    assert admin.error("deleteRecords", topic, 0, 9) == "OffsetOutOfRangeException"
    consumer = Consumer(
        {"bootstrap.servers": admin.bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    try:
        consumer.assign([TP(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 2 and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                got.append(message.value())
        assert got == [b"v3000", b"v4000"]
    finally:
        consumer.close()


# configs


def test_topic_configs_altered_incrementally_take_effect(admin: Admin, topic_name) -> None:  # type: ignore[no-untyped-def]
    topic = topic_name()
    admin("createTopics", topic, 1, "retention.ms=3600000,segment.bytes=100000")
    configs = admin("describeConfigs", "TOPIC", topic)
    assert configs["retention.ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG", False]
    assert configs["cleanup.policy"] == ["delete", "DEFAULT_CONFIG", False]
    assert configs["max.message.bytes"] == ["1048588", "DEFAULT_CONFIG", False]
    assert admin(
        "incrementalAlterConfigs", "TOPIC", topic,
        "SET", "retention.ms", "5000",
        "DELETE", "segment.bytes", "<null>",
        "SET", "max.message.bytes", "200",
        "APPEND", "cleanup.policy", "compact",
    ) == "altered"  # fmt: skip
    configs = admin("describeConfigs", "TOPIC", topic)
    assert configs["retention.ms"] == ["5000", "DYNAMIC_TOPIC_CONFIG", False]
    assert configs["segment.bytes"] == ["1073741824", "DEFAULT_CONFIG", False]
    assert configs["max.message.bytes"] == ["200", "DYNAMIC_TOPIC_CONFIG", False]
    assert configs["cleanup.policy"] == ["compact,delete", "DYNAMIC_TOPIC_CONFIG", False]
    # in force at once: a 1,000-byte record is too large now, and compaction wants keys
    producer = Producer({"bootstrap.servers": admin.bootstrap, "linger.ms": 0, "retries": 0})
    errors: list[str] = []
    for value, key in ((b"x" * 1000, b"k"), (b"small", None)):  # one batch each
        producer.produce(topic, value, key=key, on_delivery=lambda e, _m: errors.append(e.name()))
        assert producer.flush(60) == 0
    assert errors == ["MSG_SIZE_TOO_LARGE", "INVALID_RECORD"]
    assert admin(
        "incrementalAlterConfigs", "TOPIC", topic,
        "SUBTRACT", "cleanup.policy", "compact", "DELETE", "max.message.bytes", "<null>",
    ) == "altered"  # fmt: skip
    produce(admin.bootstrap, topic, [(0, 1_000, b"x" * 1000)])
    refused = [
        ("SET", "retention.ms", "soon"),
        ("SET", "no.such.config", "1"),
        ("APPEND", "retention.ms", "1"),
        ("SET", "cleanup.policy", "forever"),
    ]
    for operation in refused:
        assert admin.error("incrementalAlterConfigs", "TOPIC", topic, *operation) == (
            "InvalidConfigurationException"
        ), operation
    assert (
        admin.error(
            "incrementalAlterConfigs", "TOPIC", topic_name("missing"), "SET", "retention.ms", "1"
        )
        == "UnknownTopicOrPartitionException"
    )
    assert admin("describeConfigs", "TOPIC", topic)["retention.ms"][0] == "5000"


def test_alter_configs_replaces_the_overrides(admin: Admin, topic_name) -> None:  # type: ignore[no-untyped-def]
    topic = topic_name()
    admin("createTopics", topic, 1, "retention.ms=3600000")
    if admin.jars == KAFKA_CLIENTS_4:  # removed from the 4.x Admin interface
        assert admin.error("alterConfigs", "TOPIC", topic, "segment.ms=60000") == (
            "NoSuchMethodException"
        )
        return
    assert admin("alterConfigs", "TOPIC", topic, "segment.ms=60000") == "altered"
    configs = admin("describeConfigs", "TOPIC", topic)
    assert configs["segment.ms"] == ["60000", "DYNAMIC_TOPIC_CONFIG", False]
    assert configs["retention.ms"] == ["604800000", "DEFAULT_CONFIG", False]
    assert admin.error("alterConfigs", "TOPIC", topic, "segment.ms=never") == (
        "InvalidConfigurationException"
    )


def test_broker_configs_are_described_and_static(admin: Admin) -> None:
    configs = admin("describeConfigs", "BROKER", "0")
    assert configs["message.max.bytes"] == ["1048588", "DEFAULT_CONFIG", True]
    assert configs["num.partitions"] == ["3", "STATIC_BROKER_CONFIG", True]
    assert (
        admin.error("incrementalAlterConfigs", "BROKER", "0", "SET", "log.retention.ms", "1000")
        == "InvalidRequestException"
    )


@pytest.mark.slow
def test_altered_configs_survive_a_restart(
    driver: AdminDriver, broker_factory: BrokerFactory
) -> None:
    broker = broker_factory()
    admin = Admin(driver, broker.bootstrap, driver.jars)  # type: ignore[attr-defined]
    admin("createTopics", "kept", 1)
    admin("incrementalAlterConfigs", "TOPIC", "kept", "SET", "retention.ms", "12345")
    admin("createPartitions", "kept", 3)
    broker.restart()
    admin = Admin(driver, broker.bootstrap, driver.jars)  # type: ignore[attr-defined]
    assert admin("describeConfigs", "TOPIC", "kept")["retention.ms"] == [
        "12345", "DYNAMIC_TOPIC_CONFIG", False
    ]  # fmt: skip
    assert len(admin("describeTopic", "kept")["partitions"]) == 3


# the cluster and its log dirs


def test_describe_cluster(admin: Admin, broker: Broker) -> None:
    consumer = Consumer({"bootstrap.servers": admin.bootstrap, "group.id": "cluster-id"})
    try:
        cluster_id = consumer.list_topics(timeout=30).cluster_id
    finally:
        consumer.close()
    host, port = broker.address
    assert admin("describeCluster") == {
        "clusterId": cluster_id,
        "controller": 0,
        "nodes": [[0, host, port]],
        "authorizedOperations": [
            "ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE",
            "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE",
        ],
    }  # fmt: skip


def test_describe_log_dirs(admin: Admin, broker: Broker, topic_name) -> None:  # type: ignore[no-untyped-def]
    topic = topic_name()
    admin("createTopics", topic, 2)
    produce(admin.bootstrap, topic, [(1, 1_000, b"a" * 300), (1, 2_000, b"b" * 50)])
    [[log_dir, error, replicas, total, usable]] = admin("describeLogDirs", 0)
    assert log_dir == str(broker.data_dir.absolute())
    assert error is None
    assert total > 0 and 0 < usable <= total
    written = stored_bytes(broker.data_dir / f"{topic}-1" / "00000000000000000000.log")
    assert written > 350
    assert replicas[f"{topic}-0"] == [0, 0, False]
    assert replicas[f"{topic}-1"] == [written, 0, False]


# consumer groups


def test_consumer_groups(admin: Admin, topic_name) -> None:  # type: ignore[no-untyped-def]
    topic, other, group = topic_name("a"), topic_name("b"), topic_name("group")
    admin("createTopics", topic, 2)
    admin("createTopics", other, 1)
    produce(admin.bootstrap, topic, [(0, 1_000, b"0"), (0, 2_000, b"1"), (1, 3_000, b"2")])
    consumer = Consumer(
        {
            "bootstrap.servers": admin.bootstrap,
            "group.id": group,
            "client.id": "member-1",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "partition.assignment.strategy": "range",
        }
    )
    try:
        consumer.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 60
        while got < 3 and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                got += 1
        assert got == 3
        consumer.commit(asynchronous=False)
        consumer.commit(offsets=[TP(other, 0, 7)], asynchronous=False)
        assert admin("listConsumerGroups")[group] == "Stable"
        described = admin("describeConsumerGroup", group)
        [member] = described.pop("members")
        assert described == {
            "groupId": group, "state": "Stable", "assignor": "range", "coordinator": 0,
            "simple": False,
        }  # fmt: skip
        assert member["clientId"] == "member-1"
        assert member["assignment"] == [f"{topic}-0", f"{topic}-1"]
        assert admin("listConsumerGroupOffsets", group) == {
            f"{topic}-0": [2, ""], f"{topic}-1": [1, ""], f"{other}-0": [7, ""]
        }  # fmt: skip
        assert admin("deleteConsumerGroupOffsets", group, topic, 0, other, 0) == {
            f"{topic}-0": "GroupSubscribedToTopicException", f"{other}-0": "deleted"
        }  # fmt: skip
        assert admin.error("deleteConsumerGroups", group) == "GroupNotEmptyException"
        assert admin.error("alterConsumerGroupOffsets", group, topic, 0, 1) == (
            "UnknownMemberIdException"
        )
    finally:
        consumer.close()
    wait_for(lambda: admin("listConsumerGroups")[group] == "Empty", f"{group} to be empty")
    assert admin("describeConsumerGroup", group)["members"] == []
    assert admin("alterConsumerGroupOffsets", group, topic, 0, 1, topic, 1, 0) == "altered"
    assert admin("listConsumerGroupOffsets", group) == {
        f"{topic}-0": [1, "set by admin"], f"{topic}-1": [0, "set by admin"]
    }  # fmt: skip
    check = Consumer({"bootstrap.servers": admin.bootstrap, "group.id": group})
    try:  # confluent-kafka reads the same offsets back
        committed = check.committed([TP(topic, 0), TP(topic, 1)], timeout=30)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 1), (1, 0)]
    finally:
        check.close()
    assert admin("deleteConsumerGroupOffsets", group, topic, 1) == {f"{topic}-1": "deleted"}
    assert admin("listConsumerGroupOffsets", group) == {f"{topic}-0": [1, "set by admin"]}
    assert admin("deleteConsumerGroups", group) == "deleted"
    assert group not in admin("listConsumerGroups")
    assert admin.error("deleteConsumerGroups", group) == "GroupIdNotFoundException"
