"""What is acknowledged survives restarts and crashes; retried batches are not duplicated.

* kafka-python 3 (idempotent, acks=all) against a broker with
  ``log.flush.interval.messages=1``: everything acknowledged is there,
  byte for byte, after a clean restart (SIGTERM, start) and after SIGKILL and
  start, including a kill while a producer is in full flow.
* Idempotence, with the project's own blocking protocol client: a Produce
  sent twice with the same producer id, epoch and sequence (a retry after a
  lost response) gets the original base offset back and is stored once, also
  when the retry comes after a restart or a crash; a sequence gap gives
  OUT_OF_ORDER_SEQUENCE_NUMBER (45), an older epoch INVALID_PRODUCER_EPOCH (47).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError

from interop_tests.broker import Broker
from interop_tests.clients.kafka_python import (
    assert_acknowledged_in_order,
    consumer_for,
    produce,
    read_all,
)
from interop_tests.conftest import BrokerFactory
from interop_tests.protocol_client import ProtocolClient
from interop_tests.support import (
    PARTITIONS,
    Deadline,
    Got,
    assert_same_records,
    base_timestamp,
    counts_of,
    make_samples,
)
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.init_producer_id import InitProducerIdRequest
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import decode_batches, encode_batch

FLUSH_EVERY_RECORD = {"log.flush.interval.messages": "1"}
TIMEOUT_S = 60.0
PRODUCE_VERSION = 8
FETCH_VERSION = 11
LATEST = -1


def read_everything(broker: Broker, topic: str, counts: dict[int, int]) -> list[Got]:
    with consumer_for(broker.bootstrap) as consumer:
        return read_all(consumer, topic, counts)


@pytest.mark.parametrize("crash", [False, True], ids=["clean-restart", "sigkill"])
def test_acknowledged_records_survive(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str], crash: bool
) -> None:
    broker = broker_factory(settings=FLUSH_EVERY_RECORD)
    topic = topic_name()
    first = make_samples(3000, "durable-1")
    assert_acknowledged_in_order(first, produce(broker.bootstrap, topic, first, "gzip"))
    broker.restart(crash=crash)
    assert_same_records(first, read_everything(broker, topic, counts_of(first)), timestamps=True)

    # Appends continue after the ones from before the restart.
    second = make_samples(3000, "durable-2", t0=base_timestamp() + 100_000)
    metadata = produce(broker.bootstrap, topic, second, "zstd")
    before = counts_of(first)
    assert [(m.partition, m.offset) for m in metadata[:PARTITIONS]] == [
        (p, before[p]) for p in range(PARTITIONS)
    ]
    broker.restart(crash=crash)
    everything = [*first, *second]
    assert_same_records(
        everything, read_everything(broker, topic, counts_of(everything)), timestamps=True
    )


def test_sigkill_while_producing(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    """Kill -9 in the middle of a stream: every acknowledged record is there, in its place."""
    broker = broker_factory(settings=FLUSH_EVERY_RECORD)
    topic = topic_name()
    samples = make_samples(200_000, "killed", partitions=PARTITIONS)
    acked: dict[int, tuple[int, int]] = {}  # sample index -> (partition, offset)
    failed: list[int] = []
    enough = threading.Event()
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        linger_ms=2,
        request_timeout_ms=5_000,
        delivery_timeout_ms=8_000,
    )

    def on_success(index: int, metadata) -> None:
        acked[index] = (metadata.partition, metadata.offset)
        if len(acked) >= 5000:
            enough.set()

    def on_error(index: int, _exc: Exception) -> None:
        failed.append(index)

    def run() -> None:
        for index, s in enumerate(samples):
            if broker_killed.is_set():
                break
            future = producer.send(
                topic,
                key=s.key,
                value=s.value,
                headers=list(s.headers),
                partition=s.partition,
                timestamp_ms=s.timestamp,
            )
            future.add_callback(on_success, index)
            future.add_errback(on_error, index)

    broker_killed = threading.Event()
    sender = threading.Thread(target=run, daemon=True)
    sender.start()
    try:
        assert enough.wait(TIMEOUT_S), f"only {len(acked)} records acknowledged"
        broker.kill()
        broker_killed.set()
        sender.join(TIMEOUT_S)
        snapshot = dict(acked)
        assert len(snapshot) >= 5000
        broker.start()
    finally:
        # The producer retries what was in flight once the broker is back; it must
        # be done before the log is read, or its appends race the reads.
        with contextlib.suppress(KafkaTimeoutError):
            producer.close(timeout=TIMEOUT_S)
    # Per partition, the log must hold a prefix of what was sent, in order, covering
    # every acknowledged record at its acknowledged offset.
    with consumer_for(broker.bootstrap) as consumer:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        ends = consumer.end_offsets(tps)
        counts = {tp.partition: ends[tp] for tp in tps}
        got = read_all(consumer, topic, counts)
    sent_by_partition: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    for index, s in enumerate(samples):
        sent_by_partition[s.partition].append(index)
    stored = [samples[i] for p in range(PARTITIONS) for i in sent_by_partition[p][: counts[p]]]
    assert_same_records(stored, got, timestamps=True, what="after SIGKILL")
    for index, (partition, offset) in snapshot.items():
        assert samples[index].partition == partition
        assert offset < counts[partition], (
            f"acknowledged record {index} at {partition}/{offset} is gone "
            f"(the partition ends at {counts[partition]})"
        )
        assert sent_by_partition[partition][offset] == index


# -- idempotence, with our own protocol client


def connect(broker: Broker) -> ProtocolClient:
    return ProtocolClient(broker.host or "127.0.0.1", broker.port or 0, timeout_s=TIMEOUT_S)


def create_topic(client: ProtocolClient, topic: str) -> None:
    """Auto-create through Metadata and wait until partition 0 has a leader."""
    deadline = Deadline(TIMEOUT_S)
    while True:
        deadline.check(f"topic {topic}")
        response = client.request(
            ApiKey.METADATA,
            4,
            MetadataRequest(
                topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
            ),
        )
        (found,) = response.topics
        if found.error_code == 0 and any(
            p.partition_index == 0 and p.leader_id >= 0 for p in found.partitions
        ):
            return


def init_producer_id(client: ProtocolClient) -> tuple[int, int]:
    response = client.request(
        ApiKey.INIT_PRODUCER_ID,
        1,
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
    )
    assert response.error_code == 0, f"InitProducerId failed with {response.error_code}"
    assert response.producer_id >= 0
    assert response.producer_epoch >= 0
    return response.producer_id, response.producer_epoch


def batch(
    producer: tuple[int, int], sequence: int, count: int, tag: str, *, epoch: int | None = None
) -> bytes:
    producer_id, producer_epoch = producer
    t0 = base_timestamp()
    return encode_batch(
        [
            Record(i, t0 + i, f"{tag}-{i}".encode(), f"value {tag} {i}".encode() * 3, [("h", b"x")])
            for i in range(count)
        ],
        compression=CompressionType.GZIP,
        producer_id=producer_id,
        producer_epoch=producer_epoch if epoch is None else epoch,
        base_sequence=sequence,
    )


def send(client: ProtocolClient, topic: str, records: bytes) -> tuple[int, int]:
    """Produce one batch to partition 0 with acks=all; (error code, base offset)."""
    return client.produce(topic, records, version=PRODUCE_VERSION, acks=-1)


def end_offset(client: ProtocolClient, topic: str) -> int:
    (partition,) = client.list_offsets(topic, LATEST, version=1)
    assert partition.error_code == 0
    return partition.offset


def stored_keys(client: ProtocolClient, topic: str) -> list[tuple[int, bytes | None]]:
    """(offset, key) of every record of partition 0."""
    partition = client.fetch(
        topic, 0, version=FETCH_VERSION, max_wait_ms=0, min_bytes=0, max_bytes=64 * 1024 * 1024
    )
    assert partition.error_code == 0
    records = bytes(partition.records or b"")
    return [
        (record.offset, record.key)
        for decoded in decode_batches(records, allow_partial_tail=True)
        for record in decoded.records
    ]


def expected_keys(*runs: tuple[int, str, int]) -> list[tuple[int, bytes]]:
    """(base offset, tag, count) of each stored batch, as stored_keys gives them."""
    return [(base + i, f"{tag}-{i}".encode()) for base, tag, count in runs for i in range(count)]


@pytest.mark.parametrize("restart", [None, "clean", "sigkill"])
def test_retried_batch_is_stored_once(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str], restart: str | None
) -> None:
    broker = broker_factory(settings=FLUSH_EVERY_RECORD)
    topic = topic_name()
    with connect(broker) as client:
        create_topic(client, topic)
        producer = init_producer_id(client)
        first, second = batch(producer, 0, 5, "a"), batch(producer, 5, 7, "b")
        assert send(client, topic, first) == (0, 0)
        assert send(client, topic, second) == (0, 5)
    if restart is not None:
        broker.restart(crash=restart == "sigkill")
    with connect(broker) as client:
        # The response to `second` was "lost": the producer sends it again, then `first` too.
        assert send(client, topic, second) == (0, 5)
        assert send(client, topic, first) == (0, 0)
        assert end_offset(client, topic) == 12
        assert stored_keys(client, topic) == expected_keys((0, "a", 5), (5, "b", 7))
        # The sequence goes on after the retries.
        assert send(client, topic, batch(producer, 12, 3, "c")) == (0, 12)
        assert end_offset(client, topic) == 15
        assert stored_keys(client, topic) == expected_keys((0, "a", 5), (5, "b", 7), (12, "c", 3))


def test_sequence_gap_and_old_epoch(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory()
    topic = topic_name()
    with connect(broker) as client:
        create_topic(client, topic)
        producer = init_producer_id(client)
        producer_id, epoch = producer
        assert send(client, topic, batch(producer, 0, 4, "a")) == (0, 0)
        # A gap: sequence 4 is next, 6 is out of order; nothing is appended.
        code, _ = send(client, topic, batch(producer, 6, 2, "gap"))
        assert code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
        assert end_offset(client, topic) == 4
        assert send(client, topic, batch(producer, 4, 2, "b")) == (0, 4)
        # The producer bumps its epoch (as idempotent producers do, KIP-360) and starts
        # again at sequence 0; the old epoch is fenced from then on.
        assert send(client, topic, batch(producer, 0, 3, "c", epoch=epoch + 1)) == (0, 6)
        code, _ = send(client, topic, batch((producer_id, epoch), 6, 1, "old"))
        assert code == ErrorCode.INVALID_PRODUCER_EPOCH == 47
        assert end_offset(client, topic) == 9
        assert stored_keys(client, topic) == expected_keys((0, "a", 4), (4, "b", 2), (6, "c", 3))
