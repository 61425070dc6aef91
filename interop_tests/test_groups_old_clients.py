"""Consumer groups with old clients: kafka-python 2.0.2 and pykafka's managed balanced consumer.

kafka-python 2.0.2 (its own venv, through ``group_driver.py``): two members
share a 6-partition topic, 3 partitions each, and read every record once.

pykafka 2.8's ``get_balanced_consumer(managed=True)`` is the Kafka-group
path (JoinGroup/SyncGroup v0, OffsetCommit v1): it reads everything produced
to a 3-partition topic, commits, and the committed offsets are what
kafka-python 3's ``KafkaConsumer.committed()`` reads back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from pykafka import KafkaClient
from pykafka.common import OffsetType

from interop_tests.broker import Broker
from interop_tests.test_groups import (
    TIMEOUT_S,
    Spawner,
    assert_in_order,
    assert_keys_match,
    assert_no_errors,
    consumed,
    create_topic,
    duplicates,
    group_name,
    produce,
    spawn,  # noqa: F401  (fixture)
    start_group_broker,
    wait_balanced,
    wait_consumed,
)
from interop_tests.test_kafka_python_2 import INSTALL, interpreter


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(tmp_path_factory)


def test_kafka_python_2_group_of_two(
    group_broker: Broker,
    spawn: Spawner,  # noqa: F811
    topic_name: Callable[[str], str],
) -> None:
    python = interpreter()
    if not Path(python).exists():
        pytest.fail(f"kafka-python 2.0.2's venv is missing ({python}); create it with:\n{INSTALL}")
    topic = topic_name()
    create_topic(group_broker.bootstrap, topic)
    group = group_name("kp2")
    before = produce(group_broker.bootstrap, topic, 600, "kp2-a")
    members = [
        spawn(f"kp2-{i}", "kafka-python", group_broker.bootstrap, topic, group, python=str(python))
        for i in range(2)
    ]
    wait_balanced(members)
    after = produce(group_broker.bootstrap, topic, 600, "kp2-b", first=600)
    wait_consumed(members, before + after)
    assert_no_errors(members)
    assert_keys_match(before + after, consumed(members))
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    for m in members:
        assert_in_order(m)
        assert len(m.of_type("assigned")) >= 1
    for m in members:
        m.close()


def describe(bootstrap: str, group: str) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return admin.describe_groups([group])[group]
    finally:
        admin.close()


def test_pykafka_managed_balanced_consumer(
    group_broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name()
    partitions = 3
    create_topic(group_broker.bootstrap, topic, partitions)
    produced = produce(group_broker.bootstrap, topic, 600, "pykafka", partitions=partitions)
    group = group_name("pykafka")
    got: list[tuple[int, int, str]] = []
    failure: list[BaseException] = []
    described: dict = {}

    def consume() -> None:
        try:
            client = KafkaClient(hosts=group_broker.bootstrap, socket_timeout_ms=30_000)
            consumer = client.topics[topic].get_balanced_consumer(
                consumer_group=group.encode(),
                managed=True,
                auto_commit_enable=False,
                auto_offset_reset=OffsetType.EARLIEST,
                consumer_timeout_ms=500,
                heartbeat_interval_ms=1000,
            )
            try:
                deadline = time.monotonic() + TIMEOUT_S
                while len({(p, o) for p, o, _ in got}) < len(produced):
                    if time.monotonic() > deadline:
                        raise AssertionError(f"pykafka read {len(got)} of {len(produced)} records")
                    message = consumer.consume(block=True)
                    if message is not None:
                        got.append(
                            (message.partition_id, message.offset, message.partition_key.decode())
                        )
                described.update(describe(group_broker.bootstrap, group))
                consumer.commit_offsets()
            finally:
                consumer.stop()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=consume, daemon=True, name="pykafka")
    thread.start()
    thread.join(TIMEOUT_S + 30)
    assert not thread.is_alive(), "pykafka's balanced consumer hung"
    if failure:
        raise failure[0]
    # pykafka was a member of a Kafka group while it read (not a simple consumer).
    assert (described["group_state"], described["protocol_type"], len(described["members"])) == (
        "Stable",
        "consumer",
        1,
    ), described
    assert sorted((p, o) for p, o, _ in got) == sorted((p, o) for p, o, _ in produced)
    assert_keys_match(produced, got)

    checker = KafkaConsumer(
        bootstrap_servers=group_broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        committed = {p: checker.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        checker.close()
    assert committed == dict.fromkeys(range(partitions), 200)
