"""Retention by time, by size and by log start offset, with readers holding spans."""

from __future__ import annotations

import os

from tests.storage.helpers import BASE_TIME_MS, FakeClock, make_batch, read_all
from wirekafka.protocol.records.record import NO_TIMESTAMP, Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.storage.config import HOUR_MS, LogConfig
from wirekafka.storage.log import OffsetOutOfRange, PartitionLog, ReadResult

DAY_MS = 24 * HOUR_MS


def new_log(tmp_path, clock, **settings):
    config = LogConfig(segment_bytes=2000, index_interval_bytes=256, **settings)
    return PartitionLog(tmp_path / "t-0", "t", 0, config, clock)


def fill(log, clock, batches, *, step_ms=HOUR_MS):
    for i in range(batches):
        log.append(bytearray(make_batch(i, timestamp=clock.now_ms)))
        clock.advance(step_ms)


def test_time_retention_removes_old_segments_but_never_the_active_one(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, retention_ms=DAY_MS)
    fill(log, clock, 60)  # one batch an hour for 60 hours
    before = log.segments
    assert len(before) > 5
    deleted = log.delete_old_segments()
    after = log.segments
    assert deleted == len(before) - len(after) > 0
    assert all(clock.now_ms - s.max_timestamp <= DAY_MS for s in after[:-1])
    assert clock.now_ms - before[deleted - 1].max_timestamp > DAY_MS
    assert log.log_start_offset == after[0].base_offset
    assert isinstance(log.read(0, 100), OffsetOutOfRange)
    clock.advance(365 * DAY_MS)
    log.delete_old_segments()
    assert log.segments == [after[-1]]  # the active segment stays, however old


def test_size_retention_keeps_the_newest_bytes(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, retention_bytes=5000, retention_ms=-1)
    fill(log, clock, 80)
    log.delete_old_segments()
    sizes = [s.size for s in log.segments]
    assert sum(sizes) - sizes[0] < 5000 <= sum(sizes) or len(sizes) == 1
    assert read_all(log, log.log_start_offset)


def test_delete_records_then_retention_drops_segments_below_the_start(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, retention_ms=-1)
    fill(log, clock, 40)
    third = log.segments[2].base_offset
    assert log.delete_records(third + 1) == third + 1
    assert isinstance(log.read(third, 10), OffsetOutOfRange)
    assert log.delete_old_segments() == 2
    assert log.segments[0].base_offset == third
    assert log.log_start_offset == third + 1


def test_compacted_topics_keep_their_segments(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, retention_ms=1, cleanup_policy=frozenset({"compact"}))
    fill(log, clock, 30)
    clock.advance(10 * DAY_MS)
    assert log.delete_old_segments() == 0


def test_a_reader_holding_a_span_finishes_after_the_segment_is_deleted(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, retention_ms=DAY_MS, file_delete_delay_ms=60_000)
    fill(log, clock, 60)
    result = log.read(0, 1 << 20)
    assert isinstance(result, ReadResult)
    (span,) = result.spans
    expected = span.read_bytes()
    old_log = log.segments[0].log_path
    log.delete_old_segments()
    assert not old_log.exists()
    assert old_log.with_name(old_log.name + ".deleted").exists()
    assert span.read_bytes() == expected  # renamed, still readable
    assert log.remove_deleted_files() == 0  # file.delete.delay.ms not yet passed
    clock.advance(60_000)
    assert log.remove_deleted_files() > 0
    assert not list((tmp_path / "t-0").glob("*.deleted"))
    read_end, write_end = os.pipe()
    try:
        sent = os.sendfile(write_end, span.fileno(), span.position, span.size_bytes)
        assert os.read(read_end, sent) == expected[:sent]  # unlinked, the open file still serves
    finally:
        os.close(read_end)
        os.close(write_end)


def test_segments_without_timestamps_age_by_file_time(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, retention_ms=DAY_MS)
    for _ in range(30):  # magic-0 data converted up carries no timestamps
        log.append(bytearray(encode_batch([Record(0, NO_TIMESTAMP, b"k", b"v" * 200)])))
    assert log.delete_old_segments() == 0  # files are new
    clock.now_ms = BASE_TIME_MS + 10 * 365 * DAY_MS  # ...and now very old
    assert log.delete_old_segments() > 0
