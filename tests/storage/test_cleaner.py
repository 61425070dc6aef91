"""Compaction keeps exactly the latest record per key."""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import threading

import pytest

from tests.storage.helpers import (
    FakeClock,
    read_all,
    read_batches,
    spoil_header,
    unparsable_batch,
)
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    decode_batch,
    encode_batch,
    iter_batches,
)
from wirekafka.storage.cleaner import CleanerStats, clean_log
from wirekafka.storage.compacted_copy import CompactionJob, CompactionOutcome, make_copies
from wirekafka.storage.config import HOUR_MS, LogConfig
from wirekafka.storage.files import CLEANED_SUFFIX
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.producer_state import InvalidProducerBatch
from wirekafka.storage.segment import LogSegment

COMPACTED = LogConfig(
    segment_bytes=4000, cleanup_policy=frozenset({"compact"}), delete_retention_ms=HOUR_MS
)


def new_log(tmp_path, clock, config=COMPACTED):
    return PartitionLog(tmp_path / "c-0", "c", 0, config, clock)


def write_updates(log, clock, rng, count, keys):
    latest: dict[bytes, bytes | None] = {}
    offsets: dict[bytes, int] = {}
    for i in range(count):
        batch_keys = [rng.choice(keys) for _ in range(rng.randint(1, 4))]
        records = []
        for j, key in enumerate(batch_keys):
            value = None if rng.random() < 0.1 else b"%s=%d" % (key, i)
            records.append(Record(j, clock.now_ms, key, value))
        codec = rng.choice(list(CompressionType))
        info = log.append(bytearray(encode_batch(records, compression=codec)))
        for j, record in enumerate(records):
            latest[record.key] = record.value
            offsets[record.key] = info.first_offset + j
    return latest, offsets


def surviving(log):
    return [record for batch in read_batches(log) for record in batch.records]


def test_compaction_keeps_exactly_the_last_value_per_key(tmp_path):
    clock = FakeClock()
    rng = random.Random(5)
    log = new_log(tmp_path, clock)
    keys = [b"k%02d" % i for i in range(25)]
    latest, offsets = write_updates(log, clock, rng, 400, keys)
    log.roll()
    end = log.log_end_offset
    stats = clean_log(log)
    assert stats.segments_rewritten > 0 and stats.records_removed > 0
    records = surviving(log)
    assert {r.key: r.value for r in records} == latest  # tombstones still young: kept
    assert sorted(r.offset for r in records) == sorted(
        offsets.values()
    )  # one per key, at its offset
    assert log.log_end_offset == end
    # Offsets keep their gaps; reading from any offset still works.
    assert [r.key for r in records] == sorted(latest, key=lambda k: offsets[k])


def test_old_tombstones_are_dropped(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"gone", b"v")])))
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"gone", None)])))
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"kept", b"v")])))
    log.roll()
    clean_log(log)
    assert [(r.key, r.value) for r in surviving(log)] == [(b"gone", None), (b"kept", b"v")]
    clock.advance(HOUR_MS + 1)
    clean_log(log)
    assert [(r.key, r.value) for r in surviving(log)] == [(b"kept", b"v")]


def test_records_without_a_key_do_not_survive_compaction(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    log.append(
        bytearray(
            encode_batch([Record(0, clock.now_ms, None, b"x"), Record(1, clock.now_ms, b"k", b"y")])
        )
    )
    log.roll()
    clean_log(log)
    assert [(r.key, r.value) for r in surviving(log)] == [(b"k", b"y")]


def test_the_active_segment_is_left_alone_and_appends_go_on(tmp_path):
    clock = FakeClock()
    rng = random.Random(8)
    log = new_log(tmp_path, clock)
    keys = [b"k%d" % i for i in range(10)]
    write_updates(log, clock, rng, 300, keys)
    active = log.segments[-1]
    active_bytes = active.size
    stop = threading.Event()
    appended = []

    def appender():
        while not stop.is_set():
            appended.append(
                log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"live", b"v")])))
            )

    thread = threading.Thread(target=appender)
    thread.start()
    try:
        clean_log(log)
    finally:
        stop.set()
        thread.join()
    assert appended, "appends were blocked during compaction"
    assert log.segments[-1] is active or active.size >= active_bytes
    records = surviving(log)
    live = [r for r in records if r.key == b"live"]
    assert live  # nothing appended during the pass was lost
    assert max(r.offset for r in records) == log.log_end_offset - 1


