"""Record batches (magic 2): header reads, CRC, in-place patches, full codec."""

from __future__ import annotations

import struct

import crc32c
import pytest

from tests.protocol.records_gen import sample_records
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records import record_batch as rb
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record, TimestampType


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_encode_decode_keeps_every_record_field(codec):
    records = sample_records(7, base_offset=40)
    data = rb.encode_batch(
        records, compression=codec, producer_id=12, producer_epoch=3, base_sequence=100
    )
    batch = rb.decode_batch(data)
    assert batch.records == records
    header = batch.header
    assert header.base_offset == 40
    assert header.last_offset == 46 and header.next_offset == 47
    assert header.record_count == 7
    assert header.compression == codec
    assert header.timestamp_type == TimestampType.CREATE_TIME
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert header.base_timestamp == records[0].timestamp
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (12, 3, 100)
    assert header.last_sequence == 106
    assert header.size_bytes == len(data)
    assert rb.crc_matches(data)


def test_header_is_read_without_touching_records():
    data = rb.encode_batch(sample_records(3), compression=CompressionType.GZIP)
    broken_body = data[: rb.HEADER_BYTES] + b"\x00" * (len(data) - rb.HEADER_BYTES)
    header = rb.read_batch_header(broken_body)
    assert header.record_count == 3
    assert not rb.crc_matches(broken_body)


def test_crc_is_crc32c_from_attributes_to_the_end():
    data = rb.encode_batch(sample_records(2))
    (crc,) = struct.unpack_from(">I", data, rb.CRC_OFFSET)
    assert crc == crc32c.crc32c(data[rb.ATTRIBUTES_OFFSET :])


def test_set_base_offset_in_place_keeps_the_crc_valid():
    data = bytearray(rb.encode_batch(sample_records(4)))
    rb.set_base_offset(data, 0, 1_000_000)
    assert rb.crc_matches(data)
    assert [r.offset for r in rb.decode_batch(data).records] == [1_000_000 + i for i in range(4)]


def test_set_log_append_time_rewrites_type_and_max_timestamp_with_a_new_crc():
    data = bytearray(rb.encode_batch(sample_records(3), compression=CompressionType.LZ4))
    rb.set_log_append_time(data, 0, 1_234_567)
    header = rb.read_batch_header(data)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 1_234_567
    assert header.compression == CompressionType.LZ4
    assert rb.crc_matches(data)


def test_patches_work_on_a_batch_inside_a_larger_buffer():
    first = rb.encode_batch(sample_records(2))
    second = rb.encode_batch(sample_records(3, base_offset=2))
    buf = bytearray(first + second)
    rb.set_base_offset(buf, len(first), 50)
    rb.set_log_append_time(buf, len(first), 77)
    positions = list(rb.iter_batches(buf))
    assert [p for p, _ in positions] == [0, len(first)]
    assert positions[1][1].base_offset == 50
    assert positions[1][1].max_timestamp == 77
    assert all(rb.crc_matches(buf, p) for p, _ in positions)


