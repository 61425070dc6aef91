"""Three brokers on one real ZooKeeper: topics spread over all of them, stock
clients bootstrapped from one broker reach every partition, a killed broker's
partitions go leaderless and come back with their data, a killed controller is
replaced, and the znodes hold Kafka's JSON."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Self

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import NewTopic as ConfluentNewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
)
from kazoo.client import KazooClient

from interop_tests.broker import Broker
from interop_tests.protocol_client import ProtocolClient
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from interop_tests.zookeeper import ZooKeeper
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.find_coordinator import FindCoordinatorRequest
from wirekafka.protocol.messages.heartbeat import HeartbeatRequest
from wirekafka.protocol.messages.metadata import MetadataResponse
from wirekafka.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from wirekafka.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic

SESSION_TIMEOUT_MS = 4000
TIMEOUT_S = 60.0
BROKERS = 3


class Cluster:
    def __init__(
        self,
        zookeeper: ZooKeeper,
        root: Path,
        settings: dict[str, str] | None = None,
        make_broker: Callable[[int, Path, dict[str, str]], Broker] | None = None,
    ) -> None:
        """``settings``: more broker keys, or other values for these; ``make_broker``:
        the broker of a node id, given its data dir and keys (default: Broker)."""
        self.zookeeper = zookeeper
        make = make_broker or (lambda _, data_dir, keys: Broker(data_dir, keys))
        self.brokers = {
            node: make(
                node,
                root / f"broker-{node}" / "data",
                {
                    "broker.id": str(node),
                    "zookeeper.connect": zookeeper.connect_string,
                    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "group.initial.rebalance.delay.ms": "0",
                    **(settings or {}),
                },
            )
            for node in range(BROKERS)
        }
        self.kazoo = KazooClient(zookeeper.connect_string)

    def start(self) -> None:
        """Start every broker and wait until each knows them all: topics are spread
        over the brokers a broker knows (its cache catches up when its watch fires)."""
        self.kazoo.start(timeout=TIMEOUT_S)
        for broker in self.brokers.values():
            broker.start()
        for broker in self.brokers.values():
            wait_for(
                lambda broker=broker: len(known_brokers(broker)) == BROKERS,
                f"broker {broker.data_dir} to know every broker",
            )

    @contextlib.contextmanager
    def running(self) -> Iterator[Self]:
        """Started; at the end each broker's log is printed (pytest shows it when the
        test failed) and the cluster closed."""
        try:
            self.start()
            yield self
        finally:
            for node, broker in self.brokers.items():
                print(f"--- broker {node} stderr ---\n{broker.stderr_text()}")
            self.close()

    def close(self) -> None:
        for broker in self.brokers.values():
            broker.close()
        self.kazoo.stop()
        self.kazoo.close()

    def json(self, path: str) -> dict:  # type: ignore[type-arg]
        return json.loads(self.kazoo.get(path)[0])

    def leaders(self, topic: str, partitions: int) -> list[int]:
        return [
            self.json(f"/brokers/topics/{topic}/partitions/{p}/state")["leader"]
            for p in range(partitions)
        ]

    def controller(self) -> int:
        return self.json("/controller")["brokerid"]


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            if condition():
                return
        except Exception as e:  # a znode not there yet
            last_error = e
        assert time.monotonic() < deadline, (
            f"timed out waiting for {what} (last error: {last_error!r})"
        )
        time.sleep(0.1)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    zookeeper = ZooKeeper(tmp_path / "zookeeper").start()
    try:
        with Cluster(zookeeper, tmp_path).running() as made:
            yield made
    finally:
        zookeeper.close()


def known_brokers(broker: Broker) -> list[int]:
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        return [b.node_id for b in client.metadata().brokers]


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, replication_factor)])
    finally:
        admin.close()


def metadata(broker: Broker, topic: str) -> MetadataResponse:
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        return client.metadata(topic)


def produce_kafka_python(bootstrap: str, topic: str, count: int, tag: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    futures = [
        producer.send(topic, key=f"{tag}-{i}".encode(), value=f"{tag}-value-{i}".encode())
        for i in range(count)
    ]
    producer.flush(TIMEOUT_S)
    for future in futures:
        future.get(TIMEOUT_S)
    producer.close()


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    found: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for message in read_to_end(consumer):
        found[message.partition].append(message.value)
    consumer.close()
    return found


@pytest.mark.slow
def test_a_topic_spreads_over_three_brokers_and_clients_reach_every_partition(
    cluster: Cluster,
) -> None:
    first, second, third = cluster.brokers.values()
    assert sorted(cluster.kazoo.get_children("/brokers/ids")) == ["0", "1", "2"]
    create_topic(first.bootstrap, "spread", 6)
    wait_for(lambda: -1 not in cluster.leaders("spread", 6), "leaders for every partition")
    assignment = cluster.json("/brokers/topics/spread")
    assert {int(p): r for p, r in assignment["partitions"].items()}.keys() == set(range(6))
    assert sorted(r[0] for r in assignment["partitions"].values()) == [0, 0, 1, 1, 2, 2]
    state = cluster.json("/brokers/topics/spread/partitions/0/state")
    assert set(state) >= {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
    assert state["isr"] == [state["leader"]] and state["version"] == 1
    assert cluster.json("/config/topics/spread") == {"version": 1, "config": {}}
    # Metadata from any broker describes the whole cluster (once its cache has the states).
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: (
                sorted(p.leader_id for p in metadata(broker, "spread").topics[0].partitions)
                == [0, 0, 1, 1, 2, 2]
            ),
            "every broker to know every leader",
        )
        answer = metadata(broker, "spread")
        assert sorted(b.node_id for b in answer.brokers) == [0, 1, 2]
        assert answer.controller_id == cluster.controller()

    produce_kafka_python(second.bootstrap, "spread", 600, "kp")
    producer = Producer({"bootstrap.servers": third.bootstrap, "log_level": 3})
    for i in range(600):
        producer.produce("spread", key=f"ck-{i}".encode(), value=f"ck-value-{i}".encode())
    assert producer.flush(TIMEOUT_S) == 0
    found = read_all(first.bootstrap, "spread", 6)
    assert all(found[p] for p in range(6)), "every partition got records"
    values = sorted(v for vs in found.values() for v in vs)
    expected = sorted(
        [f"kp-value-{i}".encode() for i in range(600)]
        + [f"ck-value-{i}".encode() for i in range(600)]
    )
    assert values == expected
    consumer = Consumer(
        {
            "bootstrap.servers": second.bootstrap,
            "group.id": "none",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    consumer.assign([ConfluentPartition("spread", p, OFFSET_BEGINNING) for p in range(6)])
    seen = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(seen) < 1200 and time.monotonic() < deadline:
        for message in consumer.consume(500, 1.0):
            assert message.error() is None, message.error()
            seen.append(message.value())
    consumer.close()
    assert sorted(seen) == expected


@pytest.mark.slow
def test_a_killed_broker_leaves_its_partitions_leaderless_until_it_returns(
    cluster: Cluster,
) -> None:
    brokers = cluster.brokers
    create_topic(brokers[0].bootstrap, "survive", 6)
    wait_for(lambda: -1 not in cluster.leaders("survive", 6), "leaders")
    produce_kafka_python(brokers[0].bootstrap, "survive", 300, "before")
    before = read_all(brokers[1].bootstrap, "survive", 6)
    victim = 2 if cluster.controller() != 2 else 1
    # ZooKeeper expires the killed broker's session, and its znode with it, after the
    # timeout the broker asked for (not ZooKeeper's longest, a minute)
    _, registration = cluster.kazoo.get(f"/brokers/ids/{victim}")
    session_timeout_ms = cluster.zookeeper.session_timeout_ms(registration.ephemeralOwner)
    assert session_timeout_ms == SESSION_TIMEOUT_MS
    brokers[victim].kill()
    wait_for(
        lambda: str(victim) not in cluster.kazoo.get_children("/brokers/ids"), "its znode to go"
    )
    survivor = brokers[next(n for n in brokers if n != victim)]

    def leaderless() -> bool:
        partitions = metadata(survivor, "survive").topics[0].partitions
        dead = [p for p in partitions if p.leader_id == -1]
        return len(dead) == 2 and all(p.error_code == ErrorCode.LEADER_NOT_AVAILABLE for p in dead)

    wait_for(leaderless, "its partitions to be reported leaderless")
    assert victim not in [b.node_id for b in metadata(survivor, "survive").brokers]
    brokers[victim].start()
    wait_for(lambda: -1 not in cluster.leaders("survive", 6), "its partitions to return")
    assert read_all(survivor.bootstrap, "survive", 6) == before  # every acknowledged record


@pytest.mark.slow
def test_a_killed_controller_is_replaced_and_topics_can_still_be_created(
    cluster: Cluster,
) -> None:
    brokers = cluster.brokers
    wait_for(lambda: cluster.controller() in brokers, "a controller")
    old = cluster.controller()
    epoch = int(cluster.kazoo.get("/controller_epoch")[0])
    brokers[old].kill()
    wait_for(lambda: cluster.controller() != old, "another controller")
    assert int(cluster.kazoo.get("/controller_epoch")[0]) > epoch
    alive = brokers[cluster.controller()]
    other = brokers[next(n for n in brokers if n not in (old, cluster.controller()))]
    create_topic(other.bootstrap, "after-failover", 2)
    wait_for(lambda: -1 not in cluster.leaders("after-failover", 2), "leaders for the new topic")
    produce_kafka_python(alive.bootstrap, "after-failover", 50, "late")
    assert sum(len(v) for v in read_all(alive.bootstrap, "after-failover", 2).values()) == 50


def test_topic_deletion_goes_through_zookeeper(cluster: Cluster) -> None:
    brokers = cluster.brokers
    create_topic(brokers[1].bootstrap, "doomed", 3)
    wait_for(lambda: -1 not in cluster.leaders("doomed", 3), "leaders")
    produce_kafka_python(brokers[1].bootstrap, "doomed", 30, "x")
    admin = KafkaAdminClient(bootstrap_servers=brokers[2].bootstrap)
    admin.delete_topics(["doomed"])
    admin.close()
    wait_for(
        lambda: cluster.kazoo.exists("/brokers/topics/doomed") is None, "the topic znode to go"
    )
    wait_for(
        lambda: not cluster.kazoo.get_children("/admin/delete_topics"), "the request to be done"
    )
    for broker in brokers.values():
        wait_for(  # renamed to <topic>-<p>.<uuid>-delete at once, removed later, as in Kafka
            lambda broker=broker: (
                not [d for d in broker.data_dir.glob("doomed-*") if not d.name.endswith("-delete")]
            ),
            f"broker {broker.data_dir} to remove its partitions",
        )


def one_record_each(bootstrap: str, topic: str, partitions: int, size: int) -> dict[int, str]:
    """Each partition's answer to one record of ``size`` bytes (librdkafka's error name,
    NO_ERROR when it was appended)."""
    answers: dict[int, str] = {}

    def delivered(error: KafkaError | None, message: Message) -> None:
        answers[message.partition()] = "NO_ERROR" if error is None else error.name()

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    for partition in range(partitions):
        producer.produce(topic, b"x" * size, partition=partition, on_delivery=delivered)
    assert producer.flush(TIMEOUT_S) == 0
    return answers


def test_a_config_changed_through_one_broker_reaches_the_partitions_others_lead(
    cluster: Cluster,
) -> None:
    """max.message.bytes raised through broker 0: the partitions brokers 1 and 2 lead
    take it too (their logs follow the topic's config znode through the cache)."""
    brokers = cluster.brokers
    admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    created = admin.create_topics(
        [ConfluentNewTopic("sized", 3, 1, config={"max.message.bytes": "1000"})]
    )
    created["sized"].result(TIMEOUT_S)
    wait_for(lambda: -1 not in cluster.leaders("sized", 3), "leaders")
    assert sorted(cluster.leaders("sized", 3)) == sorted(brokers)  # one each
    too_large = dict.fromkeys(range(3), "MSG_SIZE_TOO_LARGE")
    assert one_record_each(brokers[0].bootstrap, "sized", 3, 5_000) == too_large
    raised = ConfigEntry("max.message.bytes", "100000", incremental_operation=AlterConfigOpType.SET)
    changed = admin.incremental_alter_configs(
        [ConfigResource("topic", "sized", incremental_configs=[raised])]
    )
    for future in changed.values():
        future.result(TIMEOUT_S)
    taken = dict.fromkeys(range(3), "NO_ERROR")
    wait_for(
        lambda: one_record_each(brokers[0].bootstrap, "sized", 3, 5_000) == taken,
        "every leader to take the new max.message.bytes",
    )


def test_partitions_added_through_one_broker_get_leaders_and_records(cluster: Cluster) -> None:
    brokers = cluster.brokers
    create_topic(brokers[1].bootstrap, "grown", 2)
    wait_for(lambda: -1 not in cluster.leaders("grown", 2), "leaders")
    before = cluster.json("/brokers/topics/grown")["partitions"]
    admin = KafkaAdminClient(bootstrap_servers=brokers[2].bootstrap)
    try:
        admin.create_partitions({"grown": NewPartitions(5)})
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({"grown": NewPartitions(4)})
    finally:
        admin.close()
    assignment = cluster.json("/brokers/topics/grown")["partitions"]
    assert sorted(assignment, key=int) == ["0", "1", "2", "3", "4"]
    assert {k: assignment[k] for k in before} == before  # the old partitions stay where they were
    assert sorted({r for replicas in assignment.values() for r in replicas}) == sorted(brokers)
    wait_for(lambda: -1 not in cluster.leaders("grown", 5), "leaders of the new partitions")
    for broker in brokers.values():
        wait_for(
            lambda broker=broker: len(metadata(broker, "grown").topics[0].partitions) == 5,
            f"broker {broker.data_dir} to know five partitions",
        )
    produce_kafka_python(brokers[0].bootstrap, "grown", 50, "g")
    found = read_all(brokers[0].bootstrap, "grown", 5)
    assert sum(len(values) for values in found.values()) == 50
    assert all(found[p] for p in range(2, 5))


def _coordinator(cluster: Cluster, group: str) -> tuple[Broker, list[Broker]]:
    """The group's coordinator (asked through FindCoordinator v0), and the others."""
    any_broker = cluster.brokers[0]

    def found() -> bool:
        with ProtocolClient(*any_broker.address, timeout_s=TIMEOUT_S) as client:
            answer = client.request(ApiKey.FIND_COORDINATOR, 0, FindCoordinatorRequest(key=group))
        return answer.error_code == ErrorCode.NONE

    wait_for(found, "a coordinator for the group")
    with ProtocolClient(*any_broker.address, timeout_s=TIMEOUT_S) as client:
        answer = client.request(ApiKey.FIND_COORDINATOR, 0, FindCoordinatorRequest(key=group))
    coordinator = cluster.brokers[answer.node_id]
    assert (answer.host, answer.port) == coordinator.address
    return coordinator, [b for n, b in cluster.brokers.items() if n != answer.node_id]


def test_offset_commit_v0_goes_to_zookeeper_and_others_refuse_the_group(
    cluster: Cluster,
) -> None:
    create_topic(cluster.brokers[0].bootstrap, "zk-offsets", 2)
    wait_for(lambda: -1 not in cluster.leaders("zk-offsets", 2), "leaders")
    coordinator, others = _coordinator(cluster, "old-group")
    commit = OffsetCommitRequest(
        group_id="old-group",
        topics=[
            OffsetCommitRequestTopic(
                name="zk-offsets",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=42, committed_metadata=""
                    ),
                    OffsetCommitRequestPartition(
                        partition_index=1, committed_offset=7, committed_metadata=""
                    ),
                ],
            )
        ],
    )
    with ProtocolClient(*coordinator.address, timeout_s=TIMEOUT_S) as client:
        # NOT_COORDINATOR until the coordinator's cache has caught up with ZooKeeper
        wait_for(
            lambda: (
                [
                    p.error_code
                    for p in client.request(ApiKey.OFFSET_COMMIT, 0, commit).topics[0].partitions
                ]
                == [0, 0]
            ),
            "the commit to be accepted",
        )
        fetched = client.request(
            ApiKey.OFFSET_FETCH,
            0,
            OffsetFetchRequest(
                group_id="old-group",
                topics=[OffsetFetchRequestTopic(name="zk-offsets", partition_indexes=[0, 1])],
            ),
        )
    assert [p.committed_offset for p in fetched.topics[0].partitions] == [42, 7]
    assert cluster.kazoo.get("/consumers/old-group/offsets/zk-offsets/0")[0] == b"42"
    assert cluster.kazoo.get("/consumers/old-group/offsets/zk-offsets/1")[0] == b"7"
    # a broker that does not coordinate the group says so
    with ProtocolClient(*others[0].address, timeout_s=TIMEOUT_S) as client:
        answer = client.request(
            ApiKey.HEARTBEAT,
            0,
            HeartbeatRequest(group_id="old-group", generation_id=1, member_id="m"),
        )
    assert answer.error_code == ErrorCode.NOT_COORDINATOR