def test_compaction_survives_a_restart(tmp_path):
    clock = FakeClock()
    rng = random.Random(11)
    log = new_log(tmp_path, clock)
    latest, _ = write_updates(log, clock, rng, 200, [b"a", b"b", b"c"])
    log.roll()
    clean_log(log)
    log.close()
    reopened = PartitionLog(tmp_path / "c-0", "c", 0, COMPACTED, clock, clean_shutdown=False)
    assert {r.key: r.value for r in surviving(reopened)} == latest


def test_logs_that_are_not_compacted_are_not_touched(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, LogConfig(segment_bytes=4000))
    write_updates(log, clock, random.Random(1), 100, [b"x"])
    assert clean_log(log).segments_rewritten == 0


# incremental passes: the first dirty offset and min.cleanable.dirty.ratio


class CountingRuns:
    """A pass's reading and writing done here, each job kept."""

    def __init__(self) -> None:
        self.jobs: list[CompactionJob] = []

    def __call__(self, job: CompactionJob) -> CompactionOutcome:
        self.jobs.append(job)
        return make_copies(job)


@dataclasses.dataclass
class CleanedOnce:
    """A compacted log written with random updates, rolled, and cleaned once."""

    log: PartitionLog
    clock: FakeClock
    rng: random.Random
    first_dirty: int


def cleaned_once(tmp_path, seed: int, keys: list[bytes], updates: int) -> CleanedOnce:
    clock = FakeClock()
    rng = random.Random(seed)
    log = new_log(tmp_path, clock)
    write_updates(log, clock, rng, updates, keys)
    log.roll()
    first_dirty = clean_log(log).first_dirty_offset
    assert first_dirty == log.segments[-1].base_offset
    return CleanedOnce(log, clock, rng, first_dirty)


def test_a_pass_makes_everything_before_the_active_segment_clean(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    write_updates(log, clock, random.Random(3), 200, [b"k%d" % i for i in range(8)])
    stats = clean_log(log)
    assert stats.first_dirty_offset == log.segments[-1].base_offset


def test_a_clean_log_is_not_read_again_until_enough_of_it_is_dirty(tmp_path):
    keys = [b"k%02d" % i for i in range(20)]
    once = cleaned_once(tmp_path, 4, keys, 300)
    log, clock, rng, first_dirty = once.log, once.clock, once.rng, once.first_dirty
    runs = CountingRuns()
    # nothing dirty but the active segment
    assert clean_log(log, first_dirty, run=runs) == CleanerStats()
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"k00", b"late")])))
    log.roll()  # one dirty batch: far below half of the log
    assert clean_log(log, first_dirty, run=runs) == CleanerStats()
    assert runs.jobs == []
    latest, _ = write_updates(log, clock, rng, 300, keys)
    log.roll()
    stats = clean_log(log, first_dirty, run=runs)
    assert stats.first_dirty_offset == log.segments[-1].base_offset
    assert stats.records_removed > 0
    [job] = runs.jobs  # keys read from the first dirty segment on
    assert job.segments[job.first_dirty][0] <= first_dirty < job.segments[job.first_dirty + 1][0]
    assert {r.key: r.value for r in surviving(log)} == latest


