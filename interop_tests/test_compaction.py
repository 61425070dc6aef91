"""A compacted topic, written and read by kafka-python, compacted by the broker's cleaner.

The broker compacts every ``log.cleaner.backoff.ms``; each pass it makes is
recorded in ``cleaner-offset-checkpoint`` in the log dir, as in Kafka. After a
pass, reading the topic from the start gives at most one record per key
before the checkpointed offset and each key's latest value. An idempotent
producer's sequence numbers outlive its compacted records, across a restart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import confluent_kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.consumer.fetcher import ConsumerRecord

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.polling import wait_for
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from wirekafka.storage.checkpoint import read_checkpoint

KEYS = 12
UPDATES = 600
TIMEOUT_S = 60.0
CLEAN_OFTEN = {"log.cleaner.backoff.ms": "200"}
MiB = 1024 * 1024


def create_compacted_topic(broker: Broker, topic: str) -> None:
    """One partition, small segments, compacted once a tenth of it is new."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": "4096",
            "min.cleanable.dirty.ratio": "0.1",
        }
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        (entries,) = described.values()
        assert entries[topic]["min.cleanable.dirty.ratio"]["value"] == "0.1"
    finally:
        admin.close()


def wait_for_a_pass(broker: Broker, topic: str, past: int) -> int:
    """The first dirty offset of partition 0 once a compaction pass has moved it past ``past``."""
    checkpoint = broker.data_dir / "cleaner-offset-checkpoint"

    def cleaned_to() -> int:
        return read_checkpoint(checkpoint).get((topic, 0), 0) if checkpoint.exists() else 0

    wait_for(lambda: cleaned_to() > past, f"a compaction pass past offset {past}", TIMEOUT_S, 0.2)
    return cleaned_to()


def read_from_start(broker: Broker, topic: str, *, compacted: bool = False) -> list[ConsumerRecord]:
    """Partition 0 of ``topic`` from its first offset to its end offset (a
    ``compacted`` one may have none of the records before that offset)."""
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS
    )
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    records = read_to_end(consumer, may_end_short=compacted)
    consumer.close()
    return records


def test_the_broker_compacts_a_compacted_topic_and_checkpoints_it(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=CLEAN_OFTEN)
    topic = topic_name()
    create_compacted_topic(broker, topic)

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0, batch_size=512)
    latest: dict[bytes, bytes] = {}
    for i in range(UPDATES):
        key, value = b"key-%02d" % (i % KEYS), b"value-%04d" % i
        producer.send(topic, key=key, value=value).get(timeout=30)
        latest[key] = value
    producer.close()

    # Passes go on meanwhile; what was clean before the read is clean in it.
    cleaned_to = wait_for_a_pass(broker, topic, past=0)
    records = read_from_start(broker, topic, compacted=True)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets)) and offsets[-1] == UPDATES - 1  # the newest stays
    clean = [r for r in records if r.offset < cleaned_to]
    assert len(clean) < cleaned_to  # records were removed
    assert len({r.key for r in clean}) == len(clean)  # at most one per key
    assert {r.key: r.value for r in records} == latest

    # the passes ran in the broker's child process, which goes with the broker
    assert broker.process is not None
    children = cleaner_children(broker.process.pid)
    assert len(children) == 1, children
    broker.stop()
    assert not Path(f"/proc/{children[0]}").exists()


