"""Fetch: record batches from the segment files, long polling, old formats, byte budgets."""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing

from tests.handlers.support import (
    BASE_TIME_MS,
    TestBroker,
    advance_trio_time,
    fetch_request,
    make_batch,
    produce_request,
    run_autojump,
    run_stepped,
)
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from wirekafka.protocol.messages.fetch import FetchRequest
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.message_set import decode_message_set
from wirekafka.protocol.records.record_batch import (
    CRC_OFFSET,
    HEADER_BYTES,
    compute_crc,
    decode_batches,
)
from wirekafka.storage.spans import FileSpan
from wirekafka.zk.znodes import PartitionState


def produce_values(broker: TestBroker, topic: str, *batches: list[bytes], partition: int = 0):
    offsets = []
    for values in batches:
        response = broker.produce(topic, make_batch(values), partition=partition)
        assert response.error_code == ErrorCode.NONE
        offsets.append(response.base_offset)
    return offsets


def offsets_and_values(records: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for batch in decode_batches(records) for r in batch.records]


@pytest.mark.parametrize("version", [4, 5, 7, 11, 12])
def test_fetch_returns_the_produced_batches(broker, version):
    broker.create_topic("t")
    produce_values(broker, "t", [b"a", b"b"], [b"c"])
    raw = broker.raw(ApiKey.FETCH, version, fetch_request([("t", 0, 0, 1 << 20)]))
    span = raw.responses[0].partitions[0].records
    assert isinstance(span, FileSpan)
    assert offsets_and_values(span.read_bytes()) == [(0, b"a"), (1, b"b"), (2, b"c")]
    data = broker.fetch("t", version=version)
    assert data.error_code == ErrorCode.NONE
    assert data.high_watermark == 3
    assert data.last_stable_offset == 3
    assert data.log_start_offset == (0 if version >= 5 else -1)
    assert bytes(data.records) == span.read_bytes()
    assert offsets_and_values(bytes(data.records)) == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_fetch_from_the_middle_starts_at_the_batch_holding_the_offset(broker):
    broker.create_topic("t")
    produce_values(broker, "t", [b"a", b"b"], [b"c", b"d"], [b"e"])
    data = broker.fetch("t", 3)
    assert offsets_and_values(bytes(data.records)) == [(2, b"c"), (3, b"d"), (4, b"e")]


def test_fetch_is_byte_exact_with_what_was_stored(broker):
    broker.create_topic("t")
    batch = make_batch([b"x" * 300, b"y"], compression=CompressionType.GZIP)
    broker.produce("t", batch)
    data = broker.fetch("t")
    assert bytes(data.records)[8:] == batch[8:]  # all but the assigned base offset (0 anyway)
    assert bytes(data.records) == batch


def test_fetch_at_the_log_end_without_waiting_is_empty(broker):
    broker.create_topic("t")
    produce_values(broker, "t", [b"a"])

    async def timed():
        start = trio.current_time()
        request = fetch_request([("t", 0, 1, 1 << 20)], max_wait_ms=0, min_bytes=1)
        response = await broker.acall(ApiKey.FETCH, 12, request)
        return response, trio.current_time() - start

    response, elapsed = run_autojump(timed)
    data = response.responses[0].partitions[0]
    assert data.error_code == ErrorCode.NONE
    assert data.high_watermark == 1
    assert bytes(data.records) == b""
    assert elapsed == 0  # trio's clock jumps to any deadline the handler waits for


def test_long_poll_is_woken_by_a_produce(broker):
    broker.create_topic("t")
    produce_values(broker, "t", [b"old"])

    async def scenario():
        results = {}

        async def fetcher():
            start = trio.current_time()
            request = fetch_request([("t", 0, 1, 1 << 20)], max_wait_ms=5000, min_bytes=1)
            results["fetch"] = await broker.acall(ApiKey.FETCH, 12, request)
            results["elapsed"] = trio.current_time() - start

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetcher)
            await advance_trio_time(0.25)
            assert "fetch" not in results  # parked
            await broker.acall(ApiKey.PRODUCE, 9, produce_request("t", make_batch([b"new"])))
            await trio.testing.wait_all_tasks_blocked()
            assert "fetch" in results  # woken, with trio's clock still at the produce
        return results

    results = run_stepped(scenario)
    assert results["elapsed"] == 0.25  # answered at the produce, not at its 5 s deadline
    data = results["fetch"].responses[0].partitions[0]
    assert data.high_watermark == 2
    assert offsets_and_values(bytes(data.records)) == [(1, b"new")]


