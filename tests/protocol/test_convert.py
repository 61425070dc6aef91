"""Conversion magic 0/1 -> 2 (produce) and 2 -> 0/1 (old fetchers)."""

from __future__ import annotations

import pytest

from tests.protocol.records_gen import sample_records
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records import compression, record_batch
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.convert import (
    Unconvertible,
    batch_to_message_set,
    batches_to_message_set,
    message_set_to_batch,
)
from wirekafka.protocol.records.message_set import decode_message_set, encode_message_set
from wirekafka.protocol.records.record import NO_TIMESTAMP, Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    decode_batch,
    decode_batches,
    encode_batch,
    read_batch_header,
)

CODECS = list(CompressionType)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_up_conversion_keeps_offsets_keys_values_timestamps_and_codec(magic, codec):
    records = sample_records(6, base_offset=10, with_headers=False)
    batch = decode_batch(
        message_set_to_batch(encode_message_set(records, magic=magic, compression=codec))
    )
    assert batch.header.compression == codec
    expected = [
        Record(r.offset, r.timestamp if magic == 1 else NO_TIMESTAMP, r.key, r.value)
        for r in records
    ]
    assert batch.records == expected


def test_up_conversion_can_renumber_a_produce_request():
    data = b"".join(encode_message_set([Record(0, 1, None, b"v%d" % i)], magic=1) for i in range(3))
    with pytest.raises(ProtocolError, match="do not increase"):
        message_set_to_batch(data)
    batch = decode_batch(message_set_to_batch(data, base_offset=0))
    assert [r.offset for r in batch.records] == [0, 1, 2]
    assert [r.value for r in batch.records] == [b"v0", b"v1", b"v2"]


def test_up_conversion_of_log_append_time():
    data = encode_message_set(
        [Record(0, 1, None, b"a"), Record(1, 2, None, b"b")],
        magic=1,
        compression=CompressionType.GZIP,
        log_append_time_ms=500,
    )
    header = decode_batch(message_set_to_batch(data)).header
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 500


def test_empty_message_set_converts_to_nothing():
    assert message_set_to_batch(b"") == b""


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS[:-1], ids=lambda c: c.name)
def test_down_conversion_keeps_offsets_keys_values_timestamps(magic, codec):
    first = sample_records(4, base_offset=1000)
    second = sample_records(3, base_offset=1004, seed=1)
    log = encode_batch(first, compression=codec) + encode_batch(second, compression=codec)
    messages = decode_message_set(batches_to_message_set(log, magic=magic))
    expected = first + second
    assert [m.offset for m in messages] == [r.offset for r in expected]
    assert [(m.key, m.value) for m in messages] == [(r.key, r.value) for r in expected]
    if magic == 1:
        assert [m.timestamp for m in messages] == [r.timestamp for r in expected]
    else:
        assert {m.timestamp for m in messages} == {NO_TIMESTAMP}
    assert {m.compression for m in messages} == {codec}


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_batches_have_no_message_set_form(magic):
    with pytest.raises(Unconvertible):
        batches_to_message_set(
            encode_batch(sample_records(3), compression=CompressionType.ZSTD), magic=magic
        )


def test_down_conversion_streams_a_batch_that_inflates_far(monkeypatch):
    """A batch inflating to 20 MB is read in chunks and written to a wrapper
    compressed as it grows: the largest piece of inflated data held is a chunk."""
    records = [Record(i, 1, b"k", b"\x00" * 100_000) for i in range(200)]
    batch = encode_batch(records, compression=CompressionType.GZIP)
    assert len(batch) < 100_000
    seen: list[int] = []
    real = compression.iter_decompressed

    def watched(*args, **kwargs):
        for chunk in real(*args, **kwargs):
            seen.append(len(chunk))
            yield chunk

    monkeypatch.setattr(record_batch, "iter_decompressed", watched)
    converted = batch_to_message_set(batch, 0, read_batch_header(batch), magic=1)
    assert len(converted) < 200_000
    assert sum(seen) > 200 * 100_000 and max(seen) <= compression.DEFAULT_CHUNK_BYTES
    messages = decode_message_set(converted)
    assert [m.offset for m in messages] == list(range(200))
    assert {m.value for m in messages} == {b"\x00" * 100_000}


def test_down_conversion_of_log_append_time_batches():
    log = encode_batch([Record(3, 1, None, b"a"), Record(4, 2, None, b"b")], log_append_time_ms=42)
    messages = decode_message_set(batches_to_message_set(log, magic=1))
    assert [m.timestamp for m in messages] == [42, 42]
    assert {m.timestamp_type for m in messages} == {TimestampType.LOG_APPEND_TIME}


def test_down_conversion_skips_control_batches_and_a_partial_tail():
    data = encode_batch([Record(0, 1, None, b"a")])
    control = encode_batch([Record(1, 1, b"\x00\x00\x00\x00", b"")], is_control=True)
    tail = encode_batch([Record(2, 1, None, b"c")])[:-3]
    messages = decode_message_set(batches_to_message_set(data + control + tail, magic=1))
    assert [m.value for m in messages] == [b"a"]


def test_up_then_down_is_the_identity_on_records():
    records = sample_records(5, base_offset=77, with_headers=False)
    legacy = encode_message_set(records, magic=1, compression=CompressionType.LZ4)
    again = batches_to_message_set(message_set_to_batch(legacy), magic=1)
    assert [m.to_record() for m in decode_message_set(again)] == records
    assert decode_batches(message_set_to_batch(legacy))[0].records == records
