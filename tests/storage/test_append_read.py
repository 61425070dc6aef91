"""Appends and reads: offsets, segment rolls, spans, the high watermark, time lookups."""

from __future__ import annotations

import os
import struct
import threading

import pytest

from tests.storage.helpers import (
    BASE_TIME_MS,
    FakeClock,
    make_batch,
    read_all,
    read_batches,
    with_base_offset,
)
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.record import NO_TIMESTAMP, Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    crc_matches,
    encode_batch,
    iter_batches,
    read_batch_header,
)
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    OffsetOutOfRange,
    PartitionLog,
    ReadResult,
    RollDue,
    TimestampOffset,
)
from wirekafka.storage.segment import RECENT_APPENDS, LogSegment

SMALL = LogConfig(segment_bytes=4096, index_interval_bytes=256)


def new_log(tmp_path, config=SMALL, clock=None, name="topic-0"):
    return PartitionLog(tmp_path / name, "topic", 0, config, clock or FakeClock())


def append_all(log, batches):
    return [log.append(bytearray(batch)) for batch in batches]


def test_round_trip_across_segment_rolls(tmp_path):
    log = new_log(tmp_path)
    batches = [make_batch(i, records=1 + i % 4, value_bytes=50 + 37 * (i % 9)) for i in range(150)]
    infos = append_all(log, batches)
    assert len(log.segments) > 5
    expected, next_offset = [], 0
    for batch, info in zip(batches, infos, strict=True):
        assert info.first_offset == next_offset
        expected.append(with_base_offset(batch, next_offset))
        next_offset = info.last_offset + 1
    assert log.log_end_offset == next_offset
    assert read_all(log) == b"".join(expected)
    names = sorted(p.name for p in (tmp_path / "topic-0").iterdir())
    assert names[0] == "00000000000000000000.index"
    assert {name.split(".")[1] for name in names} == {"log", "index", "timeindex"}
    assert all(len(name.split(".")[0]) == 20 for name in names)


def test_append_patches_a_writable_buffer_in_place_and_copies_bytes(tmp_path):
    log = new_log(tmp_path)
    log.append(bytearray(make_batch(0)))
    frame = bytearray(make_batch(1))
    log.append(frame)
    assert read_batch_header(frame).base_offset == 3
    immutable = make_batch(2)
    log.append(immutable)
    assert read_batch_header(immutable).base_offset == 0  # untouched


def test_several_batches_in_one_append(tmp_path):
    log = new_log(tmp_path)
    info = log.append(bytearray(make_batch(0) + make_batch(1, records=5)))
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 7, 8)
    assert [b.header.base_offset for b in read_batches(log)] == [0, 3]


@pytest.mark.parametrize("timestamp_type", list(TimestampType))
def test_a_batch_appends_alike_with_and_without_its_headers(tmp_path, timestamp_type):
    """One batch alone is read without its header; with headers given (as the
    Produce handler gives them), or several batches, it goes header by header."""
    config = LogConfig(
        segment_bytes=4096, index_interval_bytes=256, message_timestamp_type=timestamp_type
    )
    stamps = [BASE_TIME_MS + 10 * i - 25 * (i % 3) for i in range(40)]  # mostly rising
    batches = [make_batch(i, records=1 + i % 3, timestamp=stamps[i]) for i in range(40)]
    infos = {}
    for name, with_headers in (("bare-0", False), ("given-0", True)):
        log = new_log(tmp_path, config, FakeClock(), name=name)
        infos[name] = [
            log.append(data, list(iter_batches(data)) if with_headers else None)
            for data in map(bytearray, batches)
        ]
        assert len(log.segments) > 2
        log.close()
    assert infos["bare-0"] == infos["given-0"]
    for suffix in ("log", "index", "timeindex"):
        for bare in sorted((tmp_path / "bare-0").glob(f"*.{suffix}")):
            assert bare.read_bytes() == (tmp_path / "given-0" / bare.name).read_bytes(), bare.name


def test_garbage_is_refused_before_anything_is_written(tmp_path):
    log = new_log(tmp_path)
    log.append(bytearray(make_batch(0)))
    with pytest.raises(ProtocolError):
        log.append(bytearray(make_batch(1)[:-5]))
    with pytest.raises(ProtocolError):
        log.append(bytearray())
    assert log.log_end_offset == 3