def test_the_offsets_topic_belongs_to_the_brokers(cluster: Cluster) -> None:
    """Clients cannot create or delete it; the brokers make it compacted, and one
    whose config znode lacks compaction (a client made it) gets it back when a
    broker starts, keeping its partitions."""
    brokers = cluster.brokers
    offsets_config = "/config/topics/__consumer_offsets"
    admin = KafkaAdminClient(bootstrap_servers=brokers[0].bootstrap)
    try:
        with pytest.raises(InvalidRequestError, match="internal topic __consumer_offsets"):
            admin.create_topics([NewTopic("__consumer_offsets", 1, 1)])
        assert cluster.kazoo.exists("/brokers/topics/__consumer_offsets") is None
        _coordinator(cluster, "owned-group")  # FindCoordinator: a broker creates it
        assert cluster.json(offsets_config)["config"]["cleanup.policy"] == "compact"
        with pytest.raises(InvalidTopicError, match="Cannot delete internal topic"):
            admin.delete_topics(["__consumer_offsets"])
    finally:
        admin.close()
    partitions = cluster.json("/brokers/topics/__consumer_offsets")["partitions"]
    cluster.kazoo.set(offsets_config, json.dumps({"version": 1, "config": {}}).encode())
    brokers[1].restart()
    assert cluster.json(offsets_config)["config"]["cleanup.policy"] == "compact"
    assert "restoring compaction" in brokers[1].stderr_text()
    assert cluster.json("/brokers/topics/__consumer_offsets")["partitions"] == partitions
    assert cluster.kazoo.exists("/admin/delete_topics/__consumer_offsets") is None