def at_epoch(request: FetchRequest, current_leader_epoch: int) -> FetchRequest:
    for topic in request.topics:
        for partition in topic.partitions:
            partition.current_leader_epoch = current_leader_epoch
    return request


@pytest.mark.parametrize(
    ("current_leader_epoch", "error", "values"),
    [
        (-1, ErrorCode.NONE, [b"a"]),  # none named (before v9): not checked
        (3, ErrorCode.NONE, [b"a"]),
        (2, ErrorCode.FENCED_LEADER_EPOCH, []),
        (4, ErrorCode.UNKNOWN_LEADER_EPOCH, []),
    ],
)
def test_a_consumer_fetch_in_a_cluster_is_checked_against_the_leader_epoch(
    broker: TestBroker, current_leader_epoch: int, error: ErrorCode, values: list[bytes]
) -> None:
    broker.create_topic("t")
    produce_values(broker, "t", [b"a"])
    broker.join_cluster(PartitionState(0, 3, (0,), 1))
    request = at_epoch(fetch_request([("t", 0, 0, 1 << 20)]), current_leader_epoch)
    data = broker.call(ApiKey.FETCH, 12, request).responses[0].partitions[0]
    assert data.error_code == error
    assert [v for _, v in offsets_and_values(bytes(data.records))] == values


def test_a_consumer_fetch_naming_an_epoch_is_answered_by_the_leader_only(
    broker: TestBroker,
) -> None:
    """The cluster names this broker leader, but its replica manager still follows
    broker 1: as OffsetForLeaderEpoch, the fetch is refused until it leads."""
    broker.create_topic("t")
    produce_values(broker, "t", [b"a"])
    cache = broker.join_cluster(PartitionState(0, 3, (0,), 1))
    cache.move(PartitionState(1, 3, (0, 1), 1))
    request = at_epoch(fetch_request([("t", 0, 0, 1 << 20)]), 3)
    data = broker.call(ApiKey.FETCH, 12, request).responses[0].partitions[0]
    assert (data.error_code, bytes(data.records)) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, b"")


def test_a_long_poll_made_at_an_older_epoch_gets_none_of_the_new_epochs_records(
    broker: TestBroker,
) -> None:
    """The controller bumps the epoch with the leader unchanged (ZooKeeper mode, on an
    ISR shrink) while a consumer's fetch waits there: the record appended at the
    new epoch wakes it, and it is fenced instead of given that record, as in Kafka.
    librdkafka, given it, would compare its check of the old epoch's end with a
    position of the new epoch and report a log truncation."""
    broker.create_topic("t")
    produce_values(broker, "t", [b"old"])
    cache = broker.join_cluster(PartitionState(0, 0, (0,), 1))
    replicas = broker.ctx.replicas
    assert replicas is not None

    async def scenario() -> dict[str, object]:
        results: dict[str, object] = {}
        await replicas.reconcile()

        async def fetcher() -> None:
            request = fetch_request([("t", 0, 1, 1 << 20)], max_wait_ms=5000, min_bytes=1)
            results["fetch"] = await broker.acall(ApiKey.FETCH, 12, at_epoch(request, 0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetcher)
            await advance_trio_time(0.25)
            assert "fetch" not in results  # parked
            cache.move(PartitionState(0, 1, (0,), 1))
            await replicas.reconcile()
            produced = await broker.acall(
                ApiKey.PRODUCE, 9, produce_request("t", make_batch([b"new"]), acks=1)
            )
            assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
            await trio.testing.wait_all_tasks_blocked()
            assert "fetch" in results  # woken by the append, not at its deadline
        return results

    results = run_stepped(scenario)
    data = results["fetch"].responses[0].partitions[0]  # type: ignore[attr-defined]
    assert data.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert bytes(data.records) == b""
    assert broker.log("t").leader_epochs.epoch_for_offset(1) == 1  # the record is there


def test_long_poll_ignores_appends_to_other_partitions(broker):
    broker.create_topic("t", 2)

    async def scenario():
        results = {}

        async def fetcher():
            start = trio.current_time()
            request = fetch_request([("t", 0, 0, 1 << 20)], max_wait_ms=500, min_bytes=1)
            results["fetch"] = await broker.acall(ApiKey.FETCH, 12, request)
            results["elapsed"] = trio.current_time() - start

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetcher)
            await advance_trio_time(0.125)
            await broker.acall(
                ApiKey.PRODUCE, 9, produce_request("t", make_batch([b"p1"]), partition=1)
            )
            await advance_trio_time(0.25)
            assert "fetch" not in results  # partition 1's append did not wake it
            await advance_trio_time(0.125)
            assert "fetch" in results  # its deadline did
        return results

    results = run_stepped(scenario)
    assert results["elapsed"] == 0.5
    assert bytes(results["fetch"].responses[0].partitions[0].records) == b""


