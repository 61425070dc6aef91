"""What each client writes, every other client reads identically.

Every writer produces CROSS_RECORDS records once (to a topic of its own,
auto-created with 3 partitions), with whatever it supports: headers, null
keys, binary values, its own timestamps. Every reader then reads them all
back from the beginning: the same keys and values byte for byte, in the
same order per partition, at offsets 0, 1, 2...; the same headers when the
reader supports them (pykafka does not: magic 0/1 has no headers, so the
broker down-converts record batches for it and drops them); the writer's
timestamps when it set them and the reader sees them.

Writers use codecs that every reader can read: pykafka reads with Fetch v1,
whose magic 0 cannot carry zstd, and with ``broker_version="0.10.0"`` it
expects magic-1 LZ4 framing where magic 0 has Kafka's old (broken-checksum)
framing; each client's own module covers all of its codecs.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from interop_tests import (
    test_aiokafka,
    test_confluent_kafka,
    test_kafka_python,
    test_kafka_python_2,
    test_kcat,
    test_pykafka,
)
from interop_tests.broker import Broker
from interop_tests.support import (
    CROSS_RECORDS,
    PARTITIONS,
    Got,
    Sample,
    counts_of,
    make_samples,
    mismatches,
)

Counts = dict[int, int]


@dataclass(frozen=True)
class Client:
    name: str
    write: Callable[[str, str, list[Sample]], None]
    read: Callable[[str, str, Counts], list[Got]]
    samples: Callable[[str], list[Sample]]
    reads_headers: bool = True
    reads_timestamps: bool = True


def full_samples(tag: str) -> list[Sample]:
    return make_samples(CROSS_RECORDS, tag)


# kafka-python 3


def kp3_write(bootstrap: str, topic: str, samples: list[Sample]) -> None:
    metadata = test_kafka_python.produce(bootstrap, topic, samples, "gzip")
    test_kafka_python.assert_acknowledged_in_order(samples, metadata)


def kp3_read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
    with test_kafka_python.consumer_for(bootstrap) as consumer:
        return test_kafka_python.read_all(consumer, topic, counts)


# kafka-python 2.0.2


def kp2_write(bootstrap: str, topic: str, samples: list[Sample]) -> None:
    acks = test_kafka_python_2.produce(bootstrap, topic, samples, "snappy")
    test_kafka_python_2.assert_acknowledged_in_order(samples, acks)


def kp2_read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
    _, got = test_kafka_python_2.consume(bootstrap, topic, counts)
    return got


# aiokafka


def aiokafka_write(bootstrap: str, topic: str, samples: list[Sample]) -> None:
    metadata = asyncio.run(test_aiokafka.produce(bootstrap, topic, samples, None))
    test_aiokafka.assert_acknowledged_in_order(samples, metadata)


async def _aiokafka_read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
    consumer = test_aiokafka.new_consumer(bootstrap)
    await consumer.start()
    try:
        return await test_aiokafka.read_all(consumer, topic, counts)
    finally:
        await consumer.stop()


def aiokafka_read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
    return asyncio.run(_aiokafka_read(bootstrap, topic, counts))


# confluent-kafka


def confluent_write(bootstrap: str, topic: str, samples: list[Sample]) -> None:
    delivered = test_confluent_kafka.produce(bootstrap, topic, samples, "snappy")
    test_confluent_kafka.assert_acknowledged_in_order(samples, delivered)


def confluent_read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
    with test_confluent_kafka.consumer_for(bootstrap) as consumer:
        return test_confluent_kafka.read_all(consumer, topic, counts)


# kcat


def kcat_samples(tag: str) -> list[Sample]:
    return test_kcat.samples_for(CROSS_RECORDS, tag, "gzip")


def kcat_write(bootstrap: str, topic: str, samples: list[Sample]) -> None:
    test_kcat.produce(bootstrap, topic, samples, "gzip")


def kcat_read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
    got = test_kcat.consume(bootstrap, topic, "-o", "beginning")
    assert len(got) == sum(counts.values())
    return got


# pykafka


def pykafka_samples(broker_version: str) -> Callable[[str], list[Sample]]:
    def make(tag: str) -> list[Sample]:
        return make_samples(
            CROSS_RECORDS,
            tag,
            headers=False,
            null_keys=False,
            timestamps=test_pykafka.timestamps_supported(broker_version),
        )

    return make


def pykafka_write(broker_version: str) -> Callable[[str, str, list[Sample]], None]:
    def write(bootstrap: str, topic: str, samples: list[Sample]) -> None:
        client = test_pykafka.new_client(bootstrap, broker_version)
        acks = test_pykafka.produce(
            client,
            topic,
            samples,
            "gzip" if broker_version == "0.9.0" else "snappy",
            timestamps=test_pykafka.timestamps_supported(broker_version),
        )
        test_pykafka.assert_acknowledged_in_order(samples, acks)

    return write


def pykafka_read(broker_version: str) -> Callable[[str, str, Counts], list[Got]]:
    def read(bootstrap: str, topic: str, counts: Counts) -> list[Got]:
        client = test_pykafka.new_client(bootstrap, broker_version)
        with test_pykafka.simple_consumer(client, topic) as consumer:
            return test_pykafka.read(consumer, sum(counts.values()), topic)

    return read


CLIENTS = {
    client.name: client
    for client in (
        Client("kafka-python-3", kp3_write, kp3_read, full_samples),
        Client("kafka-python-2", kp2_write, kp2_read, full_samples),
        Client("aiokafka", aiokafka_write, aiokafka_read, full_samples),
        Client("confluent-kafka", confluent_write, confluent_read, full_samples),
        Client("kcat", kcat_write, kcat_read, kcat_samples),
        Client(
            "pykafka-0.9",
            pykafka_write("0.9.0"),
            pykafka_read("0.9.0"),
            pykafka_samples("0.9.0"),
            reads_headers=False,
            reads_timestamps=False,
        ),
        Client(
            "pykafka-0.10",
            pykafka_write("0.10.0"),
            pykafka_read("0.10.0"),
            pykafka_samples("0.10.0"),
            reads_headers=False,
            reads_timestamps=False,
        ),
    )
}


class Written:
    """Each writer's topic and records, produced on first use, once per module."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.done: dict[str, tuple[str, list[Sample]]] = {}

    def get(self, writer: Client) -> tuple[str, list[Sample]]:
        if writer.name not in self.done:
            topic = f"cross-from-{writer.name}"
            samples = writer.samples(f"from-{writer.name}")
            writer.write(self.broker.bootstrap, topic, samples)
            self.done[writer.name] = (topic, samples)
        return self.done[writer.name]


@pytest.fixture(scope="module")
def written(broker: Broker) -> Iterator[Written]:
    yield Written(broker)


@pytest.mark.parametrize("reader", list(CLIENTS))
@pytest.mark.parametrize("writer", list(CLIENTS))
def test_reads_what_another_wrote(
    broker: Broker, written: Written, writer: str, reader: str
) -> None:
    writing, reading = CLIENTS[writer], CLIENTS[reader]
    topic, samples = written.get(writing)
    got = reading.read(broker.bootstrap, topic, counts_of(samples))
    if not reading.reads_headers:
        samples = [dataclasses.replace(s, headers=()) for s in samples]
    problems = mismatches(
        samples,
        got,
        headers=reading.reads_headers,
        timestamps=reading.reads_timestamps,
        partitions=range(PARTITIONS),
    )
    assert not problems, f"{reader} reading what {writer} wrote:\n" + "\n".join(problems)