def test_records_in_the_clean_part_go_when_the_dirty_part_supersedes_them(tmp_path):
    old_keys = [b"old%02d" % i for i in range(10)]
    once = cleaned_once(tmp_path, 6, old_keys, 100)
    log, clock, first_dirty = once.log, once.clock, once.first_dirty
    latest, offsets = {}, {}
    for key in old_keys[:5]:  # new values for half the keys, after the clean part
        info = log.append(bytearray(encode_batch([Record(0, clock.now_ms, key, b"new")])))
        latest[key], offsets[key] = b"new", info.first_offset
    log.roll()
    before = {r.key: (r.value, r.offset) for r in surviving(log) if r.key in old_keys[5:]}
    config = dataclasses.replace(COMPACTED, min_cleanable_dirty_ratio=0.0)
    log.config = config
    assert clean_log(log, first_dirty).first_dirty_offset == log.segments[-1].base_offset
    records = surviving(log)
    assert sorted((r.key, r.offset) for r in records) == sorted(
        [(k, o) for k, o in offsets.items()] + [(k, vo[1]) for k, vo in before.items()]
    )
    assert {r.key: r.value for r in records if r.key in latest} == latest


def test_min_cleanable_dirty_ratio_decides_whether_a_pass_runs(tmp_path):
    keys = [b"k%d" % i for i in range(6)]
    once = cleaned_once(tmp_path, 9, keys, 300)
    log, first_dirty = once.log, once.first_dirty
    write_updates(log, once.clock, once.rng, 60, keys)
    log.roll()
    segments = log.segments[:-1]
    dirty = sum(s.size for s in segments if s.base_offset >= first_dirty)
    share = dirty / sum(s.size for s in segments)
    assert 0 < share < 1
    log.config = dataclasses.replace(COMPACTED, min_cleanable_dirty_ratio=min(1.0, share + 0.01))
    assert clean_log(log, first_dirty).first_dirty_offset is None
    log.config = dataclasses.replace(COMPACTED, min_cleanable_dirty_ratio=share)
    assert clean_log(log, first_dirty).first_dirty_offset == log.segments[-1].base_offset


# merging the small segments a pass leaves


def test_segments_cleaned_small_are_merged_within_segment_bytes(tmp_path):
    clock = FakeClock()
    rng = random.Random(12)
    log = new_log(tmp_path, clock)
    keys = [b"k%02d" % i for i in range(15)]
    latest, offsets = write_updates(log, clock, rng, 600, keys)
    log.roll()
    before = log.segments
    assert len(before) > 15
    stats = clean_log(log)
    after = log.segments
    assert len(after) < len(before) / 5
    assert stats.segments_rewritten == len(before) - 1  # all inactive ones, into fewer
    assert all(segment.size <= COMPACTED.segment_bytes for segment in after)
    assert after[0].base_offset == before[0].base_offset
    assert after[-1] is before[-1]  # the active segment is untouched
    assert sorted(directory_logs(tmp_path)) == [s.log_path.name for s in after]
    records = surviving(log)
    assert {r.key: r.value for r in records} == latest
    assert sorted(r.offset for r in records) == sorted(offsets.values())
    for record in records:  # every offset is still found through the merged indexes
        first = read_batches(log, record.offset)[0]
        assert record in first.records
    reopened = PartitionLog(tmp_path / "c-0", "c", 0, COMPACTED, clock, clean_shutdown=False)
    assert [r.offset for r in surviving(reopened)] == [r.offset for r in records]


def directory_logs(tmp_path):
    return [path.name for path in (tmp_path / "c-0").glob("*.log")]


class Died(Exception):
    """The process dying at this point."""