def test_long_poll_expires_empty(broker):
    broker.create_topic("t")

    async def timed():
        start = trio.current_time()
        request = fetch_request([("t", 0, 0, 1 << 20)], max_wait_ms=250, min_bytes=1)
        response = await broker.acall(ApiKey.FETCH, 12, request)
        return response, trio.current_time() - start

    response, elapsed = run_autojump(timed)
    assert elapsed == 0.25  # the whole max_wait_ms, by trio's clock
    data = response.responses[0].partitions[0]
    assert (data.error_code, data.high_watermark, bytes(data.records)) == (ErrorCode.NONE, 0, b"")


def test_long_poll_short_of_min_bytes_returns_what_it_has_at_the_deadline(broker):
    broker.create_topic("t")

    async def scenario():
        results = {}

        async def fetcher():
            start = trio.current_time()
            request = fetch_request([("t", 0, 0, 1 << 20)], max_wait_ms=500, min_bytes=100_000)
            results["fetch"] = await broker.acall(ApiKey.FETCH, 12, request)
            results["elapsed"] = trio.current_time() - start

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetcher)
            await advance_trio_time(0.125)
            await broker.acall(ApiKey.PRODUCE, 9, produce_request("t", make_batch([b"small"])))
            await advance_trio_time(0.25)
            assert "fetch" not in results  # a few bytes are short of min_bytes
            await advance_trio_time(0.125)
            assert "fetch" in results  # until the deadline
        return results

    results = run_stepped(scenario)
    assert results["elapsed"] == 0.5
    data = results["fetch"].responses[0].partitions[0]
    assert offsets_and_values(bytes(data.records)) == [(0, b"small")]


def test_offset_beyond_the_end_is_out_of_range(broker):
    broker.create_topic("t")
    produce_values(broker, "t", [b"a", b"b"])
    data = broker.fetch("t", 3)
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert data.high_watermark == 2
    assert data.log_start_offset == 0
    assert bytes(data.records) == b""
    at_end = broker.fetch("t", 2)
    assert (at_end.error_code, bytes(at_end.records)) == (ErrorCode.NONE, b"")


def test_offset_below_the_log_start_is_out_of_range(broker):
    broker.create_topic("t")
    produce_values(broker, "t", [b"a"], [b"b"], [b"c"])
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsTopic(
                name="t", partitions=[DeleteRecordsPartition(partition_index=0, offset=2)]
            )
        ],
        timeout_ms=1000,
    )
    broker.call(ApiKey.DELETE_RECORDS, 2, request)
    data = broker.fetch("t", 1)
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert data.log_start_offset == 2
    ok = broker.fetch("t", 2)
    assert (ok.error_code, ok.log_start_offset) == (ErrorCode.NONE, 2)
    assert offsets_and_values(bytes(ok.records)) == [(2, b"c")]


def test_out_of_range_does_not_wait(broker):
    broker.create_topic("t")

    async def timed():
        start = trio.current_time()
        request = fetch_request([("t", 0, 5, 1 << 20)], max_wait_ms=5000, min_bytes=1)
        response = await broker.acall(ApiKey.FETCH, 12, request)
        return response, trio.current_time() - start

    response, elapsed = run_autojump(timed)
    assert response.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert elapsed == 0


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1), (3, 1)])
def test_old_fetch_versions_get_message_sets(broker, version, magic):
    broker.create_topic("t")
    times = [BASE_TIME_MS - 2000, BASE_TIME_MS - 1000]  # one segment: no time-based roll
    broker.produce("t", make_batch([b"a", b"b"], keys=[b"k", None], timestamps=times))
    broker.produce("t", make_batch([b"c"] * 3, compression=CompressionType.GZIP))
    raw = broker.raw(ApiKey.FETCH, version, fetch_request([("t", 0, 0, 1 << 20)]))
    assert isinstance(raw.responses[0].partitions[0].records, bytes)
    data = broker.fetch("t", version=version)
    assert data.high_watermark == 5
    messages = decode_message_set(bytes(data.records))
    assert [m.magic for m in messages] == [magic] * 5
    assert [(m.offset, m.key, m.value) for m in messages] == [
        (0, b"k", b"a"),
        (1, None, b"b"),
        (2, None, b"c"),
        (3, None, b"c"),
        (4, None, b"c"),
    ]
    assert [m.compression for m in messages] == [CompressionType.NONE] * 2 + [
        CompressionType.GZIP
    ] * 3
    expected_times = times + [BASE_TIME_MS + i for i in range(3)]
    assert [m.timestamp for m in messages] == (expected_times if magic == 1 else [-1] * 5)