def test_iteration_stops_at_a_partial_tail_only_when_allowed():
    data = rb.encode_batch(sample_records(2)) * 2
    cut = data[:-5]
    with pytest.raises(ProtocolError, match="cut off"):
        list(rb.iter_batches(cut))
    assert len(list(rb.iter_batches(cut, allow_partial_tail=True))) == 1
    assert len(list(rb.iter_batches(data[: len(data) // 2 + 3], allow_partial_tail=True))) == 1
    assert list(rb.iter_batches(data[:7], allow_partial_tail=True)) == []


def test_log_append_time_batches_and_control_bits():
    data = rb.encode_batch(
        [Record(0, 5, b"k", b"v")], log_append_time_ms=99, is_transactional=True, is_control=True
    )
    header = rb.read_batch_header(data)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 99
    assert header.is_transactional and header.is_control


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (lambda b: b.__setitem__(16, 1), "magic"),
        (lambda b: struct.pack_into(">i", b, 8, 10), "too small"),
        (lambda b: struct.pack_into(">i", b, 8, 10_000), "cut off"),
        (lambda b: struct.pack_into(">i", b, 57, -1), "negative record count"),
    ],
)
def test_bad_headers_raise(patch, message):
    data = bytearray(rb.encode_batch(sample_records(2)))
    patch(data)
    with pytest.raises(ProtocolError, match=message):
        rb.read_batch_header(data)


@pytest.mark.parametrize("producer_id", [rb.NO_PRODUCER_ID, 7])
def test_single_batch_summary_has_the_fields_an_append_needs(producer_id):
    data = rb.encode_batch(
        sample_records(3), producer_id=producer_id, producer_epoch=0, base_sequence=0
    )
    header = rb.read_batch_header(data)
    assert rb.single_batch_summary(data) == (
        header.last_offset_delta, header.max_timestamp, header.record_count, producer_id
    )  # fmt: skip
    assert rb.single_batch_summary(memoryview(data)) == rb.single_batch_summary(bytearray(data))


@pytest.mark.parametrize(
    "patch",
    [
        lambda b: b.__setitem__(16, 1),  # magic
        lambda b: struct.pack_into(">i", b, 8, 10),  # too small
        lambda b: struct.pack_into(">i", b, 8, 10_000),  # cut off
        lambda b: struct.pack_into(">i", b, 57, -1),  # negative record count
        lambda b: b.extend(rb.encode_batch(sample_records(1))),  # a second batch
        lambda b: b.__delitem__(slice(rb.HEADER_BYTES - 1, None)),  # no whole header
    ],
)
def test_single_batch_summary_is_none_unless_one_sound_batch(patch):
    data = bytearray(rb.encode_batch(sample_records(2)))
    patch(data)
    assert rb.single_batch_summary(data) is None


def test_crc_mismatch_refuses_to_decode():
    data = bytearray(rb.encode_batch(sample_records(2)))
    data[-1] ^= 0xFF
    with pytest.raises(ProtocolError, match="CRC"):
        rb.decode_batch(data)


def test_record_count_beyond_the_records_raises():
    data = bytearray(rb.encode_batch(sample_records(2)))
    struct.pack_into(">i", data, 57, 3)
    struct.pack_into(">I", data, rb.CRC_OFFSET, rb.compute_crc(data, 0, len(data)))
    with pytest.raises(ProtocolError):
        rb.decode_batch(data)


def test_offsets_must_increase_when_encoding():
    with pytest.raises(ValueError, match="increase"):
        rb.encode_batch([Record(5, 0, None, b"a"), Record(5, 0, None, b"b")])
    with pytest.raises(ValueError):
        rb.encode_batch([])


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_a_batch_can_span_more_offsets_than_its_records(codec):
    records = [Record(12, 1000, b"a", b"1"), Record(15, 1003, b"b", b"2")]
    data = rb.encode_batch(
        records,
        compression=codec,
        producer_id=7,
        producer_epoch=1,
        base_sequence=30,
        offset_span=(10, 19),
    )
    batch = rb.decode_batch(data)
    assert batch.records == records
    header = batch.header
    assert (header.base_offset, header.last_offset, header.record_count) == (10, 19, 2)
    assert header.last_sequence == 39  # the sequence of the batch's last offset, as sent
    with pytest.raises(ValueError, match="outside"):
        rb.encode_batch(records, offset_span=(13, 19))


def test_an_empty_batch_keeps_its_headers_offsets_producer_and_time():
    original = rb.read_batch_header(
        rb.encode_batch(
            [Record(20, 5000, b"k", b"v"), Record(24, 5007, b"k", None)],
            compression=CompressionType.LZ4,
            producer_id=9,
            producer_epoch=2,
            base_sequence=70,
            is_transactional=True,
        )
    )
    data = rb.encode_empty_batch(original)
    batch = rb.decode_batch(data)  # the CRC is checked
    assert batch.records == []
    header = batch.header
    assert len(data) == rb.HEADER_BYTES and header.record_count == 0
    assert (header.base_offset, header.last_offset) == (20, 24)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 70)
    assert header.last_sequence == original.last_sequence == 74
    assert header.max_timestamp == original.max_timestamp == 5007
    assert header.is_transactional and header.compression == CompressionType.NONE


@pytest.mark.parametrize(
    "codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.ZSTD]
)
@pytest.mark.parametrize("chunk_bytes", [1, 100, 5000, 1 << 20])
def test_records_stream_out_whatever_the_chunks(codec, chunk_bytes):
    """iter_records reads a compressed payload chunk by chunk; records longer than a
    chunk (here 20 KB against 100-byte chunks) come out whole and in order."""
    records = [
        Record(
            7 + i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * size, [("h", b"x")] if i % 2 else []
        )
        for i, size in enumerate([0, 10, 20_000, 3, 50_000, 1])
    ]
    batch = rb.encode_batch(records, compression=codec)
    streamed = list(rb.iter_records(batch, chunk_bytes=chunk_bytes))
    assert streamed == records == rb.decode_batch(batch).records


def test_streamed_records_must_match_the_count():
    batch = bytearray(rb.encode_batch([Record(0, 1, None, b"a"), Record(1, 1, None, b"b")]))
    struct.pack_into(">i", batch, 57, 1)  # record_count
    with pytest.raises(ProtocolError, match="bytes after its 1 records"):
        list(rb.iter_records(bytes(batch)))
    struct.pack_into(">i", batch, 57, 3)
    with pytest.raises(ProtocolError, match="holds 2 records, its header says 3"):
        list(rb.iter_records(bytes(batch)))