def test_a_merge_interrupted_after_its_swap_file_is_completed_on_reopen(tmp_path, monkeypatch):
    clock = FakeClock()
    rng = random.Random(13)
    log = new_log(tmp_path, clock)
    latest, offsets = write_updates(log, clock, rng, 300, [b"a", b"b", b"c", b"d"])
    log.roll()
    bases = [segment.base_offset for segment in log.segments]
    assert len(bases) > 5

    def die(segment):
        raise Died

    monkeypatch.setattr(LogSegment, "mark_deleted", die)  # after .cleaned became .swap
    with pytest.raises(Died):
        clean_log(log)
    monkeypatch.undo()
    names = sorted(path.name for path in (tmp_path / "c-0").iterdir())
    assert f"{bases[0]:020d}.log.swap" in names
    assert f"{bases[1]:020d}.log" in names  # the segments merged into it are still there
    del log  # as if the process died: nothing closed
    reopened = PartitionLog(tmp_path / "c-0", "c", 0, COMPACTED, clock, clean_shutdown=False)
    records = surviving(reopened)
    assert {r.key: r.value for r in records} == latest
    assert sorted(r.offset for r in records) == sorted(offsets.values())
    assert not list((tmp_path / "c-0").glob("*.swap"))
    assert len(reopened.segments) < len(bases)


def test_a_pass_interrupted_before_its_swap_leaves_the_log_as_it_was(tmp_path, monkeypatch):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    write_updates(log, clock, random.Random(14), 300, [b"a", b"b", b"c", b"d"])
    log.roll()
    before = surviving(log)
    original = LogSegment.replace_file_suffix

    def die_before_swap(segment, old, new):
        if old == CLEANED_SUFFIX:
            raise Died
        return original(segment, old, new)

    monkeypatch.setattr(LogSegment, "replace_file_suffix", die_before_swap)
    with pytest.raises(Died):
        clean_log(log)
    monkeypatch.undo()
    names = sorted(path.name for path in (tmp_path / "c-0").iterdir())
    assert [name for name in names if name.endswith(".cleaned")] == [
        "00000000000000000000.index.cleaned",
        "00000000000000000000.log.cleaned",
        "00000000000000000000.timeindex.cleaned",
    ]  # the copy was whole, indexes and all, before anything else changed
    del log
    reopened = PartitionLog(tmp_path / "c-0", "c", 0, COMPACTED, clock, clean_shutdown=False)
    assert not list((tmp_path / "c-0").glob("*.cleaned"))
    assert surviving(reopened) == before


def test_the_swap_holds_the_log_s_lock_for_renames_only(tmp_path, monkeypatch):
    # The index rebuild of the copy (a scan of every batch) and every fsync happen
    # before the lock is taken or after it is let go: appends go on meanwhile.
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    latest, _ = write_updates(log, clock, random.Random(15), 300, [b"a", b"b", b"c"])
    log.roll()
    lock_held: dict[str, list[bool]] = {"rebuild_indexes": [], "fsync": [], "rename": []}

    def watch(name, original):
        def watching(*args, **kwargs):
            lock_held[name].append(log._lock.locked())
            return original(*args, **kwargs)

        return watching

    monkeypatch.setattr(
        LogSegment, "rebuild_indexes", watch("rebuild_indexes", LogSegment.rebuild_indexes)
    )
    monkeypatch.setattr(os, "fsync", watch("fsync", os.fsync))
    monkeypatch.setattr(os, "rename", watch("rename", os.rename))
    assert clean_log(log).segments_rewritten > 1
    assert lock_held["rebuild_indexes"] and not any(lock_held["rebuild_indexes"])
    assert lock_held["fsync"] and not any(lock_held["fsync"])
    assert any(lock_held["rename"])  # the swap itself: old files .deleted, the copy's named
    assert {r.key: r.value for r in surviving(log)} == latest


def test_a_copy_whose_segments_left_meanwhile_is_not_swapped_in(tmp_path, monkeypatch):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    write_updates(log, clock, random.Random(16), 300, [b"a", b"b", b"c"])
    log.roll()
    original = LogSegment.rebuild_indexes

    def retention_meanwhile(segment):
        if segment.log_path.name.endswith(CLEANED_SUFFIX) and log.segments[0].size:
            log.delete_records(log.log_end_offset)  # as retention does, while the copy is made
            log.delete_old_segments()
        original(segment)

    monkeypatch.setattr(LogSegment, "rebuild_indexes", retention_meanwhile)
    stats = clean_log(log)
    assert stats.segments_rewritten == 0
    names = [path.name for path in (tmp_path / "c-0").iterdir()]
    assert not [name for name in names if name.endswith((".cleaned", ".swap"))]
    assert [s.base_offset for s in log.segments] == [log.log_end_offset]


