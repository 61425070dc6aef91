"""Data already on disk never stops the broker.

A record batch whose header and CRC are sound but whose records are junk is
what a client could once produce. Such a batch is written into a segment file
while the broker is stopped (appended to ``__consumer_offsets``; written over
a batch of a compacted topic, the CRC computed again): the broker starts,
logs the batch with its topic-partition and offsets, and goes on. Groups
commit and fetch offsets again, keeping those committed before; the cleaner
compacts around the batch, keeping it byte for byte, across passes and a
restart; consumers that skip it read each key's latest record.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import CorruptRecordError
from kafka.structs import OffsetAndMetadata

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.reading import IDLE_TIMEOUT_MS, iter_to_end
from interop_tests.test_compaction import create_compacted_topic, wait_for_a_pass
from wirekafka.groups.offsets_topic import partition_for_group
from wirekafka.protocol.records.record_batch import (
    CRC_OFFSET,
    HEADER_BYTES,
    BatchHeader,
    compute_crc,
    iter_batches,
    set_base_offset,
)

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 4
TIMEOUT_S = 60.0
UNPARSABLE = "holds records that cannot be parsed"


def spoil_records(batch: bytearray, position: int, header: BatchHeader) -> None:
    """Overwrite the records of the batch at ``position`` with 0xff bytes (varints
    that never end) and compute its CRC again: a sound header over junk."""
    start, end = position + HEADER_BYTES, position + header.size_bytes
    batch[start:end] = b"\xff" * (end - start)
    crc = compute_crc(batch, position, header.size_bytes)
    struct.pack_into(">I", batch, position + CRC_OFFSET, crc)


def segments(broker: Broker, topic: str, partition: int) -> list[Path]:
    return sorted((broker.data_dir / f"{topic}-{partition}").glob("*.log"))


def append_junk_batch(broker: Broker, topic: str, partition: int, template: bytes) -> int:
    """Append a copy of the partition's first batch, its records junk, at the log
    end of its last segment (the broker is stopped); its base offset."""
    path = segments(broker, topic, partition)[-1]
    data = path.read_bytes()
    *_, (_, last) = iter_batches(data)
    junk = bytearray(template)
    [(_, header)] = iter_batches(junk)
    spoil_records(junk, 0, header)
    set_base_offset(junk, 0, last.next_offset)
    path.write_bytes(data + bytes(junk))
    return last.next_offset


def commit(broker: Broker, group: str, offsets: dict[TopicPartition, int]) -> None:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group)
    try:
        consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
    finally:
        consumer.close()


def committed(broker: Broker, group: str, partitions: list[TopicPartition]) -> dict:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group)
    try:
        return {tp: consumer.committed(tp) for tp in partitions}
    finally:
        consumer.close()


def test_a_junk_batch_in_the_offsets_topic_does_not_stop_the_broker(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(
        settings={"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "num.partitions": "3"}
    )
    topic, group = topic_name(), "junk-group"
    tps = [TopicPartition(topic, p) for p in range(3)]
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send(topic, b"x").get(timeout=30)  # auto-creates the topic
    producer.close()
    commit(broker, group, {tps[0]: 5, tps[1]: 6})
    broker.stop()

    partition = partition_for_group(group, OFFSETS_PARTITIONS)
    first_segment = segments(broker, OFFSETS_TOPIC, partition)[0].read_bytes()
    [(_, first)] = list(iter_batches(first_segment))[:1]
    junk_at = append_junk_batch(broker, OFFSETS_TOPIC, partition, first_segment[: first.size_bytes])
    broker.start()  # the old broker exited here with a ProtocolError traceback

    reports = [line for line in broker.stderr_text().splitlines() if UNPARSABLE in line]
    assert len(reports) == 1, broker.output()
    assert f"{OFFSETS_TOPIC}-{partition}: the batch at offsets {junk_at}.." in reports[0]
    assert committed(broker, group, tps) == {tps[0]: 5, tps[1]: 6, tps[2]: None}
    commit(broker, group, {tps[1]: 16, tps[2]: 17})
    assert committed(broker, group, tps) == {tps[0]: 5, tps[1]: 16, tps[2]: 17}

    broker.restart()
    assert committed(broker, group, tps) == {tps[0]: 5, tps[1]: 16, tps[2]: 17}
    broker.assert_running()
    broker.stop()


def read_skipping(broker: Broker, topic: str, junk: range) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of partition 0 from its start, as a kafka-python consumer
    reads it that seeks past the batch it cannot parse (``junk``, its offsets)."""
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    skipped = 0
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        assert time.monotonic() < deadline, "timed out reading the topic"
        try:
            got.extend((r.offset, r.key, r.value) for r in iter_to_end(consumer))
            break
        except CorruptRecordError:
            assert consumer.position(tp) <= junk.start, consumer.position(tp)  # stopped before it
            consumer.seek(tp, junk.stop)
            skipped += 1
    consumer.close()
    assert skipped == 1, got[:5]  # the batch is still there, and the consumer met it once
    return got


@pytest.mark.slow
def test_a_junk_batch_in_a_compacted_topic_does_not_stop_the_cleaner(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    # no pass before the junk is in place: a pass reads every segment from offset 0
    broker = broker_factory(settings={"log.cleaner.backoff.ms": "600000"})
    topic = topic_name()
    create_compacted_topic(broker, topic)  # segment.bytes 4096
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    latest: dict[bytes, bytes] = {}
    for i in range(300):
        key, value = b"key-%02d" % (i % 12), b"value-%04d" % i
        producer.send(topic, key=key, value=value, partition=0).get(timeout=30)
        latest[key] = value
    producer.close()
    broker.stop()

    path = segments(broker, topic, 0)[0]  # the oldest segment: not the active one
    data = bytearray(path.read_bytes())
    position, header = list(iter_batches(data))[3]
    spoil_records(data, position, header)
    path.write_bytes(bytes(data))
    junk = range(header.base_offset, header.last_offset + 1)
    spoiled = bytes(data[position + 8 : position + header.size_bytes])  # all but its offset

    broker.overrides["log.cleaner.backoff.ms"] = "200"
    broker.start()
    cleaned_to = wait_for_a_pass(broker, topic, past=0)
    assert cleaned_to > junk.stop
    time.sleep(1.0)  # more passes run meanwhile
    broker.assert_running()
    reports = [line for line in broker.stderr_text().splitlines() if UNPARSABLE in line]
    assert len(reports) == 1, broker.output()
    assert f"{topic}-0: the batch at offsets {junk.start}..{junk.stop - 1}" in reports[0]
    assert "compacted" in broker.stderr_text()  # the pass went on around it

    broker.restart()
    records = read_skipping(broker, topic, junk)
    assert {key: value for _, key, value in records} == latest
    clean = [(key, offset) for offset, key, _ in records if offset < cleaned_to]
    assert len(clean) == len({key for key, _ in clean})  # compacted: one per key
    assert len(records) < 300 - len(junk)
    # the junk is kept byte for byte by the cleaner
    stored = b"".join(p.read_bytes() for p in segments(broker, topic, 0))
    assert spoiled in stored
    broker.assert_running()
    broker.stop()