def test_old_fetch_from_the_middle_of_a_batch(broker):
    broker.create_topic("t")
    produce_values(broker, "t", [b"a", b"b", b"c"])
    data = broker.fetch("t", 1, version=2)
    # whole batches are converted: the client skips the offsets below its position
    assert [m.offset for m in decode_message_set(bytes(data.records))] == [0, 1, 2]


def batch_size(values: list[bytes]) -> int:
    return len(make_batch(values))


def test_partition_max_bytes_limits_each_partition(broker):
    broker.create_topic("t", 2)
    values = [b"x" * 100]
    size = batch_size(values)
    for partition in (0, 1):
        produce_values(broker, "t", values, values, values, partition=partition)
    request = fetch_request([("t", 0, 0, 2 * size + 10), ("t", 1, 0, size)])
    response = broker.call(ApiKey.FETCH, 12, request)
    first, second = response.responses[0].partitions
    assert len(first.records) == 2 * size
    assert [o for o, _ in offsets_and_values(bytes(first.records))] == [0, 1]
    assert len(second.records) == size
    assert [o for o, _ in offsets_and_values(bytes(second.records))] == [0]


def test_response_max_bytes_is_shared_by_the_partitions(broker):
    broker.create_topic("t", 3)
    values = [b"x" * 100]
    size = batch_size(values)
    for partition in (0, 1, 2):
        produce_values(broker, "t", values, values, values, partition=partition)
    request = fetch_request(
        [("t", 0, 0, 1 << 20), ("t", 1, 0, 1 << 20), ("t", 2, 0, 1 << 20)],
        max_bytes=2 * size + size // 2,
    )
    response = broker.call(ApiKey.FETCH, 12, request)
    sizes = [len(p.records) for p in response.responses[0].partitions]
    assert sizes == [2 * size, 0, 0]


def test_the_first_partition_gets_one_batch_even_when_too_big(broker):
    broker.create_topic("t", 2)
    values = [b"x" * 500]
    size = batch_size(values)
    for partition in (0, 1):
        produce_values(broker, "t", values, values, partition=partition)
    request = fetch_request([("t", 0, 0, 10), ("t", 1, 0, 10)], max_bytes=20)
    response = broker.call(ApiKey.FETCH, 12, request)
    first, second = response.responses[0].partitions
    assert len(first.records) == size  # one whole batch over both limits
    assert bytes(second.records) == b""
    assert (first.error_code, second.error_code) == (ErrorCode.NONE, ErrorCode.NONE)
    assert second.high_watermark == 2


def test_min_one_batch_passes_to_the_first_partition_with_data(broker):
    broker.create_topic("t", 2)
    values = [b"x" * 500]
    size = batch_size(values)
    produce_values(broker, "t", values, partition=1)
    request = fetch_request([("t", 0, 0, 10), ("t", 1, 0, 10)], max_bytes=20)
    response = broker.call(ApiKey.FETCH, 12, request)
    first, second = response.responses[0].partitions
    assert bytes(first.records) == b""
    assert len(second.records) == size


def test_response_max_bytes_is_not_read_before_v3(broker):
    broker.create_topic("t", 2)
    values = [b"x" * 100]
    for partition in (0, 1):
        produce_values(broker, "t", values, partition=partition)
    request = fetch_request([("t", 0, 0, 1 << 20), ("t", 1, 0, 1 << 20)], max_bytes=10)
    response = broker.call(ApiKey.FETCH, 2, request)
    assert [
        len(decode_message_set(bytes(p.records))) for p in response.responses[0].partitions
    ] == [
        1,
        1,
    ]


