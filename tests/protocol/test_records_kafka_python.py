"""Record formats against kafka-python's own implementation, in both directions.

kafka-python writes magic 0, 1 and 2 with every codec it supports (zstd only
in magic 2); we decode what it writes, and it decodes what we write.
"""

from __future__ import annotations

import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from tests.protocol.records_gen import sample_records
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.convert import batches_to_message_set
from wirekafka.protocol.records.message_set import decode_message_set, encode_message_set
from wirekafka.protocol.records.record import NO_TIMESTAMP, Record
from wirekafka.protocol.records.record_batch import decode_batches, encode_batch

FORMATS = [
    (magic, codec)
    for magic in (0, 1, 2)
    for codec in CompressionType
    if magic == 2 or codec != CompressionType.ZSTD
]
IDS = [f"magic{magic}-{codec.name}" for magic, codec in FORMATS]


def _written_by_kafka_python(magic: int, codec: CompressionType, records: list[Record]) -> bytes:
    builder = MemoryRecordsBuilder(
        magic=magic,
        compression_type=int(codec),
        batch_size=1 << 22,
        offset=records[0].offset,
        producer_id=4000 if magic == 2 else -1,
        producer_epoch=2 if magic == 2 else -1,
        base_sequence=17 if magic == 2 else -1,
    )
    for record in records:
        assert builder.append(record.timestamp, record.key, record.value, record.headers)
    builder.close()
    return bytes(builder.buffer())


def _read_by_kafka_python(data: bytes) -> list[Record]:
    records = []
    memory = MemoryRecords(data)
    while (batch := memory.next_batch()) is not None:
        for r in batch:
            timestamp = NO_TIMESTAMP if r.timestamp is None else r.timestamp
            records.append(Record(r.offset, timestamp, r.key, r.value, list(r.headers)))
    return records


def _expected(records: list[Record], magic: int) -> list[Record]:
    return [
        Record(
            r.offset,
            r.timestamp if magic >= 1 else NO_TIMESTAMP,
            r.key,
            r.value,
            r.headers if magic == 2 else [],
        )
        for r in records
    ]


@pytest.mark.parametrize(("magic", "codec"), FORMATS, ids=IDS)
def test_what_kafka_python_writes_decodes_with_ours(magic, codec):
    records = sample_records(8, with_headers=magic == 2)
    data = _written_by_kafka_python(magic, codec, records)
    if magic == 2:
        (batch,) = decode_batches(data)
        assert batch.header.compression == codec
        assert (batch.header.producer_id, batch.header.producer_epoch) == (4000, 2)
        assert batch.header.base_sequence == 17
        decoded = batch.records
    else:
        messages = decode_message_set(data)
        assert {m.compression for m in messages} == {codec}
        decoded = [m.to_record() for m in messages]
        if codec != CompressionType.NONE and magic == 1:
            # A producer's magic-1 wrapper carries offset 0 until the broker assigns
            # the last offset; inner offsets are relative, so records land below it.
            decoded = [
                Record(r.offset + len(records) - 1, r.timestamp, r.key, r.value) for r in decoded
            ]
    assert decoded == _expected(records, magic)


@pytest.mark.parametrize(("magic", "codec"), FORMATS, ids=IDS)
def test_what_we_write_decodes_with_kafka_python(magic, codec):
    records = sample_records(8, base_offset=500, with_headers=magic == 2)
    if magic == 2:
        data = encode_batch(records, compression=codec)
    else:
        data = encode_message_set(records, magic=magic, compression=codec)
    assert _read_by_kafka_python(data) == _expected(records, magic)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize(
    "codec", [c for c in CompressionType if c != CompressionType.ZSTD], ids=lambda c: c.name
)
def test_down_converted_fetch_data_decodes_with_kafka_python(magic, codec):
    log = encode_batch(sample_records(5, base_offset=90), compression=codec)
    log += encode_batch(sample_records(4, base_offset=95, seed=3), compression=codec)
    expected = _expected(
        sample_records(5, base_offset=90) + sample_records(4, base_offset=95, seed=3), magic
    )
    assert _read_by_kafka_python(batches_to_message_set(log, magic=magic)) == expected
