"""A broker whose disk fills up: a real ENOSPC, met by kafka-python producers.

The broker runs in a mount namespace of its own (``unshare --mount``, as root)
with a small tmpfs mounted over its data dir's parent, so its appends meet the
kernel's "No space left on device" and nothing else on the machine does. The
test reaches into that filesystem through ``/proc/<broker pid>/root`` to take
space with a filler file and to give it back.

Expected, as Kafka answers a failed append: the produce request gets
KAFKA_STORAGE_ERROR for the partition (kafka-python and librdkafka both see
it), the broker goes on running, every record acknowledged before is read back
unchanged, and once there is room again the same partition takes records.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaStorageError

from interop_tests.broker import Broker

DISK_BYTES = 8 * 1024 * 1024
FILLER_BYTES = 5 * 1024 * 1024
VALUE_BYTES = 20_000
TOPIC = "filling"


class SmallDiskBroker(Broker):
    """A broker whose data dir lies on a tmpfs of ``DISK_BYTES`` seen only by it."""

    def __init__(self, disk: Path, log_dir: Path) -> None:
        super().__init__(
            disk / "data",
            {"log.segment.bytes": str(1024 * 1024), "num.partitions": "1"},
            log_dir=log_dir,
        )
        self.disk = disk

    def command(self) -> list[str]:
        mount = (
            f"mount -t tmpfs -o size={DISK_BYTES} wirekafka-disk {shlex.quote(str(self.disk))}"
            f' && mkdir {shlex.quote(str(self.data_dir))} && exec "$@"'
        )
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "sh",
                *super().command()]  # fmt: skip

    def on_disk(self, name: str) -> Path:
        """A path on the broker's tmpfs, as this process reaches it."""
        assert self.process is not None
        return Path(f"/proc/{self.process.pid}/root") / self.disk.relative_to("/") / name


@pytest.fixture
def small_disk_broker(tmp_path: Path) -> Iterator[SmallDiskBroker]:
    broker = SmallDiskBroker(tmp_path / "disk", tmp_path)
    try:
        yield broker.start()
    finally:
        broker.close()


def produce_until_refused(
    producer: KafkaProducer, tag: bytes, first_offset: int
) -> tuple[list[bytes], KafkaStorageError]:
    """Send records one at a time until one is refused: the values acknowledged
    (each at the next offset from ``first_offset``), and the refusal."""
    acknowledged: list[bytes] = []
    for i in range(10_000):
        value = tag + b"-%05d-" % i + os.urandom(VALUE_BYTES // 2).hex().encode()
        try:
            metadata = producer.send(TOPIC, value=value, partition=0).get(timeout=30)
        except KafkaStorageError as exc:
            return acknowledged, exc
        assert metadata.offset == first_offset + len(acknowledged)
        acknowledged.append(value)
    raise AssertionError("the disk never filled up")


def rdkafka_delivery_error(broker: Broker, value: bytes) -> str | None:
    """Produce one record with librdkafka (no retries): the error name its delivery report gives."""
    reports: list[confluent_kafka.KafkaError | None] = []
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "retries": 0, "enable.idempotence": False}
    )
    producer.produce(TOPIC, value=value, partition=0, on_delivery=lambda e, _: reports.append(e))
    assert producer.flush(30) == 0
    (error,) = reports
    return None if error is None else error.name()


def read_partition(broker: Broker) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=3000)
    partition = TopicPartition(TOPIC, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    values = [record.value for record in consumer]
    consumer.close()
    return values


def test_a_full_disk_refuses_appends_with_a_storage_error_and_loses_nothing(
    small_disk_broker: SmallDiskBroker,
) -> None:
    broker = small_disk_broker
    mounts = (Path(f"/proc/{broker.process.pid}/mounts")).read_text()  # type: ignore[union-attr]
    assert f"wirekafka-disk {broker.disk} tmpfs" in mounts
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    filler = broker.on_disk("filler")
    with filler.open("wb") as out:
        out.write(b"\0" * FILLER_BYTES)

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, linger_ms=0)
    written, _ = produce_until_refused(producer, b"before", 0)
    assert len(written) * VALUE_BYTES > 1024 * 1024  # it got a segment or two in first
    broker.assert_running()
    assert "No space left on device" in broker.output()
    again, _ = produce_until_refused(producer, b"still-full", len(written))
    assert again == []  # still full: refused again, nothing half written
    assert rdkafka_delivery_error(broker, b"x" * VALUE_BYTES) == "KAFKA_STORAGE_ERROR"
    assert read_partition(broker) == written

    filler.unlink()  # room again: the same partition takes records
    after = []
    for i in range(20):
        value = b"after-%d" % i
        metadata = producer.send(TOPIC, value=value, partition=0).get(timeout=30)
        assert metadata.offset == len(written) + i
        after.append(value)
    producer.close()
    assert rdkafka_delivery_error(broker, b"from librdkafka") is None
    assert read_partition(broker) == written + after + [b"from librdkafka"]
    broker.stop()  # a clean stop, marker and checkpoints written
