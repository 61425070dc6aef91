"""``kafka.group.id`` and ``groupIdPrefix`` with Spark's own connector: what the broker sees.

Spark's executors read with consumers that are assigned their partitions: they
never join a group, so the group id reaches the broker only inside their client
id (kafka-clients names a consumer ``consumer-<group.id>-<n>``), which a
recording proxy notes in every Fetch request. With
``spark.sql.streaming.kafka.useDeprecatedOffsetFetching`` the driver finds
offsets with a consumer that subscribes, and then the group is the broker's:
ListGroups and DescribeGroups show it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from spark_tests.kafka import TIMEOUT_S, create_topic, produce_values
from spark_tests.recording_proxy import FETCH, JOIN_GROUP, RecordingProxy, recording_proxy
from spark_tests.spark_kafka import read_kafka, stream_kafka

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
RECORDS = 20
DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


@pytest.fixture
def proxied(broker_factory: BrokerFactory) -> Iterator[tuple[Broker, RecordingProxy]]:
    """A broker of the test's own that advertises a recording proxy in front of it."""
    with recording_proxy() as proxy:
        broker = broker_factory(settings={"advertised.listeners": f"PLAINTEXT://{proxy.bootstrap}"})
        proxy.forward_to(broker.address)
        yield broker, proxy


def fetching_clients(proxy: RecordingProxy, run: Callable[[], int]) -> set[str | None]:
    """The client ids of the Fetch requests sent while ``run`` reads all ``RECORDS``."""
    mark = len(proxy.seen())
    assert run() == RECORDS
    return proxy.client_ids(FETCH, since=mark)


def assert_all_match(client_ids: set[str | None], pattern: str) -> None:
    assert client_ids, "no Fetch request went through the proxy"
    assert all(c is not None and re.fullmatch(pattern, c) for c in client_ids), (
        f"{sorted(map(str, client_ids))} do not all match {pattern}"
    )


@pytest.mark.slow
def test_group_options_name_the_consumers_the_broker_sees(
    spark: SparkSession,
    proxied: tuple[Broker, RecordingProxy],
    tmp_path: Path,
    topic_name: Callable[[str], str],
) -> None:
    _broker, proxy = proxied
    bootstrap = proxy.bootstrap
    topic = topic_name("")
    create_topic(bootstrap, topic, 2)
    produce_values(bootstrap, topic, ((i % 2, None, str(i).encode()) for i in range(RECORDS)))

    def batch(**options: str) -> int:
        return read_kafka(spark, bootstrap, subscribe=topic, **options).count()

    def stream(name: str, **options: str) -> int:
        query = (
            stream_kafka(spark, bootstrap, subscribe=topic, startingOffsets="earliest", **options)
            .writeStream.format("memory")
            .queryName(name)
            .option("checkpointLocation", str(tmp_path / name))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120), "Trigger.AvailableNow did not finish"
        assert query.exception() is None
        return spark.table(name).count()

    # Spark's own names: spark-kafka-relation-<uuid>-executor for a batch read
    assert_all_match(
        fetching_clients(proxy, batch), rf"consumer-spark-kafka-relation-{UUID}-executor-\d+"
    )
    assert_all_match(
        fetching_clients(proxy, lambda: batch(**{"kafka.group.id": "batch-group"})),
        r"consumer-batch-group-\d+",
    )
    assert_all_match(
        fetching_clients(proxy, lambda: batch(groupIdPrefix="batch-prefix")),
        rf"consumer-batch-prefix-{UUID}-executor-\d+",
    )
    # a stream adds the hash of its checkpoint's path (negative or not)
    assert_all_match(
        fetching_clients(proxy, lambda: stream("prefixed", groupIdPrefix="stream-prefix")),
        rf"consumer-stream-prefix-{UUID}--?\d+-executor-\d+",
    )
    assert_all_match(
        fetching_clients(proxy, lambda: stream("named", **{"kafka.group.id": "stream-group"})),
        r"consumer-stream-group-\d+",
    )

    # None of them joined a group: the broker has none, and was never asked to.
    assert proxy.client_ids(JOIN_GROUP) == set()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(timeout=TIMEOUT_S)
    assert [g.group_id for g in listed.valid] == []


@pytest.mark.slow
def test_deprecated_offset_fetching_joins_the_group(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 2)
    produce_values(
        broker.bootstrap, topic, ((i % 2, None, str(i).encode()) for i in range(RECORDS))
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    group = topic_name("group")

    spark.conf.set(DEPRECATED_OFFSET_FETCHING, "true")
    try:
        query = (
            stream_kafka(
                spark,
                broker.bootstrap,
                subscribe=topic,
                startingOffsets="earliest",
                **{"kafka.group.id": group},
            )
            .writeStream.format("memory")
            .queryName("deprecated_fetching")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .start()
        )
        try:
            query.processAllAvailable()
            assert spark.table("deprecated_fetching").count() == RECORDS
            # the driver's consumer is the group's one member, with both partitions
            (described,) = admin.describe_consumer_groups([group]).values()
            description = described.result(timeout=TIMEOUT_S)
        finally:
            query.stop()
        assert description.state == ConsumerGroupState.STABLE
        (member,) = description.members
        assert re.fullmatch(rf"consumer-{re.escape(group)}-\d+", member.client_id)
        assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) == [
            (topic, 0),
            (topic, 1),
        ]

        # a batch read's driver group: <groupIdPrefix>-<uuid>-driver-<n>
        assert read_kafka(spark, broker.bootstrap, subscribe=topic, groupIdPrefix="dp").count() == (
            RECORDS
        )
    finally:
        spark.conf.unset(DEPRECATED_OFFSET_FETCHING)

    listed = {g.group_id: g for g in admin.list_consumer_groups().result(timeout=TIMEOUT_S).valid}
    driver_groups = [g for g in listed if re.fullmatch(rf"dp-{UUID}-driver-\d+", g)]
    assert len(driver_groups) == 1, sorted(listed)
    assert sorted(listed) == sorted([group, *driver_groups])
    # both left when their consumer closed
    assert {g.state for g in listed.values()} == {ConsumerGroupState.EMPTY}