@pytest.mark.parametrize("offset", range(0, 30))
def test_read_from_any_offset_starts_with_the_batch_holding_it(tmp_path, offset):
    log = new_log(tmp_path)
    append_all(log, [make_batch(i, records=3) for i in range(10)])
    result = log.read(offset, 1)
    assert isinstance(result, ReadResult)
    (span,) = result.spans
    header = read_batch_header(span.read_bytes())
    assert header.base_offset == offset - offset % 3
    assert header.last_offset >= offset


def test_byte_budget_gives_whole_batches_and_at_least_one(tmp_path):
    log = new_log(tmp_path, LogConfig(index_interval_bytes=100))
    batches = [make_batch(i, value_bytes=200) for i in range(40)]
    append_all(log, batches)
    size = len(batches[0])
    for budget in (1, size - 1, size, size + 1, 3 * size + 5, 10**9):
        result = log.read(0, budget)
        data = b"".join(span.read_bytes() for span in result.spans)
        whole = max(1, budget // size) if budget < 10**9 else 40
        assert len(data) == whole * size
        assert len(list(iter_batches(data))) == whole
    no_min = log.read(0, size - 1, min_one_batch=False)
    assert no_min.spans == []


def test_reads_stop_before_the_high_watermark(tmp_path):
    log = new_log(tmp_path, LogConfig(index_interval_bytes=100))
    append_all(log, [make_batch(i) for i in range(10)])  # offsets 0..29
    for high_watermark in (0, 1, 3, 4, 15, 29, 30):
        result = log.read(0, 1 << 20, max_offset=high_watermark)
        headers = [h for _, h in iter_batches(b"".join(s.read_bytes() for s in result.spans))]
        assert all(h.last_offset < high_watermark for h in headers)
        assert sum(h.record_count for h in headers) == high_watermark - high_watermark % 3
        assert result.high_watermark == high_watermark
    assert log.read(12, 1 << 20, max_offset=12).spans == []


def test_offsets_outside_the_log_are_out_of_range(tmp_path):
    log = new_log(tmp_path)
    append_all(log, [make_batch(i) for i in range(5)])
    assert log.read(16, 100) == OffsetOutOfRange(16, 0, 15)
    assert log.read(-1, 100) == OffsetOutOfRange(-1, 0, 15)
    at_end = log.read(15, 100)
    assert isinstance(at_end, ReadResult) and at_end.spans == []
    log.delete_records(6)
    assert log.read(5, 100) == OffsetOutOfRange(5, 6, 15)
    assert isinstance(log.read(6, 100), ReadResult)


def test_reads_continue_into_the_next_segment(tmp_path):
    log = new_log(tmp_path)
    append_all(log, [make_batch(i, value_bytes=300) for i in range(30)])
    segments = log.segments
    second_base = segments[1].base_offset
    result = log.read(second_base - 1, 1 << 20)
    data = b"".join(span.read_bytes() for span in result.spans)
    headers = [h for _, h in iter_batches(data)]
    assert headers[-1].next_offset == second_base  # one read stays within a segment
    following = log.read(second_base, 1 << 20)
    assert read_batch_header(following.spans[0].read_bytes()).base_offset == second_base


def test_offsets_by_time(tmp_path):
    log = new_log(tmp_path)
    # batch i holds records at BASE + 100 i + {0, 1, 2}
    append_all(log, [make_batch(i, timestamp=BASE_TIME_MS + 100 * i) for i in range(60)])
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == TimestampOffset(-1, 0)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == TimestampOffset(-1, 180)
    assert log.offset_for_timestamp(MAX_TIMESTAMP) == TimestampOffset(BASE_TIME_MS + 5902, 179)
    for i in (0, 1, 17, 33, 59):
        for extra in (0, 1, 2):
            wanted = BASE_TIME_MS + 100 * i + extra
            assert log.offset_for_timestamp(wanted) == TimestampOffset(wanted, 3 * i + extra)
        between = BASE_TIME_MS + 100 * i + 50
        expected = None if i == 59 else TimestampOffset(between + 50, 3 * (i + 1))
        assert log.offset_for_timestamp(between) == expected
    assert log.offset_for_timestamp(0) == TimestampOffset(BASE_TIME_MS, 0)


def test_log_append_time_topic(tmp_path):
    clock = FakeClock()
    config = LogConfig(message_timestamp_type=TimestampType.LOG_APPEND_TIME)
    log = new_log(tmp_path, config, clock)
    info = log.append(bytearray(make_batch(0, timestamp=5)))
    assert info.log_append_time_ms == clock.now_ms
    data = read_all(log)
    header = read_batch_header(data)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == clock.now_ms
    assert crc_matches(data)
    create_time_log = new_log(tmp_path, name="other-0")
    assert create_time_log.append(bytearray(make_batch(0))).log_append_time_ms == -1


def test_index_files_hold_sparse_entries_in_kafkas_layout(tmp_path):
    log = new_log(tmp_path, LogConfig(index_interval_bytes=1000))
    batches = [make_batch(i, value_bytes=300) for i in range(20)]  # ~1 KB each
    append_all(log, batches)
    log.close()
    index = (tmp_path / "topic-0" / "00000000000000000000.index").read_bytes()
    entries = [struct.unpack_from(">ii", index, i) for i in range(0, len(index), 8)]
    assert 5 <= len(entries) < 20
    size = len(batches[0])
    for relative_offset, position in entries:
        assert position % size == 0  # each entry points at a batch start
        assert relative_offset == position // size * 3 + 2  # ...and names that batch's last offset
    time_index = (tmp_path / "topic-0" / "00000000000000000000.timeindex").read_bytes()
    assert len(time_index) % 12 == 0 and len(time_index) >= 12
    timestamps = [
        struct.unpack_from(">qi", time_index, i)[0] for i in range(0, len(time_index), 12)
    ]
    assert timestamps == sorted(timestamps)


def test_roll_by_time_counts_in_record_time(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, LogConfig(roll_ms=1000), clock)
    start = clock.now_ms
    # make_batch(timestamp=t) holds records at t, t+1, t+2: its max timestamp is t+2.
    log.append(bytearray(make_batch(0, timestamp=start - 2)))
    log.append(bytearray(make_batch(1, timestamp=start + 999 - 2)))
    assert len(log.segments) == 1
    log.append(bytearray(make_batch(2, timestamp=start + 1000 - 2)))
    assert [s.base_offset for s in log.segments] == [0, 6]


def test_old_data_does_not_roll_a_segment_per_batch(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, LogConfig(roll_ms=1000), clock)
    for i in range(10):  # replayed data, a year old
        log.append(bytearray(make_batch(i, timestamp=clock.now_ms - 365 * 86_400_000)))
    assert len(log.segments) == 1


def test_roll_by_time_without_timestamps_uses_the_wall_clock(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, LogConfig(roll_ms=1000), clock)
    untimed = encode_batch([Record(0, NO_TIMESTAMP, b"k", b"v")])
    log.append(bytearray(untimed))
    clock.advance(999)
    log.append(bytearray(untimed))
    assert len(log.segments) == 1
    clock.advance(1)
    log.append(bytearray(untimed))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_the_index_is_full(tmp_path):
    log = new_log(tmp_path, LogConfig(index_interval_bytes=0, index_max_bytes=8 * 4))
    append_all(log, [make_batch(i) for i in range(20)])
    assert len(log.segments) >= 4
    assert read_batches(log)[-1].header.last_offset == 59


def test_roll_when_the_time_index_is_full_keeps_the_last_timestamp(tmp_path):
    # Room for two time-index entries; an entry every batch; rising timestamps.
    log = new_log(tmp_path, LogConfig(index_interval_bytes=0, index_max_bytes=24))
    append_all(log, [make_batch(i, timestamp=BASE_TIME_MS + 100 * i) for i in range(12)])
    assert len(log.segments) >= 3
    for segment in log.segments[:-1]:
        assert segment.time_index.max_timestamp == segment.max_timestamp
    assert log.offset_for_timestamp(BASE_TIME_MS + 1100) == TimestampOffset(BASE_TIME_MS + 1100, 33)


def test_a_batch_bigger_than_a_segment_still_goes_in(tmp_path):
    log = new_log(tmp_path, LogConfig(segment_bytes=100))
    append_all(log, [make_batch(i, value_bytes=500) for i in range(3)])
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert len(read_batches(log)) == 3


def test_an_append_asked_not_to_roll_stops_at_a_due_roll_and_appends_nothing(tmp_path):
    log = new_log(tmp_path, LogConfig(segment_bytes=100))
    log.append(bytearray(make_batch(0, value_bytes=80)), roll=False)
    data = bytearray(make_batch(0, value_bytes=80))
    with pytest.raises(RollDue):
        log.append(data, roll=False)
    assert (log.log_end_offset, len(log.segments)) == (3, 1)
    # until the roll is made, every append stops there, even one that would fit:
    # the new segment starts at the log end, which must not move meanwhile
    with pytest.raises(RollDue):
        log.append(bytearray(make_batch(0, records=1, value_bytes=1)), roll=False)
    log.roll_when_due()
    log.roll_when_due()  # nothing more to do
    assert [s.base_offset for s in log.segments] == [0, 3]
    assert log.append(data, roll=False).first_offset == 3
    assert [b.header.base_offset for b in read_batches(log)] == [0, 3]


def test_a_roll_creates_the_new_segment_without_the_log_s_lock(tmp_path, monkeypatch):
    log = new_log(tmp_path, LogConfig(segment_bytes=100))
    lock_held = []
    original = LogSegment.__init__

    def creating(segment, *args, **kwargs):
        lock_held.append(log._lock.locked())
        original(segment, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "__init__", creating)
    append_all(log, [make_batch(i, value_bytes=80) for i in range(3)])
    assert len(log.segments) == 3
    assert lock_held == [False, False]  # appends and reads were free meanwhile


def test_partitions_append_independently_and_each_partition_in_order(tmp_path):
    logs = [new_log(tmp_path, name=f"topic-{p}") for p in range(4)]
    batch = make_batch(0)
    errors = []

    def writer(log):
        try:
            for _ in range(300):
                log.append(bytearray(batch))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(log,)) for log in logs for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for log in logs:
        headers = [b.header for b in read_batches(log)]
        assert [h.base_offset for h in headers] == list(range(0, 1800, 3))