@pytest.mark.parametrize("version", [0, 4, 12])
def test_unknown_topic_and_partition(broker, version):
    broker.create_topic("t")
    request = fetch_request([("nope", 0, 0, 1000), ("t", 1, 0, 1000), ("t", 0, 0, 1000)])
    response = broker.call(ApiKey.FETCH, version, request)
    answers = [
        (t.topic, p.partition_index, p.error_code, p.high_watermark)
        for t in response.responses
        for p in t.partitions
    ]
    assert answers == [
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("t", 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("t", 0, ErrorCode.NONE, 0),
    ]


def test_unknown_topic_does_not_wait(broker):
    async def timed():
        start = trio.current_time()
        request = fetch_request([("nope", 0, 0, 1000)], max_wait_ms=5000, min_bytes=1)
        response = await broker.acall(ApiKey.FETCH, 12, request)
        return response, trio.current_time() - start

    response, elapsed = run_autojump(timed)
    assert response.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert elapsed == 0


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_old_fetch_versions_never_get_zstd_message_sets(broker, version):
    """Magic 0/1 have no zstd (the broker itself refuses zstd message sets on produce):
    a zstd batch cannot go to a Fetch v0-v3 client as it is. Kafka answers
    UNSUPPORTED_COMPRESSION_TYPE; a conversion to a codec magic 0/1 know would do too."""
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b"], compression=CompressionType.ZSTD))
    data = broker.fetch("t", version=version)
    if data.error_code == ErrorCode.NONE:
        messages = decode_message_set(bytes(data.records))
        assert [m.compression for m in messages if m.compression == CompressionType.ZSTD] == []
        assert [(m.offset, m.value) for m in messages] == [(0, b"a"), (1, b"b")]
    else:
        assert data.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert bytes(data.records or b"") == b""


def messages_of(records: bytes) -> list[tuple[int, bytes | None]]:
    return [(m.offset, m.value) for m in decode_message_set(records)]


def junk_inside(batch: bytes) -> bytes:
    """The batch with its records' bytes garbled and its CRC made right again:
    what a hostile client could store before records were checked."""
    junk = bytearray(batch)
    junk[HEADER_BYTES : HEADER_BYTES + 4] = b"\xff\xff\xff\xff"
    struct.pack_into(">I", junk, CRC_OFFSET, compute_crc(junk, 0, len(junk)))
    return bytes(junk)


@pytest.mark.parametrize("version", [0, 2, 3])
def test_old_fetchers_get_unsupported_version_when_down_conversion_is_off(make_broker, version):
    broker = make_broker({"log.message.downconversion.enable": "false"})
    broker.create_topic("t")
    broker.create_topic("on", configs={"message.downconversion.enable": "true"})
    for topic in ("t", "on"):
        broker.produce(topic, make_batch([b"a"]))
    assert broker.fetch("t", version=version).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert broker.fetch("t", version=4).error_code == ErrorCode.NONE
    on = broker.fetch("on", version=version)
    assert on.error_code == ErrorCode.NONE
    assert [m.value for m in decode_message_set(bytes(on.records))] == [b"a"]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_a_stored_batch_that_cannot_be_converted_is_left_out(broker, codec, caplog):
    broker.create_topic("t")
    log = broker.log("t")
    log.append(bytearray(make_batch([b"a", b"b"], compression=codec)))
    log.append(bytearray(junk_inside(make_batch([b"junk"] * 3, compression=codec))))
    log.append(bytearray(make_batch([b"f"], compression=codec)))
    data = broker.fetch("t", version=2)
    assert data.error_code == ErrorCode.NONE
    assert messages_of(bytes(data.records)) == [(0, b"a"), (1, b"b"), (5, b"f")]
    assert "t-0: the stored batch at offset 2 cannot be converted" in caplog.text
    alone = broker.fetch("t", 2, version=2, partition_max_bytes=10)
    assert alone.error_code == ErrorCode.CORRUPT_MESSAGE
    assert len(broker.fetch("t", 2, version=12).records) > 0  # v4+ get the bytes as stored


def test_a_batch_inflating_past_the_limit_is_left_out_of_a_conversion(make_broker):
    broker = make_broker({"message.max.bytes": "10000"})  # inflation limit: 64 x 10,000 bytes
    broker.create_topic("t")
    log = broker.log("t")
    log.append(bytearray(make_batch([b"\x00" * 200_000] * 5, compression=CompressionType.GZIP)))
    log.append(bytearray(make_batch([b"\x00" * 100_000] * 5, compression=CompressionType.GZIP)))
    data = broker.fetch("t", version=3)
    messages = decode_message_set(bytes(data.records))
    assert [(m.offset, len(m.value)) for m in messages] == [(i, 100_000) for i in range(5, 10)]


def test_data_before_a_zstd_batch_still_reach_an_old_fetcher(broker):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a"]))
    broker.produce("t", make_batch([b"z"], compression=CompressionType.ZSTD))
    data = broker.fetch("t", version=1)
    assert messages_of(bytes(data.records)) == [(0, b"a")]
    assert broker.fetch("t", 1, version=1).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
