"""Committed offsets survive a broker restart, and ``__consumer_offsets`` is in Kafka's layout.

For every client that joins groups (``interop_tests/clients/registry.py``): a
member reads a 3-partition topic, commits chosen offsets, and closes; the
broker is stopped cleanly or SIGKILLed and started again on the same data; a
new member of the group must then start each partition exactly at the
committed offset (the first record it returns is the committed offset) and
read on from there, once each.

kafka-python 3 then reads ``__consumer_offsets`` like any topic and the test
decodes its records by hand: offset commit keys (int16 version 0/1, group,
topic, int32 partition) and values (int16 version, int64 offset, ...), in the
partition Kafka would use for the group (``abs(group.hashCode()) % 50``).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

import pytest
from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from interop_tests.clients.adapter import Capability, ClientAdapter, MemberConfig
from interop_tests.conftest import BrokerFactory
from interop_tests.group_driver import MemberEvents, wait_until
from interop_tests.groups import (
    GROUP_SETTINGS,
    TIMEOUT_S,
    Members,
    create_topic,
    group_name,
    members,  # noqa: F401  (fixture)
    produce,
    wait_for_commit,
)
from interop_tests.scenarios import clients, release_clients  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("release_clients")

PARTITIONS = 3
PER_PARTITION = 100
COMMITTED = {0: 17, 1: 42, 2: 99}
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50


def read_to_end(member: MemberEvents, what: str) -> None:
    def done() -> bool:
        last = {p: -1 for p in range(PARTITIONS)}
        for p, o, _ in member.records():
            last[p] = max(last[p], o)
        return all(o == PER_PARTITION - 1 for o in last.values())

    wait_until([member], done, TIMEOUT_S, what)


@pytest.mark.parametrize("restart", ["clean", "crash"])
@pytest.mark.parametrize("client", clients(Capability.GROUPS))
def test_resume_from_committed_offsets_after_broker_restart(
    broker_factory: BrokerFactory,
    members: Members,  # noqa: F811
    topic_name: Callable[[str], str],
    client: ClientAdapter,
    restart: str,
) -> None:
    """A member reads everything, commits COMMITTED and closes; after the broker restarts
    the next member starts each partition exactly there."""
    broker = broker_factory(settings=GROUP_SETTINGS)
    topic = topic_name()
    group = group_name(f"offsets-{client.name}")
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produced = produce(
        broker.bootstrap, topic, PARTITIONS * PER_PARTITION, client.name, partitions=PARTITIONS
    )
    keys = {(p, o): k for p, o, k in produced}
    config = MemberConfig(broker.bootstrap, topic, group, commit="none")

    first = members(client, f"{client.name}-first", config)
    read_to_end(first, "the first member to read everything")
    wait_for_commit(first, COMMITTED)
    first.close()

    broker.restart(crash=restart == "crash")

    second = members(client, f"{client.name}-second", config)
    read_to_end(second, "the second member to read up to the end")
    got = second.records()
    for p in range(PARTITIONS):
        offsets = [o for q, o, _ in got if q == p]
        assert offsets[:1] == [COMMITTED[p]], (
            f"partition {p}: resumed at {offsets[:1]}, committed {COMMITTED[p]}\n{second.describe()}"
        )
        assert offsets == list(range(COMMITTED[p], PER_PARTITION)), (
            f"partition {p}: {offsets[:10]}..."
        )
    assert all(keys[(p, o)] == k for p, o, k in got)
    second.close()
    broker.assert_running()


def java_string_hash(text: str) -> int:
    h = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_partition_for(group: str, partitions: int = OFFSETS_PARTITIONS) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % partitions`` (``abs(MIN_VALUE)`` is 0 there)."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        length = self.take(">h")
        assert length >= 0, "a null string"
        text = self.data[self.at : self.at + length].decode()
        self.at += length
        return text

    def done(self) -> bool:
        return self.at == len(self.data)


def decode_offset_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) for an offset commit key; None for a group metadata key."""
    r = Reader(key)
    version = r.take(">h")
    if version == 2:  # group metadata: just the group
        r.string()
        assert r.done(), f"trailing bytes in a group metadata key {key!r}"
        return None
    assert version in (0, 1), f"unknown key version {version} in {key!r}"
    group, topic, partition = r.string(), r.string(), r.take(">i")
    assert r.done(), f"trailing bytes in an offset commit key {key!r}"
    return group, topic, partition


def decode_offset_value(value: bytes) -> dict:
    r = Reader(value)
    version = r.take(">h")
    assert version in (0, 1, 3), f"offset commit value version {version}: {value!r}"
    decoded: dict = {"version": version, "offset": r.take(">q")}
    if version == 3:
        decoded["leader_epoch"] = r.take(">i")
    decoded["metadata"] = r.string()
    decoded["commit_timestamp"] = r.take(">q")
    if version == 1:
        decoded["expire_timestamp"] = r.take(">q")
    assert r.done(), f"trailing bytes in an offset commit value of version {version}: {value!r}"
    return decoded


def test_consumer_offsets_records_in_kafka_layout(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=GROUP_SETTINGS)
    topic = topic_name()
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce(broker.bootstrap, topic, 30, "layout", partitions=PARTITIONS)
    group = group_name("layout")
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

    committer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        committer.assign(tps)
        started = int(time.time() * 1000)
        committer.commit({tp: OffsetAndMetadata(3, "first", -1) for tp in tps})
        committer.commit(
            {
                tp: OffsetAndMetadata(COMMITTED[tp.partition] % 10, f"meta-{tp.partition}", -1)
                for tp in tps
            }
        )
        finished = int(time.time() * 1000)
        assert {tp.partition: committer.committed(tp) for tp in tps} == {
            p: o % 10 for p, o in COMMITTED.items()
        }
    finally:
        committer.close()

    reader = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False
    )
    try:
        assert reader.partitions_for_topic(OFFSETS_TOPIC) == set(range(OFFSETS_PARTITIONS))
        internal = [TopicPartition(OFFSETS_TOPIC, p) for p in range(OFFSETS_PARTITIONS)]
        reader.assign(internal)
        reader.seek_to_beginning()
        ends = reader.end_offsets(internal)
        non_empty = {tp.partition for tp, end in ends.items() if end > 0}
        assert non_empty == {kafka_partition_for(group)}, (
            f"offsets of {group!r} went to partitions {sorted(non_empty)}, Kafka would use "
            f"{kafka_partition_for(group)}"
        )
        records = []
        deadline = time.monotonic() + TIMEOUT_S
        while any(reader.position(tp) < ends[tp] for tp in internal):
            assert time.monotonic() < deadline, "timed out reading __consumer_offsets"
            for batch in reader.poll(timeout_ms=500).values():
                records.extend(batch)
    finally:
        reader.close()

    commits: dict[int, list[dict]] = {}
    for record in records:
        key = decode_offset_key(record.key)
        if key is None:
            continue
        assert record.value is not None, "a tombstone for a live commit"
        record_group, record_topic, partition = key
        assert (record_group, record_topic) == (group, topic)
        commits.setdefault(partition, []).append(decode_offset_value(record.value))
    assert sorted(commits) == list(range(PARTITIONS))
    for p, values in commits.items():
        assert [(v["offset"], v["metadata"]) for v in values] == [
            (3, "first"),
            (COMMITTED[p] % 10, f"meta-{p}"),
        ], f"partition {p}: {values}"
        for v in values:
            assert started - 1000 <= v["commit_timestamp"] <= finished + 1000, v
