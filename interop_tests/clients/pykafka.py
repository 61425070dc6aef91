"""pykafka 2.8: its producer and simple consumer, with the 0.9 and the 0.10 protocol.

pykafka speaks old protocol versions: with ``broker_version="0.9.0"`` (its
default) it sends no ApiVersions and uses Metadata v0, Produce v0 (message
sets of magic 0), Fetch v0 and ListOffsets v0; with ``"0.10.0"`` it asks
ApiVersions v0 first and writes magic 1 with timestamps (Produce v2), but
still reads with Fetch v1 (magic 0, no timestamps). Either way it reads only
magic 0 and 1, so everything it fetches has been converted down by the broker
if it was stored as record batches: no headers, no zstd; and Fetch v1 carries
magic 0, whose LZ4 framing is Kafka's old one (a wrong header checksum), which
pykafka decodes by its broker_version: only a "0.9.0" client reads LZ4.

pykafka routes records by key through a partitioner, so its records have
unique keys, never null. Readers are SimpleConsumers with no consumer group.
Metadata v0 cannot ask not to create a topic: describing one on a broker that
auto-creates creates it. pykafka's consumer groups (ZooKeeper's balanced
consumer, the managed one) have no rebalance callbacks: their tests are
pykafka's own (``interop_tests/test_pykafka.py``).
"""

from __future__ import annotations

import queue
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from pykafka import KafkaClient
from pykafka.common import CompressionType, OffsetType
from pykafka.exceptions import UnknownTopicOrPartition

from interop_tests.clients.adapter import (
    Capability,
    ClientAdapter,
    Counts,
    Edge,
    Offset,
    Start,
)
from interop_tests.support import PARTITIONS, Deadline, Got, Sample, make_samples

CODECS = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
}
REQUIRED_ACKS = {"0": 0, "1": 1, "all": -1}
TIMEOUT_S = 60.0


def new_client(bootstrap: str, broker_version: str) -> KafkaClient:
    return KafkaClient(hosts=bootstrap, broker_version=broker_version, socket_timeout_ms=30_000)


@contextmanager
def simple_consumer(client: KafkaClient, topic_name: str, **config) -> Iterator:
    topic = client.topics[topic_name]
    consumer = topic.get_simple_consumer(
        consumer_group=None,
        auto_commit_enable=False,
        auto_offset_reset=OffsetType.EARLIEST,
        reset_offset_on_start=True,
        consumer_timeout_ms=500,
        **config,
    )
    try:
        yield consumer
    finally:
        consumer.stop()


def to_got(message) -> Got:
    return Got(
        partition=message.partition_id,
        offset=message.offset,
        key=message.partition_key,
        value=message.value,
        headers=(),
        timestamp=message.timestamp or None,
    )