# idempotent producers: their sequence numbers outlive their records


def producer_batch(clock, keys, sequence, producer_id=42):
    records = [Record(i, clock.now_ms, key, b"from %d" % producer_id) for i, key in enumerate(keys)]
    return bytearray(
        encode_batch(records, producer_id=producer_id, producer_epoch=0, base_sequence=sequence)
    )


def test_a_producers_last_batch_stays_empty_when_all_its_records_go(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for n in range(50):
        log.append(producer_batch(clock, [b"a", b"b"], sequence=2 * n))
    last = read_batches(log)[-1].header
    kept_partly = log.append(producer_batch(clock, [b"c", b"d"], sequence=100, producer_id=43))
    for key in (b"a", b"b", b"d"):  # later values from a plain producer
        log.append(bytearray(encode_batch([Record(0, clock.now_ms, key, b"plain")])))
    log.roll()
    clean_log(log)
    headers = {h.producer_id: h for h in log.batch_headers() if h.producer_id != -1}
    empty = headers[42]
    assert empty.record_count == 0
    assert (empty.base_offset, empty.last_offset, empty.last_sequence) == (
        last.base_offset,
        last.last_offset,
        99,
    )
    assert sum(1 for h in log.batch_headers() if h.producer_id == 42) == 1
    partly = headers[43]
    assert (partly.base_offset, partly.last_offset, partly.record_count) == (
        kept_partly.first_offset,
        kept_partly.last_offset,
        1,
    )
    assert partly.last_sequence == 101
    assert {r.key: r.value for r in surviving(log)} == {
        b"a": b"plain",
        b"b": b"plain",
        b"c": b"from 43",
        b"d": b"plain",
    }

    log.close()  # a restarted broker finds the producer in its empty batch
    log = PartitionLog(tmp_path / "c-0", "c", 0, COMPACTED, clock)
    end = log.log_end_offset
    retried = log.append(producer_batch(clock, [b"a", b"b"], sequence=98))
    assert retried.duplicate and retried.first_offset == last.base_offset
    with pytest.raises(InvalidProducerBatch) as gap:
        log.append(producer_batch(clock, [b"e"], sequence=103))
    assert gap.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == end

    assert clean_log(log).records_removed == 0  # a later pass keeps the one empty batch
    assert sum(1 for h in log.batch_headers() if h.producer_id == 42) == 1
    written = log.append(producer_batch(clock, [b"z"], sequence=100))  # the producer writes again
    assert not written.duplicate and written.first_offset == end
    log.roll()
    clean_log(log)
    assert [h.record_count for h in log.batch_headers() if h.producer_id == 42] == [1]


# how long records wait: min.compaction.lag.ms, max.compaction.lag.ms, producer.id.expiration.ms


def test_records_newer_than_min_compaction_lag_stay_uncompacted(tmp_path):
    clock = FakeClock()
    config = dataclasses.replace(
        COMPACTED, min_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.0
    )
    log = new_log(tmp_path, clock, config)
    rng = random.Random(21)
    keys = [b"k%d" % i for i in range(6)]
    write_updates(log, clock, rng, 120, keys)
    log.roll()
    boundary = log.log_end_offset
    clock.advance(61_000)  # the records above are now older than the lag; the next are not
    latest, _ = write_updates(log, clock, rng, 120, keys)
    log.roll()
    young = [(r.offset, r.key, r.value) for r in surviving(log) if r.offset >= boundary]
    assert len(log.segments) > 4 and sum(s.base_offset >= boundary for s in log.segments) > 2

    stats = clean_log(log)
    assert stats.first_dirty_offset == boundary and stats.records_removed > 0
    records = surviving(log)
    assert [(r.offset, r.key, r.value) for r in records if r.offset >= boundary] == young
    old_keys = [r.key for r in records if r.offset < boundary]
    assert len(old_keys) == len(set(old_keys))  # what stays below the boundary is clean

    clock.advance(60_000)  # now all of it is old enough
    stats = clean_log(log, stats.first_dirty_offset)
    assert stats.first_dirty_offset == log.segments[-1].base_offset
    records = surviving(log)
    assert {r.key: r.value for r in records} == latest
    assert len(records) == len(latest)


def test_a_log_waiting_past_max_compaction_lag_is_cleaned_whatever_its_dirty_ratio(tmp_path):
    keys = [b"k%02d" % i for i in range(20)]
    once = cleaned_once(tmp_path, 8, keys, 300)
    log, clock, first_dirty = once.log, once.clock, once.first_dirty
    log.config = dataclasses.replace(COMPACTED, max_compaction_lag_ms=10 * 60_000)
    before = {r.key: r.value for r in surviving(log)}
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"k00", b"late")])))
    log.roll()  # one small dirty segment: far below min.cleanable.dirty.ratio
    clock.advance(10 * 60_000)
    assert clean_log(log, first_dirty) == CleanerStats()  # not older than the lag yet
    clock.advance(1)
    stats = clean_log(log, first_dirty)
    assert stats.first_dirty_offset == log.segments[-1].base_offset
    assert stats.records_removed == (b"k00" in before)
    assert {r.key: r.value for r in surviving(log)} == before | {b"k00": b"late"}


