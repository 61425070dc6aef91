"""``__consumer_offsets`` as Apache Kafka writes it: read byte for byte, then loaded.

Apache Kafka 4.3 (jar set ``kafka``, KRaft, see tools/apache_kafka.py) runs a
consumer group of kafka-python 3 (the classic protocol): a member joins, reads
a 3-partition topic, commits chosen offsets with metadata and leaves. Then:

* kafka-python reads ``__consumer_offsets`` from Kafka and every record is
  decoded with wirekafka's declarations; encoding what was decoded at the
  record's own version gives Kafka's bytes back. Kafka 4.3 writes group
  metadata values of version 3 and offset commit values of version 4, the
  flexible one, with the topic's id in tagged field 0 (KAFKA-19141): the id
  decoded is the one Kafka's Metadata v12 gives the topic.
* Kafka stops cleanly and its partition directories of the topic and of
  ``__consumer_offsets`` are copied into a wirekafka broker's log dir: the
  broker adopts them and loads the group from Kafka's records, so
  OffsetFetch answers Kafka's commits, the group is Empty with its protocol
  type, and a new member of the group starts at the committed offsets and
  reads the records Kafka stored.
"""

from __future__ import annotations

import shutil
import signal
import time
from uuid import UUID

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.admin import NewTopic

from interop_tests.conftest import HEAVY, BrokerFactory
from interop_tests.protocol_client import ProtocolClient
from tools.apache_kafka import HOST, STOP_TIMEOUT_S, ApacheKafka
from wirekafka.groups.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_value,
    encode_key,
    encode_offset_commit_value,
)
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

TOPIC = "kafka-written"
GROUP = "kafka-group"
PARTITIONS = 3
PER_PARTITION = 20
COMMITTED = {0: 7, 1: 13, 2: 20}  # partition 2: everything read
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50  # Kafka's default and wirekafka's
TIMEOUT_S = 60.0

StoredRecord = tuple[bytes, bytes | None]

# Apache Kafka's JVM: with the other heavy tests (interop_tests/conftest.py, HEAVY).
pytestmark = [HEAVY, pytest.mark.slow]


def value_of(partition: int, offset: int) -> bytes:
    return f"p{partition}-o{offset}".encode()


