"""The Go clients franz-go (kgo) and segmentio/kafka-go against wirekafka.

Each client runs as a program built from ``interop_tests/go`` (see
:mod:`interop_tests.go_drivers`):

* It produces records with keys (some null), binary values, headers (repeated
  keys, empty values) and its own timestamps to 3 partitions of a topic it has
  auto-created, with each codec it supports and acks=all (kgo idempotently, its
  default); every record is acknowledged at the next offset of its partition,
  kafka-python reads them back byte for byte, and the batches are stored
  compressed with that codec.
* It consumes, from the beginning of each partition, records that kafka-python
  produced with every codec: the same records, offsets, headers and timestamps.
* Its own group implementation (kgo's consumer groups with the eager range
  balancer and with cooperative-sticky; kafka-go's Reader with a GroupID) runs
  three members that join one after another: after each join every partition
  has exactly one owner, in equal shares, and the broker's DescribeGroups says
  the same; under cooperative-sticky a join only takes partitions away from
  the members that hold them, which keep the rest. The members read what is
  produced once stable, each record once, committing after each poll, and
  leave. A second run of two members resumes from the committed offsets: it
  reads exactly the records produced since, each once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient

from interop_tests import go_drivers, test_kafka_python
from interop_tests.broker import Broker
from interop_tests.group_driver import Member
from interop_tests.protocol_client import ProtocolClient
from interop_tests.support import (
    CODECS,
    RECORDS,
    Deadline,
    assert_acknowledged_in_order,
    assert_same_records,
    codec_id,
    counts_of,
    make_samples,
)
from interop_tests.test_groups import (
    PARTITIONS as GROUP_PARTITIONS,
)
from interop_tests.test_groups import (
    TIMEOUT_S,
    Record,
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
    wait_balanced,
    wait_consumed,
)
from interop_tests.test_groups_cooperative import assert_only_moved_revoked
from interop_tests.test_groups_old_clients import describe
from wirekafka.protocol.records.compression import CompressionType, compression_of
from wirekafka.protocol.records.record_batch import NO_PRODUCER_ID, BatchHeader, iter_batches

CLIENTS = go_drivers.CLIENTS

PER_RUN = 600  # records produced for each run of a group, 100 a partition
# Producers that are idempotent by default (InitProducerId, then sequence numbers).
IDEMPOTENT = {"franz-go"}
# kafka-go's reader hands over zero bytes as nil, which is also its null: an empty header
# value (which kafka-python and franz-go read as empty) comes out as null.
EMPTY_READ_AS_NULL = {"kafka-go"}
# (client, the assignor its members use): each client's own group implementation.
GROUPS = [("franz-go", "range"), ("franz-go", "cooperative-sticky"), ("kafka-go", "range")]


def stored_batches(broker: Broker, topic: str, counts: dict[int, int]) -> list[BatchHeader]:
    """The headers of the batches the broker holds for ``topic``, read with Fetch."""
    batches: list[BatchHeader] = []
    with ProtocolClient(*broker.address) as client:
        for partition, count in counts.items():
            offset = 0
            deadline = Deadline(TIMEOUT_S)
            while offset < count:
                deadline.check(f"offset {count} of {topic} partition {partition}")
                answer = client.fetch(topic, offset, partition=partition)
                assert answer.error_code == 0, f"Fetch of {topic}/{partition}: {answer.error_code}"
                for _, header in iter_batches(
                    bytes(answer.records or b""), allow_partial_tail=True
                ):
                    batches.append(header)
                    offset = header.next_offset
    return batches


@pytest.mark.parametrize("codec", CODECS, ids=codec_id)
@pytest.mark.parametrize("client", CLIENTS)
def test_produce_read_back_with_kafka_python(
    broker: Broker, topic_name: Callable[[str], str], client: str, codec: str | None
) -> None:
    topic = topic_name(codec_id(codec))  # auto-created by the client's Metadata request
    samples = make_samples(RECORDS, f"{client}-{codec_id(codec)}")
    acks = go_drivers.produce(client, broker.bootstrap, topic, samples, codec)
    assert_acknowledged_in_order(samples, acks)
    counts = counts_of(samples)
    with test_kafka_python.consumer_for(broker.bootstrap) as consumer:
        got = test_kafka_python.read_all(consumer, topic, counts)
    assert_same_records(samples, got, timestamps=True, what=f"{client} wrote, {codec}")

    # A client may send a batch uncompressed where the codec would not make it smaller.
    want = CompressionType[codec_id(codec).upper()]
    batches = stored_batches(broker, topic, counts)
    codecs = {compression_of(b.attributes) for b in batches}
    assert want in codecs and codecs <= {want, CompressionType.NONE}, (
        f"{client} asked for {codec}; its batches were stored with {sorted(codecs)}"
    )
    producer_ids = {b.producer_id for b in batches}
    if client in IDEMPOTENT:
        assert len(producer_ids) == 1 and min(producer_ids) >= 0, producer_ids
    else:
        assert producer_ids == {NO_PRODUCER_ID}, producer_ids


@pytest.mark.parametrize("client", CLIENTS)
def test_consume_what_kafka_python_produced(
    broker: Broker, topic_name: Callable[[str], str], client: str
) -> None:
    topic = topic_name()
    # One producer per codec, one after another: every partition holds batches of each.
    rounds = [make_samples(400, f"kp3-{codec_id(codec)}") for codec in CODECS]
    for codec, samples in zip(CODECS, rounds, strict=True):
        test_kafka_python.produce(broker.bootstrap, topic, samples, codec)
    everything = [s for samples in rounds for s in samples]
    got = go_drivers.consume(client, broker.bootstrap, topic, counts_of(everything))
    if client in EMPTY_READ_AS_NULL:
        everything = [
            dataclasses.replace(s, headers=tuple((k, v or None) for k, v in s.headers))
            for s in everything
        ]
    assert_same_records(everything, got, timestamps=True, what=f"{client} read")


# -- groups


def member_partitions(member: Member) -> set[int]:
    return {p for p, _, _ in member.records()}


def assert_described(bootstrap: str, group: str, members: list[Member]) -> None:
    """The broker's DescribeGroups: Stable, these members (by client id), each assigned
    what it says it owns."""
    described = describe(bootstrap, group)
    assignments = {
        m["client_id"]: {
            p for t in m["member_assignment"]["assigned_partitions"] for p in t["partitions"]
        }
        for m in described["members"]
    }
    assert described["group_state"] == "Stable", described
    assert assignments == {m.name: set(m.owned) for m in members}, (
        f"the broker's assignment {assignments}, the members' "
        f"{ {m.name: sorted(m.owned) for m in members} }"
    )


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}


def read_once(members: list[Member], produced: list[Record]) -> None:
    """Every record produced is read once, with its key, by the member owning its partition."""
    wait_consumed(members, produced)
    assert_no_errors(members)
    for m in members:  # what a poll reported: fetch errors that the client gave up on
        assert not m.of_type("client_error"), f"{m.name}: {m.of_type('client_error')[:3]}"
    assert_keys_match(produced, consumed(members))
    assert not duplicates(members), f"records returned twice: {sorted(duplicates(members))[:10]}"
    for m in members:
        assert_in_order(m)
        assert member_partitions(m) <= m.owned, (
            f"{m.name} read partitions {sorted(member_partitions(m))}, owns {sorted(m.owned)}"
        )


@pytest.mark.parametrize(("client", "assignment"), GROUPS, ids=[f"{c}-{a}" for c, a in GROUPS])
def test_group_shares_commits_and_resumes(
    broker: Broker,
    spawn: Spawner,  # noqa: F811
    topic_name: Callable[[str], str],
    client: str,
    assignment: str,
) -> None:
    topic = topic_name(f"{client}-{assignment}")
    create_topic(broker.bootstrap, topic, GROUP_PARTITIONS)
    group = group_name(f"{client}-{assignment}")
    config = {"command": go_drivers.member_command(client), "assignment": assignment}

    # First run: three members join one after another.
    first: list[Member] = []
    for i in range(3):
        held_before, marks = [m.owned for m in first], [m.mark() for m in first]
        newcomer = spawn(f"{client}-first-{i}", client, broker.bootstrap, topic, group, **config)
        first.append(newcomer)
        wait_balanced(first, quiet_s=2.0, what=f"{len(first)} members sharing the partitions")
        if assignment == "cooperative-sticky" and i > 0:
            revoked = assert_only_moved_revoked(first[:-1], held_before, marks)
            assert revoked == set(newcomer.owned), (
                f"revoked {sorted(revoked)}, the newcomer got {sorted(newcomer.owned)}"
            )
    assert_described(broker.bootstrap, group, first)
    before = produce(broker.bootstrap, topic, PER_RUN, f"{client}-a")
    read_once(first, before)
    for m in first:
        m.close()
    ends = {p: 1 + max(o for q, o, _ in before if q == p) for p in range(GROUP_PARTITIONS)}
    assert committed_offsets(broker.bootstrap, group, topic) == ends

    # Second run: two new members resume from the committed offsets.
    second = [
        spawn(f"{client}-second-{i}", client, broker.bootstrap, topic, group, **config)
        for i in range(2)
    ]
    wait_balanced(second, what="2 new members sharing the partitions")
    after = produce(broker.bootstrap, topic, PER_RUN, f"{client}-b", first=PER_RUN)
    read_once(second, after)
    for p in range(GROUP_PARTITIONS):
        offsets = [o for q, o, _ in consumed(second) if q == p]
        assert offsets[:1] == [ends[p]], f"partition {p}: resumed at {offsets[:1]}, not {ends[p]}"
    assert_described(broker.bootstrap, group, second)
    for m in second:
        m.close()
