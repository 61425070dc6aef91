"""A compacted topic, written and read by kafka-python, compacted by the broker's cleaner.

The broker compacts every ``log.cleaner.backoff.ms``; each pass it makes is
recorded in ``cleaner-offset-checkpoint`` in the log dir, as in Kafka. After a
pass, reading the topic from the start gives at most one record per key
before the checkpointed offset, each key's latest value, and every record
after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from interop_tests.conftest import BrokerFactory
from wirekafka.storage.checkpoint import read_checkpoint

KEYS = 12
UPDATES = 600
TIMEOUT_S = 60.0


def test_the_broker_compacts_a_compacted_topic_and_checkpoints_it(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings={"log.cleaner.backoff.ms": "200"})
    topic = topic_name()
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

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0, batch_size=512)
    latest: dict[bytes, bytes] = {}
    for i in range(UPDATES):
        key, value = b"key-%02d" % (i % KEYS), b"value-%04d" % i
        producer.send(topic, key=key, value=value).get(timeout=30)
        latest[key] = value
    producer.close()

    checkpoint = broker.data_dir / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + TIMEOUT_S
    cleaned_to = 0
    while cleaned_to == 0:
        assert time.monotonic() < deadline, "no compaction pass was checkpointed"
        time.sleep(0.2)
        if checkpoint.exists():
            cleaned_to = read_checkpoint(checkpoint).get((topic, 0), 0)

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=3000)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    records = list(consumer)
    consumer.close()
    assert records and records[-1].offset == UPDATES - 1  # the newest is never compacted away
    clean = [r for r in records if r.offset < cleaned_to]
    assert len(clean) < cleaned_to  # records were removed
    assert len({r.key for r in clean}) == len(clean)  # at most one per key
    assert [r.offset for r in records if r.offset >= cleaned_to] == list(range(cleaned_to, UPDATES))
    last_seen = {r.key: r.value for r in records}
    assert last_seen == latest