class PyKafka(ClientAdapter):
    codecs = tuple(CODECS)

    def __init__(self, broker_version: str) -> None:
        self.broker_version = broker_version
        self.name = f"pykafka-{broker_version.removesuffix('.0')}"
        with_time = {Capability.TIMESTAMPS} if broker_version != "0.9.0" else set()
        self.capabilities = frozenset(
            {
                Capability.ACKNOWLEDGES,
                Capability.ACKS,
                Capability.METADATA,
                Capability.SEEK,
                Capability.WATERMARKS,
                *with_time,
            }
        )
        self.read_codecs = frozenset(CODECS) - ({"lz4"} if broker_version != "0.9.0" else set())
        self.cross_codec = "gzip" if broker_version == "0.9.0" else "snappy"
        self.describe_creates_topics = True
        self.missing_topic_error = r"UnknownTopicOrPartition"

    def client(self, bootstrap: str) -> KafkaClient:
        return new_client(bootstrap, self.broker_version)

    def make_samples(
        self, count: int, tag: str, *, partitions: int = PARTITIONS, t0: int | None = None
    ) -> list[Sample]:
        return make_samples(
            count,
            tag,
            partitions=partitions,
            headers=False,
            null_keys=False,
            timestamps=Capability.TIMESTAMPS in self.capabilities,
            t0=t0,
        )

    def reader_for(self, codec: str) -> ClientAdapter:
        return self if codec in self.read_codecs else PYKAFKA_09

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[tuple[int, int]]:
        assert not idempotent, "pykafka has no idempotent producer"
        partition_of = {s.key: s.partition for s in samples}
        assert len(partition_of) == len(samples) and None not in partition_of, (
            "pykafka routes by key: keys must be unique and not null"
        )

        def partitioner(partitions, key):
            (partition,) = [p for p in partitions if p.id == partition_of[key]]
            return partition

        client = self.client(bootstrap)
        producer = client.topics[topic].get_producer(
            sync=False,
            delivery_reports=True,
            compression=CODECS[codec],
            partitioner=partitioner,
            linger_ms=10,
            min_queued_messages=200,
            max_queued_messages=len(samples) + 1,
            required_acks=REQUIRED_ACKS[acks],
            max_retries=0,  # a retry could reorder: any error should fail the test
        )
        with_time = Capability.TIMESTAMPS in self.capabilities
        try:
            for s in samples:
                assert with_time or s.timestamp is None
                producer.produce(s.value, partition_key=s.key, timestamp=s.timestamp)
        finally:
            producer.stop()  # flushes everything queued
        acked: dict[bytes, tuple[int, int]] = {}
        while True:
            try:
                message, error = producer.get_delivery_report(block=False)
            except queue.Empty:
                break
            assert error is None, f"pykafka delivery failed: {error!r}"
            acked[message.partition_key] = (message.partition_id, message.offset)
        assert len(acked) == len(samples), f"{len(acked)} reports for {len(samples)} records"
        return [acked[s.key] for s in samples]  # type: ignore[index]

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        client = self.client(bootstrap)
        held = client.topics[topic]  # partitions refer to their topic weakly: keep it alive
        ends = {p: r.offset[0] for p, r in held.latest_available_offsets().items()}
        firsts = {p: r.offset[0] for p, r in held.earliest_available_offsets().items()}
        resets, next_offset = [], {}
        for p in counts:
            start = (starts or {}).get(p, Edge.EARLIEST)
            assert isinstance(start, Edge | Offset), f"{self.name} cannot seek to {start}"
            if start == Edge.LATEST:
                reset, next_offset[p] = OffsetType.LATEST, ends[p]
            elif start == Edge.EARLIEST or start == Offset(firsts[p]):
                reset, next_offset[p] = OffsetType.EARLIEST, firsts[p]
            else:  # an integer is the last offset consumed: the next fetch is from the one after
                reset, next_offset[p] = start.offset - 1, start.offset
            resets.append((held.partitions[p], reset))
        read_of = dict.fromkeys(counts, 0)
        got: list[Got] = []
        with simple_consumer(client, topic, partitions=[held.partitions[p] for p in counts]) as c:
            c.reset_offsets(resets)
            deadline = Deadline(TIMEOUT_S)
            while not all(
                next_offset[p] >= ends[p] if n is None else read_of[p] >= n
                for p, n in counts.items()
            ):
                deadline.check(f"{dict(counts)} records of {topic} (read {len(got)})")
                message = c.consume(block=True)
                if message is not None:
                    got.append(to_got(message))
                    read_of[message.partition_id] += 1
                    next_offset[message.partition_id] = message.offset + 1
        return got

    def topics(self, bootstrap: str) -> set[str]:
        return {name.decode() for name in self.client(bootstrap).topics}

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        client = self.client(bootstrap)
        try:
            described = client.topics[topic]
        except UnknownTopicOrPartition:
            return None
        return {p: partition.leader.id for p, partition in described.partitions.items()}

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        """A producer needs the topic first: that is where pykafka fails."""
        client = self.client(bootstrap)
        try:
            client.topics[topic].get_producer(sync=True).produce(b"value")
        except UnknownTopicOrPartition as exc:
            return f"{type(exc).__name__}: {exc}"
        raise AssertionError(f"pykafka produced to {topic}, which does not exist")

    def watermarks(
        self, bootstrap: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[int, int]]:
        client = self.client(bootstrap)  # partitions refer to their cluster weakly
        held = client.topics[topic]
        firsts = held.earliest_available_offsets()
        ends = held.latest_available_offsets()
        return {p: (firsts[p].offset[0], ends[p].offset[0]) for p in partitions}


PYKAFKA_09 = PyKafka("0.9.0")
PYKAFKA_010 = PyKafka("0.10.0")
ADAPTERS = (PYKAFKA_09, PYKAFKA_010)