def test_a_compacted_topic_rolls_its_active_segment_at_max_compaction_lag(tmp_path):
    lag = dataclasses.replace(COMPACTED, segment_bytes=1 << 20, max_compaction_lag_ms=60_000)
    for config, rolls in (
        (lag, True),
        (dataclasses.replace(lag, cleanup_policy=frozenset({"delete"})), False),
    ):
        clock = FakeClock()
        log = PartitionLog(tmp_path / f"roll-{rolls}-0", "roll", 0, config, clock)
        for stamp in (0, 59_999, 60_000):  # record time, as segment.ms counts it
            record = Record(0, clock.now_ms + stamp, b"k", b"v")
            log.append(bytearray(encode_batch([record])))
        assert [s.base_offset for s in log.segments] == ([0, 2] if rolls else [0])


def test_a_producers_empty_batch_goes_once_the_producer_would_be_forgotten(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, dataclasses.replace(COMPACTED, min_cleanable_dirty_ratio=0.0))
    for n in range(20):
        log.append(producer_batch(clock, [b"a"], sequence=n))
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"a", b"plain")])))
    log.roll()
    first_dirty = clean_log(log, producer_id_expiration_ms=HOUR_MS).first_dirty_offset
    assert [h.record_count for h in log.batch_headers() if h.producer_id == 42] == [0]

    clock.advance(HOUR_MS)  # not yet: the producer is still remembered
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"b", b"plain")])))
    log.roll()
    first_dirty = clean_log(log, first_dirty, producer_id_expiration_ms=HOUR_MS).first_dirty_offset
    assert [h.record_count for h in log.batch_headers() if h.producer_id == 42] == [0]

    clock.advance(1)
    big = b"c" * 3800  # too big to share a segment with the clean part: that goes alone
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"c", big)])))
    log.roll()
    stats = clean_log(log, first_dirty, producer_id_expiration_ms=HOUR_MS)
    assert stats.segments_rewritten and stats.records_removed == 0
    assert [h for h in log.batch_headers() if h.producer_id == 42] == []
    assert {r.key: r.value for r in surviving(log)} == {
        b"a": b"plain",
        b"b": b"plain",
        b"c": big,
    }
    log.close()  # a restarted broker no longer knows the producer: any sequence is new
    log = PartitionLog(tmp_path / "c-0", "c", 0, COMPACTED, clock)
    assert not log.append(producer_batch(clock, [b"a"], sequence=57)).duplicate


