"""A decompression bomb costs the broker bounded memory and stalls no other client.

A batch of gzip that inflates 1000-fold is refused at produce time once its
records pass the inflation limit (64 x ``message.max.bytes``), without ever
holding them. One stored before records were checked (placed in the segment
file here, as an older broker would have kept it) goes to Fetch v4+ clients
as it is, with sendfile; old clients (Fetch v0-v3) need it converted, which
streams it and gives up at the same limit. A bomb within the limit converts,
in bounded memory. Meanwhile a second client's requests keep being answered
promptly: the heavy work runs in worker threads, not on the event loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interop_tests.broker import Broker
from interop_tests.conftest import HEAVY
from interop_tests.protocol_client import ProtocolClient
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.message_set import decode_message_set
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch, set_base_offset

# With the other tests that push a broker to a resource's edge (interop_tests/conftest.py,
# HEAVY): one at a time, on one xdist worker.
pytestmark = HEAVY

MESSAGE_MAX_BYTES = 262_144  # an inflation limit of 16 MiB
INFLATION_LIMIT = 64 * MESSAGE_MAX_BYTES
RECORD_BYTES = 64 * 1024


def bomb(inflated_bytes: int, base_offset: int = 0) -> bytes:
    """A gzip batch of zero-filled records that inflates to about ``inflated_bytes``."""
    count = inflated_bytes // RECORD_BYTES
    zeros = b"\x00" * RECORD_BYTES
    records = [Record(i, 1_700_000_000_000, b"k", zeros) for i in range(count)]
    batch = bytearray(encode_batch(records, compression=CompressionType.GZIP))
    set_base_offset(batch, 0, base_offset)
    return bytes(batch)


def peak_rss_mib(broker: Broker) -> float:
    assert broker.process is not None
    for line in Path(f"/proc/{broker.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def reset_peak_rss(broker: Broker) -> None:
    assert broker.process is not None
    Path(f"/proc/{broker.process.pid}/clear_refs").write_text("5")


class Pinger:
    """A second client asking for metadata over and over; notes when each answer came."""

    def __init__(self, broker: Broker) -> None:
        self.client = ProtocolClient(*broker.address)
        self.answered_at: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.client.request(ApiKey.METADATA, 1, MetadataRequest(topics=[]))
            self.answered_at.append(time.perf_counter())
            time.sleep(0.002)

    def __enter__(self) -> Pinger:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.client.close()


def assert_answered_throughout(answered_at: list[float], bombs: list[tuple[float, float]]) -> None:
    """The second client kept being answered while the bombs were handled: at least
    two answers within each bomb's span on average. Had a bomb held the event loop,
    its span would hold none (every ping waiting for it to end). A count, not a
    time, so that a loaded machine slowing everything down does not matter."""
    inside = sum(any(start < t < end for start, end in bombs) for t in answered_at)
    spans = ", ".join(f"{end - start:.3f}" for start, end in bombs)
    assert inside >= 2 * len(bombs), (
        f"{inside} answers to the second client while the bombs were handled (spans {spans} s)"
    )


def create(client: ProtocolClient, topic: str) -> None:
    """Metadata for the topic creates it (auto-creation, one partition)."""
    response = client.request(
        ApiKey.METADATA, 1, MetadataRequest(topics=[MetadataRequestTopic(name=topic)])
    )
    assert response.topics[0].error_code == ErrorCode.NONE


def fetch(client: ProtocolClient, topic: str, offset: int, version: int) -> tuple[int, bytes]:
    response = client.request(
        ApiKey.FETCH,
        version,
        FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(
                            partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                        )
                    ],
                )
            ],
        ),
    )
    (partition,) = response.responses[0].partitions
    return partition.error_code, bytes(partition.records or b"")


@pytest.fixture
def bomb_broker(broker_factory) -> Iterator[Broker]:
    yield broker_factory(
        settings={"num.partitions": "1", "message.max.bytes": str(MESSAGE_MAX_BYTES)}
    )


def place_in_segment(broker: Broker, topic: str, batch: bytes) -> None:
    """Append ``batch`` to the partition's segment file while the broker is stopped,
    as a broker that stored it before records were checked would have left it."""
    broker.stop()
    (segment,) = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))
    with segment.open("ab") as file:
        file.write(batch)
    broker.start()


def test_a_bomb_is_refused_at_produce_in_bounded_memory_and_stalls_nobody(
    bomb_broker: Broker,
) -> None:
    giant = bomb(200 * 1024 * 1024)  # 200 MiB of records in ~200 KB
    assert len(giant) < 300_000
    with ProtocolClient(*bomb_broker.address) as client:
        create(client, "bombed")
        assert client.produce("bombed", encode_batch([Record(0, 1, b"k", b"good")])) == (0, 0)
        reset_peak_rss(bomb_broker)
        before = peak_rss_mib(bomb_broker)
        spans = []
        with Pinger(bomb_broker) as pinger:
            for _ in range(4):
                started = time.perf_counter()
                code, _ = client.produce("bombed", giant)
                spans.append((started, time.perf_counter()))
                assert code == ErrorCode.MESSAGE_TOO_LARGE
        grown = peak_rss_mib(bomb_broker) - before
        assert grown < INFLATION_LIMIT / 2**20, f"the broker grew by {grown:.0f} MiB"
        assert_answered_throughout(pinger.answered_at, spans)
        code, records = fetch(client, "bombed", 0, 12)
        assert code == ErrorCode.NONE
        assert len(records) < 1000  # the good batch only: nothing of the bomb was stored


def test_a_stored_bomb_goes_out_as_it_is_and_old_fetchers_get_it_converted_or_left_out(
    bomb_broker: Broker,
) -> None:
    within = bomb(INFLATION_LIMIT - 2 * 1024 * 1024, base_offset=1)
    within_count = (INFLATION_LIMIT - 2 * 1024 * 1024) // RECORD_BYTES
    beyond = bomb(200 * 1024 * 1024, base_offset=1 + within_count)
    with ProtocolClient(*bomb_broker.address) as client:
        create(client, "stored")
        assert client.produce("stored", encode_batch([Record(0, 1, b"k", b"good")])) == (0, 0)
    place_in_segment(bomb_broker, "stored", within + beyond)
    reset_peak_rss(bomb_broker)
    before = peak_rss_mib(bomb_broker)
    results: list[tuple[int, bytes]] = []
    spans: list[tuple[float, float]] = []

    def old_fetcher(offset: int) -> None:
        with ProtocolClient(*bomb_broker.address, timeout_s=60) as client:
            started = time.perf_counter()
            results.append(fetch(client, "stored", offset, 2))
            spans.append((started, time.perf_counter()))

    with Pinger(bomb_broker) as pinger:
        fetchers = [
            threading.Thread(target=old_fetcher, args=(offset,))
            for offset in (1, 1, 1 + within_count, 1 + within_count)
        ]
        for fetcher in fetchers:
            fetcher.start()
        for fetcher in fetchers:
            fetcher.join(120)
    grown = peak_rss_mib(bomb_broker) - before
    assert grown < 64, f"the broker grew by {grown:.0f} MiB converting the bombs"
    assert_answered_throughout(pinger.answered_at, spans)
    converted = [records for code, records in results if code == ErrorCode.NONE]
    left_out = [code for code, _ in results if code != ErrorCode.NONE]
    assert left_out == [ErrorCode.CORRUPT_MESSAGE] * 2  # the one beyond the limit
    assert len(converted) == 2
    for records in converted:
        messages = decode_message_set(records)  # a gzip wrapper of the message set
        assert [m.offset for m in messages] == list(range(1, 1 + within_count))
        assert {len(m.value or b"") for m in messages} == {RECORD_BYTES}
    with ProtocolClient(*bomb_broker.address) as client:
        code, stored = fetch(client, "stored", 1, 12)  # v4+: the batch as stored
        assert code == ErrorCode.NONE and stored.startswith(within)
