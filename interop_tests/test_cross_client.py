"""What each client writes, every other client reads identically.

Every adapter of the registry writes CROSS_RECORDS records once (to a topic of
its own, auto-created with 3 partitions) with whatever it supports: headers,
null keys, binary values, its own timestamps; every adapter then reads them
all back from the beginning: the same keys and values byte for byte, in the
same order per partition, at offsets 0, 1, 2...; the same headers when the
reader reads headers (pykafka does not: magic 0/1 has none, so the broker
down-converts record batches for it and drops them); the writer's timestamps
when it set them and the reader reads them.

Each writer uses its ``cross_codec``, one that every reader can read: pykafka
reads with Fetch v1, whose magic 0 cannot carry zstd, and with its 0.10
protocol expects magic-1 LZ4 framing where magic 0 has Kafka's old one; the
round trips cover every client's every codec. Every client that reads every
codec also reads a topic that kafka-python 3 wrote with each codec in turn (one
producer per codec, so each partition holds batches of all five).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from interop_tests.broker import Broker
from interop_tests.clients.adapter import CODECS, Capability, ClientAdapter
from interop_tests.clients.registry import ADAPTERS, REFERENCE
from interop_tests.scenarios import (
    as_read_by,
    clients,
    pairs,
    release_clients,  # noqa: F401  (fixture)
)
from interop_tests.support import (
    CROSS_RECORDS,
    PARTITIONS,
    Sample,
    assert_acknowledged_in_order,
    counts_of,
    mismatches,
)

pytestmark = pytest.mark.usefixtures("release_clients")


class Written:
    """Each writer's topic and records, produced on first use, once per module."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.done: dict[str, tuple[str, list[Sample]]] = {}

    def get(
        self, writer: ClientAdapter, topic_name: Callable[[str], str]
    ) -> tuple[str, list[Sample]]:
        if writer.name not in self.done:
            topic = topic_name(f"from-{writer.name}")
            samples = writer.make_samples(CROSS_RECORDS, f"from-{writer.name}")
            acks = writer.produce(self.broker.bootstrap, topic, samples, codec=writer.cross_codec)
            if writer.supports(Capability.ACKNOWLEDGES):
                assert_acknowledged_in_order(samples, acks or [])
            self.done[writer.name] = (topic, samples)
        return self.done[writer.name]


@pytest.fixture(scope="module")
def written(broker: Broker) -> Iterator[Written]:
    yield Written(broker)


@pytest.mark.parametrize(("writer", "reader"), pairs(ADAPTERS, ADAPTERS))
def test_reads_what_another_wrote(
    broker: Broker,
    written: Written,
    topic_name: Callable[[str], str],
    writer: ClientAdapter,
    reader: ClientAdapter,
) -> None:
    topic, samples = written.get(writer, topic_name)
    got = reader.read(broker.bootstrap, topic, counts_of(samples))
    problems = mismatches(
        as_read_by(reader, samples),
        got,
        headers=reader.supports(Capability.READS_HEADERS),
        timestamps=reader.supports(Capability.READS_TIMESTAMPS),
        partitions=range(PARTITIONS),
    )
    assert not problems, f"{reader.name} reading what {writer.name} wrote:\n" + "\n".join(problems)


class EveryCodec:
    """A topic the reference client wrote with each codec in turn, written on first use."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.done: tuple[str, list[Sample]] | None = None

    def get(self, topic_name: Callable[[str], str]) -> tuple[str, list[Sample]]:
        if self.done is None:
            topic = topic_name("every-codec")
            rounds = [REFERENCE.make_samples(400, f"every-{codec}") for codec in CODECS]
            for codec, samples in zip(CODECS, rounds, strict=True):
                REFERENCE.produce(self.broker.bootstrap, topic, samples, codec=codec)
            self.done = (topic, [s for samples in rounds for s in samples])
        return self.done


@pytest.fixture(scope="module")
def every_codec(broker: Broker) -> Iterator[EveryCodec]:
    yield EveryCodec(broker)


@pytest.mark.parametrize("reader", clients(where=lambda c: c.read_codecs >= set(CODECS)))
def test_reads_every_codec(
    broker: Broker,
    every_codec: EveryCodec,
    topic_name: Callable[[str], str],
    reader: ClientAdapter,
) -> None:
    topic, samples = every_codec.get(topic_name)
    got = reader.read(broker.bootstrap, topic, counts_of(samples))
    problems = mismatches(
        as_read_by(reader, samples),
        got,
        headers=reader.supports(Capability.READS_HEADERS),
        timestamps=reader.supports(Capability.READS_TIMESTAMPS),
    )
    assert not problems, f"{reader.name} reading every codec:\n" + "\n".join(problems)