# Data a client wrote that cannot be parsed


def readable_and_raw(log):
    """(records of the batches that parse, raw bytes of those that do not)."""
    data = read_all(log)
    records, unparsable = [], []
    for position, header in iter_batches(data):
        try:
            records += decode_batch(data, position).records
        except ProtocolError:
            unparsable.append(data[position : position + header.size_bytes])
    return records, unparsable


def test_an_unparsable_batch_is_kept_byte_for_byte_and_supersedes_nothing(tmp_path, caplog):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    junk = unparsable_batch([b"a", b"b"])
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"a", b"a1")])))
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"b", b"b1")])))
    junk_offset = log.append(bytearray(junk)).first_offset
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"a", b"a2")])))
    log.roll()
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        stats = clean_log(log)
    assert stats.records_removed == 1  # a1 only: the junk's keys are unknown, b1 stays
    records, unparsable = readable_and_raw(log)
    assert [(r.key, r.value) for r in records] == [(b"b", b"b1"), (b"a", b"a2")]
    assert [u[8:] for u in unparsable] == [junk[8:]]  # all but the offset it was given
    reports = [r for r in caplog.records if "cannot be parsed" in r.getMessage()]
    assert len(reports) == 1
    assert f"c-0: the batch at offsets {junk_offset}..{junk_offset + 1}" in reports[0].getMessage()

    # a later pass reads the junk again: it is not reported again, and is still kept
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"b", b"b2")])))
    log.roll()
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        caplog.clear()
        assert clean_log(log).records_removed == 1  # from offset 0: the junk is read again
    assert not [r for r in caplog.records if "cannot be parsed" in r.getMessage()]
    records, unparsable = readable_and_raw(log)
    assert {r.key: r.value for r in records} == {b"a": b"a2", b"b": b"b2"}
    assert [u[8:] for u in unparsable] == [junk[8:]]


def test_a_batch_header_that_cannot_be_read_ends_the_pass_not_the_cleaner(tmp_path, caplog):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for value in (b"1", b"2", b"3"):
        log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"k", value)])))
    log.roll()
    spoil_header(log, 1)
    before = log.segments[0].log_path.read_bytes()
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        assert clean_log(log) == CleanerStats()  # no pass: nothing checkpointed
        assert clean_log(log) == CleanerStats()
    reports = [r for r in caplog.records if "cannot be read to its end" in r.getMessage()]
    assert len(reports) == 1 and "c-0: segment 00000000000000000000" in reports[0].getMessage()
    assert not log.offline
    assert log.segments[0].log_path.read_bytes() == before  # left as it was


def test_a_batch_failing_its_crc_ends_the_pass_and_is_not_copied(tmp_path, caplog):
    """Copied on, it would make the cleaned segment end there when its indexes are
    rebuilt (they are rebuilt by recovery's checks), losing the batches after it."""
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for value in (b"1", b"2", b"3"):
        log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"k", value)])))
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, b"other", b"x")])))
    log.roll()
    segment = log.segments[0]
    found = segment.find_batch(1)
    assert found is not None
    with segment.log_path.open("r+b") as file:  # a bit the disk flipped in the value
        file.seek(found.position + found.header.size_bytes - 2)
        file.write(b"\x00")
    before = segment.log_path.read_bytes()
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        assert clean_log(log) == CleanerStats()
        assert clean_log(log) == CleanerStats()
    reports = [r.getMessage() for r in caplog.records if "fails its CRC" in r.getMessage()]
    assert len(reports) == 1 and "the batch at offset 1 fails its CRC" in reports[0]
    assert log.segments[0].log_path.read_bytes() == before
    assert [h.base_offset for h in log.batch_headers()] == [0, 1, 2, 3]
