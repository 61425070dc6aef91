"""pykafka's ZooKeeper-balanced consumer against a broker registered in ZooKeeper:
it finds the brokers and topics through Kafka's znodes, registers itself under
``/consumers/<group>/ids``, claims partitions under ``/consumers/<group>/owners``
and consumes everything."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer
from kazoo.client import KazooClient
from pykafka import KafkaClient
from pykafka.common import OffsetType

from interop_tests.conftest import BrokerFactory
from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401

RECORDS = 300
TIMEOUT_S = 60.0


@pytest.mark.slow
def test_pykafka_balanced_consumer_over_zookeeper(
    broker_factory: BrokerFactory,
    zookeeper: ZooKeeper,  # noqa: F811
) -> None:
    broker = broker_factory(
        settings={"zookeeper.connect": zookeeper.connect_string, "num.partitions": "3"}
    )
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    sent = [f"value-{i}".encode() for i in range(RECORDS)]
    for value in sent:
        producer.send("balanced", value=value)
    producer.flush(TIMEOUT_S)
    producer.close()

    kazoo = KazooClient(zookeeper.connect_string)
    kazoo.start(timeout=TIMEOUT_S)
    client = KafkaClient(zookeeper_hosts=zookeeper.connect_string)
    topic = client.topics[b"balanced"]
    consumer = topic.get_balanced_consumer(
        consumer_group=b"zk-group",
        zookeeper_connect=zookeeper.connect_string,
        auto_offset_reset=OffsetType.EARLIEST,
        consumer_timeout_ms=5000,
        auto_commit_enable=False,
    )
    try:
        received = []
        members: list[str] = []
        owners: list[str] = []
        for message in consumer:
            if message is None:
                break
            received.append(message.value)
            if not members:
                members = kazoo.get_children("/consumers/zk-group/ids")
                # pykafka 2.8 on Python 3 names the topic's node after its bytes repr
                (topic_node,) = kazoo.get_children("/consumers/zk-group/owners")
                assert "balanced" in topic_node
                owners = kazoo.get_children(f"/consumers/zk-group/owners/{topic_node}")
        assert sorted(received) == sorted(sent)
        assert len(members) == 1
        assert kazoo.get("/consumers/zk-group/ids/" + members[0])[1].ephemeralOwner != 0
        assert sorted(int(name.rsplit("-", 1)[1]) for name in owners) == [0, 1, 2]
        registration = json.loads(kazoo.get("/brokers/ids/0")[0])
        assert (registration["host"], registration["port"]) == broker.address
    finally:
        consumer.stop()
        kazoo.stop()
        kazoo.close()
