"""The benchmark's socket→file limit (tools/produce_floor.py, run by bench_peers as the
peer ``socket→file``, and on its epoll loop as ``socket→file epoll``) takes
librdkafka's produces over a real socket.

confluent-kafka (librdkafka) produces to four partitions through the peer as
bench_peers starts it, in five rounds (so each partition takes several batches,
each after the last); every record is acknowledged at its partition's next
offset, and each partition's file holds its records, in record batches (which
librdkafka writes only to a broker whose versions say it can read them back),
at those offsets. When the run ends the process and its directory are gone.
A connection that sends a request the limit does not answer is closed, and the
others go on being served.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer

from tests.tools.floor_files import floor_batches
from tools.bench_peers import FloorPeer
from tools.produce_floor import partition_file
from wirekafka.protocol.records.record_batch import decode_batch

LOOPS = ["trio", "epoll"]
TOPIC = "floor"
PARTITIONS = 4
RECORDS = 2000
ROUNDS = 5


def stored(segment: Path) -> dict[int, bytes | None]:
    """The values of the records of the batches in ``segment`` by offset (every batch
    sound, only zeros after the last)."""
    data, entries = floor_batches(segment)
    return {
        record.offset: record.value
        for entry in entries
        for record in decode_batch(data, entry.position).records
    }


@pytest.mark.parametrize("loop", LOOPS)
def test_librdkafka_produces_through_the_socket_to_file_limit(loop: str) -> None:
    acknowledged: dict[int, dict[int, bytes | None]] = {p: {} for p in range(PARTITIONS)}
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failures.append(error)
        else:
            acknowledged[message.partition()][message.offset()] = message.value()

    peer = FloorPeer(loop)
    with peer.serving(TOPIC, PARTITIONS) as (bootstrap, (pid,)):
        directory = peer.directory
        assert directory is not None
        producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5})
        for start in range(0, RECORDS, RECORDS // ROUNDS):  # a batch or more a round
            for i in range(start, start + RECORDS // ROUNDS):
                value = b"record %d" % i
                producer.produce(TOPIC, value, partition=i % PARTITIONS, on_delivery=delivered)
                producer.poll(0)
            assert producer.flush(30) == 0, "every record is answered"
        assert not failures, failures
        for partition, by_offset in acknowledged.items():
            assert sorted(by_offset) == list(range(RECORDS // PARTITIONS)), partition
            assert stored(partition_file(directory, TOPIC, partition)) == by_offset, partition
    assert not Path(f"/proc/{pid}").exists()
    assert not directory.exists()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_request_not_answered_closes_only_its_connection(loop: str) -> None:
    with FloorPeer(loop).serving(TOPIC, 1) as (bootstrap, _):
        host, port = bootstrap.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as refused:
            # a Fetch v4 request header (no body needed: its api key is refused first)
            header = struct.pack(">hhih", 1, 4, 7, 0)
            refused.sendall(struct.pack(">i", len(header)) + header)
            assert refused.recv(1) == b"", "the connection is closed, not answered"
        producer = Producer({"bootstrap.servers": bootstrap, "acks": 1})
        producer.produce(TOPIC, b"after", partition=0)
        assert producer.flush(30) == 0, "another connection is served after that one closed"
