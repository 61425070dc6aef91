"""Data on disk the log cannot read never takes it down.

A batch whose CRC matches but whose records do not parse (a client wrote
junk) is skipped by every reader that decodes records, reported once. A batch
header that cannot be read inside a segment makes the rest of that segment
unreadable; the log stays online and readers go on at the next segment.
"""

from __future__ import annotations

import logging

import pytest

from tests.storage.helpers import FakeClock, spoil_header, unparsable_batch
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch, iter_batches
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import (
    MAX_TIMESTAMP,
    PartitionLog,
    ReadResult,
    StorageError,
    TimestampOffset,
)
from wirekafka.storage.producer_state import ProducerStateTable

CONFIG = LogConfig()


def new_log(tmp_path, clock, *, clean_shutdown=True):
    return PartitionLog(tmp_path / "t-0", "t", 0, CONFIG, clock, clean_shutdown=clean_shutdown)


def append(log, timestamp, value=b"v", *, producer_id=-1, sequence=-1):
    batch = encode_batch(
        [Record(0, timestamp, b"k", value)],
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=sequence,
    )
    return log.append(bytearray(batch)).first_offset


def reports(caplog, text):
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_a_timestamp_lookup_passes_over_a_batch_it_cannot_parse(tmp_path, caplog):
    clock = FakeClock()
    t0 = clock.now_ms
    log = new_log(tmp_path, clock)
    append(log, t0)
    junk = log.append(bytearray(unparsable_batch([b"a", b"b"], timestamp=t0 + 10))).first_offset
    after = append(log, t0 + 20)
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        assert log.offset_for_timestamp(t0 + 5) == TimestampOffset(t0 + 20, after)
        assert log.offset_for_timestamp(t0 + 5) == TimestampOffset(t0 + 20, after)
    [report] = reports(caplog, "cannot be parsed")
    assert f"t-0: the batch at offsets {junk}..{junk + 1}" in report


def test_the_max_timestamp_in_a_batch_that_cannot_be_parsed_answers_from_its_header(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    append(log, clock.now_ms)
    junk = log.append(bytearray(unparsable_batch([b"a", b"b"], timestamp=clock.now_ms + 50)))
    assert log.offset_for_timestamp(MAX_TIMESTAMP) == TimestampOffset(
        clock.now_ms + 51, junk.last_offset
    )


def test_producer_state_rebuilds_past_a_batch_header_that_cannot_be_read(tmp_path, caplog):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for sequence in range(3):
        append(log, clock.now_ms, producer_id=7, sequence=sequence)
    log.roll()
    append(log, clock.now_ms, producer_id=7, sequence=3)
    append(log, clock.now_ms, producer_id=8, sequence=0)
    spoil_header(log, 1)  # in the first segment: its batches from offset 1 on are lost to readers
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        headers = list(log.batch_headers())
        assert [h.base_offset for h in headers] == [0, 3, 4]
        assert [h.base_offset for h in log.batch_headers()] == [0, 3, 4]
    [report] = reports(caplog, "cannot be read to its end")
    assert "t-0: segment 00000000000000000000" in report
    table = ProducerStateTable()
    table.rebuild(iter(headers))
    entry = table.entry(7)
    assert entry is not None and entry.batches[-1].last_sequence == 3
    assert not log.offline
    assert log.read(3, 1 << 20).spans  # the next segment reads as before


def test_a_clean_start_checks_an_active_segment_whose_batch_header_cannot_be_read(tmp_path, caplog):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for index in range(3):
        append(log, clock.now_ms, b"%d" % index)
    log.close()  # a clean stop: the next start trusts the files
    spoil_header(log, 1)
    with caplog.at_level(logging.WARNING, logger="wirekafka.storage"):
        reopened = new_log(tmp_path, clock, clean_shutdown=True)
    assert reopened.log_end_offset == 1  # cut where recovery after a crash would cut it
    assert "although the last shutdown was clean" in caplog.text
    assert append(reopened, clock.now_ms) == 1
    assert [h.base_offset for h in reopened.batch_headers()] == [0, 1]


def test_reads_reach_the_batches_before_a_header_that_cannot_be_read(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for index in range(3):
        append(log, clock.now_ms, b"%d" % index)
    log.roll()
    after = append(log, clock.now_ms, b"next segment")
    spoil_header(log, 2)

    def offsets_read(offset):
        result = log.read(offset, 1 << 20)
        assert isinstance(result, ReadResult)
        data = b"".join(span.read_bytes() for span in result.spans)
        return [header.base_offset for _, header in iter_batches(data)]

    assert offsets_read(0) == [0]  # a batch at a time: the walk to the limit fails at 2
    assert offsets_read(1) == [1]
    with pytest.raises(StorageError, match="bad batch header"):
        log.read(2, 1 << 20)
    assert offsets_read(after) == [after]
    assert not log.offline