def produce_and_commit(bootstrap: str) -> None:
    """A topic of 3 x 20 records; a group member reads it all and commits COMMITTED."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for offset in range(PER_PARTITION):
            for partition in range(PARTITIONS):
                producer.send(TOPIC, value=value_of(partition, offset), partition=partition)
        producer.flush()
    finally:
        producer.close()
    member = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        read = read_records(member, PARTITIONS * PER_PARTITION)
        assert len(read) == PARTITIONS * PER_PARTITION
        member.commit(
            {
                TopicPartition(TOPIC, p): OffsetAndMetadata(offset, f"meta-{p}", -1)
                for p, offset in COMMITTED.items()
            }
        )
    finally:
        member.close()  # leaves the group: Kafka stores it Empty


def read_records(consumer: KafkaConsumer, count: int) -> list[tuple[int, int, bytes]]:
    got: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < count:
        assert time.monotonic() < deadline, f"read {len(got)} of {count} records"
        for records in consumer.poll(timeout_ms=500).values():
            got.extend((r.partition, r.offset, r.value) for r in records)
    return got


def offsets_topic_records(bootstrap: str) -> list[StoredRecord]:
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(OFFSETS_TOPIC, p) for p in range(OFFSETS_PARTITIONS)]
        reader.assign(partitions)
        reader.seek_to_beginning()
        ends = reader.end_offsets(partitions)
        stored: list[StoredRecord] = []
        deadline = time.monotonic() + TIMEOUT_S
        while any(reader.position(tp) < ends[tp] for tp in partitions):
            assert time.monotonic() < deadline, f"timed out reading {OFFSETS_TOPIC}"
            for records in reader.poll(timeout_ms=500).values():
                stored.extend((r.key, r.value) for r in records)
        return stored
    finally:
        reader.close()


def topic_id(bootstrap: str) -> UUID:
    host, port = bootstrap.rsplit(":", 1)
    with ProtocolClient(host, int(port)) as client:
        request = MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)])
        response = client.request(ApiKey.METADATA, 12, request)
    [topic] = response.topics
    return topic.topic_id


def decoded(key_bytes: bytes, value_bytes: bytes | None) -> tuple[object, object, int | None]:
    """Key, value (None: a tombstone) and value version; the bytes must come back
    from encoding what was decoded."""
    key = decode_key(key_bytes)
    assert encode_key(key) == key_bytes
    if value_bytes is None:
        return key, None, None
    version = int.from_bytes(value_bytes[:2], "big", signed=True)
    value: OffsetCommitValue | GroupMetadataValue
    if isinstance(key, OffsetCommitKey):
        value = decode_offset_commit_value(value_bytes)
        assert encode_offset_commit_value(value, version) == value_bytes
    else:
        value = decode_group_metadata_value(value_bytes)
        assert encode_group_metadata_value(value, version) == value_bytes
    return key, value, version


def test_offsets_apache_kafka_wrote_are_read_and_loaded(broker_factory: BrokerFactory) -> None:
    with ApacheKafka() as kafka:
        produce_and_commit(kafka.bootstrap)
        kafka_topic_id = topic_id(kafka.bootstrap)
        stored = offsets_topic_records(kafka.bootstrap)

        commits: dict[int, tuple[int, OffsetCommitValue]] = {}
        groups: list[tuple[int, GroupMetadataValue]] = []
        for key_bytes, value_bytes in stored:
            key, value, version = decoded(key_bytes, value_bytes)
            assert version is not None, "no tombstones expected"
            if isinstance(key, OffsetCommitKey):
                assert (key.group, key.topic) == (GROUP, TOPIC)
                assert isinstance(value, OffsetCommitValue)
                commits[key.partition] = (version, value)
            else:
                assert key == GroupMetadataKey(group=GROUP)
                assert isinstance(value, GroupMetadataValue)
                groups.append((version, value))
        assert {p: (v, c.offset, c.metadata, c.topic_id) for p, (v, c) in commits.items()} == {
            p: (4, offset, f"meta-{p}", kafka_topic_id) for p, offset in COMMITTED.items()
        }
        assert kafka_topic_id != UUID(int=0)
        assert {version for version, _ in groups} == {3}
        joined = [g for _, g in groups if g.members]
        assert joined, "no group metadata with the member"
        assert joined[-1].protocol_type == "consumer"
        assert joined[-1].members[0].client_host == f"/{HOST}"
        last = groups[-1][1]
        assert (last.protocol_type, last.members) == ("consumer", [])  # Empty once it left
        assert last.generation > joined[-1].generation

        # A clean stop, then Kafka's partition directories are kept before the
        # peer's directory goes.
        assert kafka.process is not None and kafka.directory is not None
        kafka.process.send_signal(signal.SIGTERM)
        assert kafka.process.wait(STOP_TIMEOUT_S) is not None
        broker = broker_factory()
        broker.stop()
        copied = 0
        for directory in (kafka.directory / "data").iterdir():
            if directory.name.startswith((f"{TOPIC}-", f"{OFFSETS_TOPIC}-")):
                shutil.copytree(directory, broker.data_dir / directory.name)
                copied += 1
        assert copied == PARTITIONS + OFFSETS_PARTITIONS

    broker.start()
    assert f"adopting topic {OFFSETS_TOPIC} with {OFFSETS_PARTITIONS} partitions" in (
        broker.stderr_text()
    )
    fetcher = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP)
    try:
        assert {
            p: fetcher.committed(TopicPartition(TOPIC, p), metadata=True) for p in range(PARTITIONS)
        } == {p: OffsetAndMetadata(offset, f"meta-{p}", -1) for p, offset in COMMITTED.items()}
    finally:
        fetcher.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        description = admin.describe_groups([GROUP])[GROUP]
    finally:
        admin.close()
    assert (description["group_state"], description["protocol_type"], description["members"]) == (
        "Empty",
        "consumer",
        [],
    )
    member = KafkaConsumer(
        TOPIC, bootstrap_servers=broker.bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    try:
        expected = {
            (p, o, value_of(p, o))
            for p, start in COMMITTED.items()
            for o in range(start, PER_PARTITION)
        }
        assert set(read_records(member, len(expected))) == expected
    finally:
        member.close()
    broker.stop()
