"""A broker whose disk fails, met by kafka-python and librdkafka producers.

Each broker runs in a mount namespace of the test's own (see
``mount_namespace.py``) where its data dir lies on a disk that fails for real:

* a full disk: a small tmpfs, where appends meet the kernel's ENOSPC;
* an I/O error: ext4 on a loop device whose backing file lies on a small
  tmpfs; when that fills, the loop device fails the writes and fsync returns
  EIO (or ENOSPC), as with a dying disk; ext4 then usually aborts its journal
  and turns read-only. The loop device must fail a write whole: see
  :func:`mount_loop`.

Expected, as Kafka answers: the produce request gets KAFKA_STORAGE_ERROR for
the partition and the broker goes on running. On a full disk nothing already
written is damaged and the partition takes records again once there is room.
After an fsync failed the partition stays offline (a later fsync could
succeed with the data gone) until a restart recovers it; every record
acknowledged before, with ``log.flush.interval.messages=1``, is then there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaStorageError

from interop_tests.broker import Broker
from interop_tests.conftest import HEAVY
from interop_tests.mount_namespace import MountNamespace, NamespacedBroker
from interop_tests.test_compaction import read_from_start

# With the other tests that push a broker to a resource's edge (interop_tests/conftest.py,
# HEAVY): one at a time, on one xdist worker.
pytestmark = HEAVY

MiB = 1024 * 1024
VALUE_BYTES = 20_000
TOPIC = "filling"
SETTINGS = {"log.segment.bytes": str(MiB), "num.partitions": "1"}


@pytest.fixture
def namespace() -> Iterator[MountNamespace]:
    held = MountNamespace()
    try:
        yield held
    finally:
        held.close()


def mount_loop(image: Path, disk: Path) -> str:
    """Shell lines mounting ext4 ``image`` on ``disk`` through a loop device that
    fails a write whole or not at all.

    Recent kernels' loop driver (6.18 here; buffered writes go through
    lo_rw_aio since "loop: stop using vfs_iter_{read,write} for buffered
    I/O", 2025) completes a write its backing file took only in part (a tmpfs
    that filled partway through) as a success, and the rest is never stored:
    ext4's fsync returns 0 and the tail of an acknowledged record reads back
    as zeros after a remount. With 4 KiB blocks (``mkfs.ext4 -b 4096``) and
    requests of at most one page, each write is one tmpfs page, which is
    allocated or not: a full tmpfs fails it with ENOSPC."""
    return (
        f"mount -o loop {image} {disk}\n"
        f"echo 4 > /sys/block/$(basename $(findmnt -no SOURCE {disk}))/queue/max_sectors_kb\n"
    )


def start_broker(namespace: MountNamespace, disk: Path, tmp_path: Path, **settings: str) -> Broker:
    broker = NamespacedBroker(namespace, disk / "data", SETTINGS | settings, tmp_path)
    broker.start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    return broker


def produce_until_refused(producer: KafkaProducer, tag: bytes, first_offset: int) -> list[bytes]:
    """Send records one at a time until one is refused with KAFKA_STORAGE_ERROR:
    the values acknowledged, each at the next offset from ``first_offset``."""
    acknowledged: list[bytes] = []
    for i in range(10_000):
        value = tag + b"-%05d-" % i + os.urandom(VALUE_BYTES // 2).hex().encode()
        try:
            metadata = producer.send(TOPIC, value=value, partition=0).get(timeout=30)
        except KafkaStorageError:
            return acknowledged
        assert metadata.offset == first_offset + len(acknowledged)
        acknowledged.append(value)
    raise AssertionError("the disk never failed")


def rdkafka_delivery_error(broker: Broker, value: bytes) -> str | None:
    """Produce one record with librdkafka (no retries): the error its delivery report names."""
    reports: list[confluent_kafka.KafkaError | None] = []
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "retries": 0, "enable.idempotence": False}
    )
    producer.produce(TOPIC, value=value, partition=0, on_delivery=lambda e, _: reports.append(e))
    assert producer.flush(30) == 0
    (error,) = reports
    return None if error is None else error.name()


def read_partition(broker: Broker) -> list[bytes]:
    return [record.value for record in read_from_start(broker, TOPIC)]


@pytest.mark.slow
def test_a_full_disk_refuses_appends_with_a_storage_error_and_loses_nothing(
    namespace: MountNamespace, tmp_path: Path
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    namespace.run(f"mount -t tmpfs -o size={8 * MiB} wirekafka-disk {disk}; mkdir {disk}/data")
    broker = start_broker(namespace, disk, tmp_path)
    filler = namespace.path(disk / "filler")
    filler.write_bytes(b"\0" * (5 * MiB))

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, linger_ms=0)
    written = produce_until_refused(producer, b"before", 0)
    assert len(written) * VALUE_BYTES > MiB  # it got a segment or two in first
    broker.assert_running()
    assert "No space left on device" in broker.output()
    assert produce_until_refused(producer, b"still-full", len(written)) == []
    assert rdkafka_delivery_error(broker, b"x" * VALUE_BYTES) == "KAFKA_STORAGE_ERROR"
    assert read_partition(broker) == written  # nothing half written

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


@pytest.mark.slow
def test_an_io_error_keeps_the_partition_offline_and_a_restart_recovers_every_ack(
    namespace: MountNamespace, tmp_path: Path
) -> None:
    backing, disk = tmp_path / "backing", tmp_path / "disk"
    backing.mkdir()
    disk.mkdir()
    image = backing / "disk.img"
    namespace.run(
        f"mount -t tmpfs -o size={12 * MiB} wirekafka-backing {backing}\n"
        f"truncate -s 256M {image}\n"
        f"mkfs.ext4 -q -b 4096 -E nodiscard {image}\n"  # 4 KiB blocks: see mount_loop
        f"head -c {3 * MiB} /dev/zero > {backing}/room\n"  # given back after the error
        + mount_loop(image, disk)
        + f"mkdir {disk}/data"
    )
    broker = start_broker(namespace, disk, tmp_path, **{"log.flush.interval.messages": "1"})

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, linger_ms=0)
    acknowledged = produce_until_refused(producer, b"before", 0)
    assert len(acknowledged) * VALUE_BYTES > 2 * MiB
    broker.assert_running()
    output = broker.output()  # the loop device reports a failed write as EIO or ENOSPC
    assert "flush failed: [Errno 5]" in output or "flush failed: [Errno 28]" in output
    # Room again on the backing store: the partition stays offline all the same
    # (here ext4 has usually aborted its journal too and refuses every write).
    namespace.run(f"rm {backing}/room")
    assert produce_until_refused(producer, b"offline", len(acknowledged)) == []
    assert rdkafka_delivery_error(broker, b"x") == "KAFKA_STORAGE_ERROR"
    producer.close()
    broker.stop()  # exits 0, but leaves out the clean-shutdown marker
    assert "not every log closed cleanly" in broker.stderr_text()

    # Power the disk off and on: what reached the image is all there is.
    namespace.run(
        f"umount {disk}\n"
        f"e2fsck -fy {image} >/dev/null || [ $? -le 1 ]\n"  # 1: errors corrected
        + mount_loop(image, disk)
    )
    broker.start()
    assert "no clean-shutdown marker" in broker.stderr_text()
    values = read_partition(broker)
    assert values[: len(acknowledged)] == acknowledged
    assert len(values) <= len(acknowledged) + 1  # at most the record whose fsync failed
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, linger_ms=0)
    assert producer.send(TOPIC, value=b"after", partition=0).get(timeout=30).offset == len(values)
    producer.close()
    broker.stop()