def test_spans_are_file_descriptors_for_sendfile(tmp_path):
    log = new_log(tmp_path)
    append_all(log, [make_batch(i) for i in range(5)])
    (span,) = log.read(0, 1 << 20).spans
    out = tmp_path / "out"
    with open(out, "wb") as sink:
        sent = os.sendfile(sink.fileno(), span.fileno(), span.position, span.size_bytes)
    assert sent == span.size_bytes
    assert out.read_bytes() == span.read_bytes()


def test_recent_appends_find_the_batches_the_offset_index_finds(tmp_path):
    """The active segment keeps where its latest appends went, so a consumer reading
    along finds its batch, and the end of what it may be sent, without reading
    headers from the index entry on; every offset is found in the batch the index
    path finds, and every byte budget ends where it ends, for appends of one batch
    and of several, after more appends than it keeps, after a cut and a roll."""
    log = new_log(tmp_path, LogConfig(segment_bytes=1 << 20, index_interval_bytes=4096))

    def by_index(segment, offset, start=0):
        _, position = segment.offset_index.lookup(offset)
        for batch in segment.batches_from(max(position, start)):
            if batch.header.last_offset >= offset:
                return batch
        return None

    def boundary_by_index(segment, limit, start):
        _, position = segment.offset_index.lookup_position(limit)
        position = max(position, start)
        for batch in segment.batches_from(position, limit):
            if batch.position + batch.header.size_bytes > limit:
                break
            position = batch.position + batch.header.size_bytes
        return position

    def check_every_offset():
        (segment,) = log.segments
        for offset in range(log.log_end_offset + 3):
            assert segment.find_batch(offset) == by_index(segment, offset), offset
        for batch in segment.batches_from(0):  # a later start, as a high watermark search
            end = batch.header.last_offset + 1
            assert segment.find_batch(end, batch.position) == by_index(segment, end, batch.position)
        # and the last boundary at or below each byte (a fetch's budget) is the walk's
        starts = [batch.position for batch in segment.batches_from(0)]
        for limit in range(0, segment.size + 1, 37):
            for start in (0, starts[len(starts) // 2]):
                if start <= limit:
                    assert segment.boundary_at_or_below(limit, start) == boundary_by_index(
                        segment, limit, start
                    ), (limit, start)

    for i in range(200):  # more appends than the segment keeps the place of
        data = make_batch(i, records=1 + i % 4)
        if i % 7 == 0:  # several batches in one append
            data += make_batch(1000 + i, records=2)
        log.append(bytearray(data))
    assert 0 < len(log.segments[0]._recent_positions) <= 2 * RECENT_APPENDS
    check_every_offset()
    log.truncate_to(log.log_end_offset - 40)  # a follower's cut
    assert len(log.segments[0]._recent_positions) == 0
    check_every_offset()
    log.append(bytearray(make_batch(500, records=3)))
    check_every_offset()
    log.roll()
    assert len(log.segments[0]._recent_positions) == 0  # a closed segment keeps nothing