def test_a_topic_with_three_replicas_is_in_sync_on_every_broker(cluster: Cluster) -> None:
    brokers = cluster.brokers
    create_topic(brokers[0].bootstrap, "replicated", 6, 3)
    wait_for(lambda: -1 not in cluster.leaders("replicated", 6), "leaders")
    assignment = cluster.json("/brokers/topics/replicated")["partitions"]
    assert sorted(assignment, key=int) == [str(p) for p in range(6)]
    assert all(sorted(replicas) == [0, 1, 2] for replicas in assignment.values())
    assert sorted(replicas[0] for replicas in assignment.values()) == [0, 0, 1, 1, 2, 2]
    for partition, replicas in assignment.items():
        state = cluster.json(f"/brokers/topics/replicated/partitions/{partition}/state")
        assert state == {
            "controller_epoch": state["controller_epoch"],
            "leader": replicas[0],  # the preferred replica
            "version": 1,
            "leader_epoch": 0,
            "isr": replicas,
        }
        assert state["controller_epoch"] >= 1
    for broker in brokers.values():

        def in_sync(broker: Broker = broker) -> bool:
            partitions = metadata(broker, "replicated").topics[0].partitions
            return len(partitions) == 6 and all(
                sorted(p.replica_nodes) == [0, 1, 2]
                and sorted(p.isr_nodes) == [0, 1, 2]
                and p.offline_replicas == []
                and p.leader_id == assignment[str(p.partition_index)][0]
                and p.error_code == ErrorCode.NONE
                for p in partitions
            )

        wait_for(in_sync, f"broker {broker.data_dir} to show three replicas in sync")
    admin = KafkaAdminClient(bootstrap_servers=brokers[1].bootstrap)
    try:
        with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 3"):
            admin.create_topics([NewTopic("too-many", 1, 4)])
    finally:
        admin.close()
