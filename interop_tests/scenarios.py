"""What the scenario tests share: their parameters, drawn from the client registry, a
fixture that releases what the adapters hold, and the broker-side checks.

A scenario is parametrized with :func:`clients` (or :func:`clients_and_codecs`),
naming the capabilities it needs: it is generated for each adapter of
``interop_tests/clients/registry.py`` that declares them, and for no other.
Every module of scenarios uses :func:`release_clients`, so the JVMs the Java
adapters start on first use serve the whole session and are closed, cleanly,
at its end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence

import pytest

from interop_tests.broker import Broker
from interop_tests.clients.adapter import Capability, ClientAdapter
from interop_tests.clients.registry import ADAPTERS, with_capabilities
from interop_tests.protocol_client import ProtocolClient
from interop_tests.support import Deadline, Sample
from wirekafka.protocol.records.compression import CompressionType, compression_of
from wirekafka.protocol.records.record_batch import NO_PRODUCER_ID, BatchHeader, iter_batches

TIMEOUT_S = 60.0


def clients(
    *needed: Capability, where: Callable[[ClientAdapter], bool] = lambda client: True
) -> list:
    """``pytest.param`` of each adapter that declares ``needed`` (and passes ``where``)."""
    return [pytest.param(c, id=c.name) for c in with_capabilities(*needed) if where(c)]


def clients_and_codecs(*needed: Capability) -> list:
    """``pytest.param(adapter, codec)`` of each codec each adapter produces with."""
    return [
        pytest.param(c, codec, id=f"{c.name}-{codec}")
        for c in with_capabilities(*needed)
        for codec in c.codecs
    ]


def pairs(first: Iterable[ClientAdapter], second: Iterable[ClientAdapter]) -> list:
    """``pytest.param(a, b)`` of every adapter of ``first`` with every one of ``second``."""
    return [pytest.param(a, b, id=f"{a.name}-{b.name}") for a in first for b in second]


def as_read_by(reader: ClientAdapter, samples: Sequence[Sample]) -> list[Sample]:
    """The samples as ``reader`` hands them over: without headers if it reads none."""
    if not reader.supports(Capability.READS_HEADERS):
        return [dataclasses.replace(s, headers=()) for s in samples]
    if reader.reads_empty_header_as_null:
        return [
            dataclasses.replace(s, headers=tuple((k, v or None) for k, v in s.headers))
            for s in samples
        ]
    return list(samples)


_released = False


@pytest.fixture(scope="module")
def release_clients(request: pytest.FixtureRequest) -> Iterator[None]:
    """At the end of the session, close what the adapters keep (each JVM must exit 0)."""
    global _released
    if not _released:
        _released = True

        def release() -> None:
            problems = []
            for adapter in ADAPTERS:
                try:
                    adapter.close()
                except AssertionError as exc:
                    problems.append(f"{adapter.name}: {exc}")
            assert not problems, "\n".join(problems)

        request.session.addfinalizer(release)
    yield


# -- what the broker holds


def stored_batches(
    broker: Broker, topic: str, counts: dict[int, int]
) -> list[tuple[int, BatchHeader]]:
    """The (partition, header) of each batch the broker holds for ``topic`` below offset
    ``counts[partition]``, read with Fetch, in offset order per partition."""
    batches: list[tuple[int, BatchHeader]] = []
    with ProtocolClient(*broker.address) as client:
        for partition, count in counts.items():
            offset = 0
            deadline = Deadline(TIMEOUT_S)
            while offset < count:
                deadline.check(f"offset {count} of {topic} partition {partition}")
                answer = client.fetch(topic, offset, partition=partition)
                assert answer.error_code == 0, f"Fetch of {topic}/{partition}: {answer.error_code}"
                for _, header in iter_batches(
                    bytes(answer.records or b""), allow_partial_tail=True
                ):
                    if header.base_offset >= count:  # what was produced since
                        break
                    batches.append((partition, header))
                    offset = header.next_offset
    return batches


def assert_stored(
    broker: Broker,
    topic: str,
    counts: dict[int, int],
    codec: str,
    *,
    idempotent: bool,
    strict_codec: bool = True,
    producer_per_partition: bool = False,
) -> None:
    """The broker holds the records as record batches (magic 2, whatever the client wrote)
    compressed with ``codec`` (``strict_codec=False``: or uncompressed, where a client
    found compressing not worth it), with a producer id exactly when ``idempotent``: one
    producer's (one a partition with ``producer_per_partition``), whose sequence numbers
    count each partition's records from 0."""
    stored = stored_batches(broker, topic, counts)
    batches = [b for _, b in stored]
    assert sum(b.record_count for b in batches) == sum(counts.values())
    assert {b.magic for b in batches} == {2}, batches[:3]
    want = CompressionType[codec.upper()]
    codecs = {compression_of(b.attributes) for b in batches}
    if strict_codec:
        assert codecs == {want}, f"asked for {codec}; stored with {sorted(codecs)}"
    else:
        assert want in codecs and codecs <= {want, CompressionType.NONE}, (
            f"asked for {codec}; stored with {sorted(codecs)}"
        )
    if not idempotent:
        assert {b.producer_id for b in batches} == {NO_PRODUCER_ID}, batches[:3]
        return
    producers = {(b.producer_id, b.producer_epoch) for b in batches}
    assert all(pid >= 0 for pid, _ in producers), producers
    assert len(producers) == (len(counts) if producer_per_partition else 1), producers
    sequences: dict[int, int] = {}
    for partition, b in stored:
        assert b.base_sequence == sequences.get(partition, 0), (partition, b)
        sequences[partition] = b.base_sequence + b.record_count