def cleaner_children(pid: int) -> list[int]:
    """The child processes of ``pid`` running the cleaner (from /proc)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines())
            cmdline = (status.parent / "cmdline").read_bytes()
        except (OSError, ValueError):  # gone meanwhile, or a line without a tab
            continue
        if int(fields["PPid"]) == pid and b"wirekafka.storage.cleaner_process" in cmdline:
            found.append(int(status.parent.name))
    return found


@pytest.mark.slow
def test_an_idempotent_producer_goes_on_after_compaction_and_a_restart(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    """librdkafka's idempotent producer writes, another producer supersedes all
    but its first record, the cleaner removes them, the broker restarts (and
    rebuilds producer state from the log): the same producer's next record,
    numbered after the removed ones, is accepted."""
    broker = broker_factory(settings=CLEAN_OFTEN)
    topic = topic_name()
    create_compacted_topic(broker, topic)
    errors: list[str] = []

    def delivered(error: confluent_kafka.KafkaError | None, message: object) -> None:
        if error is not None:
            errors.append(str(error))

    idempotent = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 0}
    )

    def send(key: bytes, value: bytes) -> None:
        idempotent.produce(topic, key=key, value=value, partition=0, on_delivery=delivered)
        assert idempotent.flush(30) == 0

    send(b"kept", b"first")
    for i in range(120):  # one batch each
        send(b"key-%d" % (i % 6), b"idempotent-%d" % i)
    last_idempotent = 120
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(6):
        plain.send(topic, key=b"key-%d" % i, value=b"plain").get(timeout=30)
    for i in range(120):  # rolls the segments holding the idempotent batches away
        plain.send(topic, key=b"filler", value=b"%d" % i).get(timeout=30)
    plain.close()
    wait_for_a_pass(broker, topic, past=last_idempotent)

    broker.stop()
    broker.start()
    send(b"after", b"the restart")
    idempotent.flush(30)
    assert errors == []
    latest = {r.key: r.value for r in read_from_start(broker, topic, compacted=True)}
    assert latest[b"kept"] == b"first" and latest[b"after"] == b"the restart"
    assert all(latest[b"key-%d" % i] == b"plain" for i in range(6))


@pytest.mark.slow
def test_max_compaction_lag_cleans_what_the_dirty_ratio_would_leave(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    """Two topics with a big clean part and one small dirty segment, far below
    min.cleanable.dirty.ratio: the one with max.compaction.lag.ms set is
    cleaned once that segment's first record is older than the lag; the other
    is not. Record times are set by the producer: segments roll without waiting."""
    broker = broker_factory(settings=CLEAN_OFTEN)
    lagged, plain = topic_name("lagged"), topic_name("plain")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        # One segment holds all the first records, so no pass can start before
        # the late record rolls it: the first pass then cleans all of it.
        compacted = {"cleanup.policy": "compact", "segment.bytes": str(MiB), "segment.ms": "3000"}
        admin.create_topics(
            [
                NewTopic(lagged, 1, 1, topic_configs=compacted | {"max.compaction.lag.ms": "3000"}),
                NewTopic(plain, 1, 1, topic_configs=compacted),
            ]
        )
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, lagged)])
        (entries,) = described.values()
        assert entries[lagged]["max.compaction.lag.ms"]["value"] == "3000"
    finally:
        admin.close()

    now_ms = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    late_offsets = {}
    for topic in (lagged, plain):
        for i in range(2000):  # distinct keys: compaction keeps them all
            producer.send(
                topic, key=b"key-%04d" % i, value=b"v" * 100, timestamp_ms=now_ms - 60_000
            )
        producer.flush()
        # 30 s later in record time: past segment.ms, so it starts a new segment
        sent = producer.send(topic, key=b"key-0000", value=b"late", timestamp_ms=now_ms - 30_000)
        late_offsets[topic] = sent.get(timeout=30).offset
    # in each, passes clean everything before the late record's segment
    for topic in (lagged, plain):
        assert wait_for_a_pass(broker, topic, past=late_offsets[topic] - 1) == late_offsets[topic]
    for topic in (lagged, plain):  # rolls the late record's segment: now dirty
        producer.send(topic, key=b"key-0001", value=b"roller", timestamp_ms=now_ms).get(timeout=30)
    producer.close()
    # one record in the dirty segment against ~2000 clean ones, but older than 3 s
    assert wait_for_a_pass(broker, lagged, past=late_offsets[lagged]) > late_offsets[lagged]
    records = read_from_start(broker, lagged, compacted=True)
    assert [r.value for r in records if r.key == b"key-0001"] == [b"roller"]
    assert [r.value for r in records if r.key == b"key-0000"] == [b"late"]
    assert len(records) == 2000

    time.sleep(1.0)  # five more cleaner rounds: the plain topic's dirty ratio keeps it waiting
    checkpoint = read_checkpoint(broker.data_dir / "cleaner-offset-checkpoint")
    assert checkpoint[(plain, 0)] == late_offsets[plain]
    records = read_from_start(broker, plain)
    assert [r.value for r in records if r.key == b"key-0001"] == [b"v" * 100, b"roller"]
