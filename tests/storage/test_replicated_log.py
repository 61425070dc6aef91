"""A partition log for replication: leader epochs stamped and kept, a follower's
appends and truncation, the high watermark and its checkpoint (real files)."""

from __future__ import annotations

import logging
import threading

import pytest

from tests.storage.helpers import FakeClock, make_batch, read_all, with_base_offset
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    HEADER_BYTES,
    crc_matches,
    encode_batch,
    iter_batches,
    read_batch_header,
)
from wirekafka.storage.checkpoint import read_checkpoint, write_checkpoint
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog, ReadResult, RollDue
from wirekafka.storage.log_manager import LogManager
from wirekafka.storage.segment import LogSegment

SMALL = LogConfig(segment_bytes=4096, index_interval_bytes=256)
CHECKPOINT = "leader-epoch-checkpoint"


def open_log(directory, config=SMALL, clock=None, **kwargs):
    return PartitionLog(directory, "t", 0, config, clock or FakeClock(), **kwargs)


def epochs_of(log: PartitionLog) -> list[tuple[int, int]]:
    return [(entry.epoch, entry.start_offset) for entry in log.leader_epochs.entries]


def headers_in(data: bytes) -> list:
    return [header for _, header in iter_batches(data)]


def leader_log(directory, epochs: list[tuple[int, int]], config=SMALL) -> PartitionLog:
    """A leader's log: ``count`` batches of three records for each (epoch, count)."""
    log = open_log(directory, config)
    index = 0
    for epoch, count in epochs:
        for _ in range(count):
            log.append(bytearray(make_batch(index)), leader_epoch=epoch)
            index += 1
    return log


def producer_batch(sequence: int, producer_id: int = 77) -> bytearray:
    records = [Record(0, 1_700_000_000_000, b"k", b"seq %d" % sequence)]
    return bytearray(
        encode_batch(records, producer_id=producer_id, producer_epoch=0, base_sequence=sequence)
    )


# a leader's appends


def test_a_leader_append_stamps_its_epoch_outside_the_crc(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(bytearray(make_batch(0)), leader_epoch=3)
    two = bytearray(make_batch(1) + make_batch(2))
    log.append(two, leader_epoch=3)  # several batches at once: each stamped
    given = bytearray(make_batch(3))
    log.append(given, list(iter_batches(given)), leader_epoch=5)  # headers given
    data = read_all(log)
    assert [h.partition_leader_epoch for h in headers_in(data)] == [3, 3, 3, 5]
    assert all(crc_matches(data, position) for position, _ in iter_batches(data))
    assert epochs_of(log) == [(3, 0), (5, 9)]
    assert log.leader_epochs.dirty  # written by the next flush, not by the append


def test_without_a_leader_epoch_batches_go_in_as_they_came(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    batch = make_batch(0)
    log.append(bytearray(batch))
    assert read_all(log) == batch  # base offset 0, epoch -1 as encoded
    assert read_batch_header(batch).partition_leader_epoch == -1
    log.flush()
    log.close()
    assert log.leader_epochs.entries == []
    assert not (directory / CHECKPOINT).exists()  # one broker: no file at all


def test_the_checkpoint_is_written_by_flush_and_close_and_read_on_open(tmp_path):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(0, 2), (4, 2)])
    assert not (directory / CHECKPOINT).exists()
    log.flush()
    assert (directory / CHECKPOINT).read_text() == "0\n2\n0 0\n4 6\n"
    log.append(bytearray(make_batch(9)), leader_epoch=6)
    log.close()
    assert (directory / CHECKPOINT).read_text() == "0\n3\n0 0\n4 6\n6 12\n"
    reopened = open_log(directory)
    assert epochs_of(reopened) == [(0, 0), (4, 6), (6, 12)]
    assert reopened.leader_epochs.end_offset_for(4, reopened.log_end_offset) == (4, 12)


def test_a_rolled_segment_s_sync_writes_the_checkpoint_first(tmp_path):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(1, 12)])  # rolls past 4 KiB
    assert len(log.segments) > 1
    log.flush_if_due()  # syncs the rolled segment, moving the recovery point
    assert log.recovery_point > 0
    assert (directory / CHECKPOINT).read_text() == "0\n1\n1 0\n"


def test_records_deleted_from_the_start_move_the_first_epoch_up(tmp_path):
    log = leader_log(tmp_path / "t-0", [(0, 2), (1, 2)])
    log.delete_records(4)
    assert epochs_of(log) == [(0, 4), (1, 6)]
    log.delete_records(7)
    assert epochs_of(log) == [(1, 7)]


# a follower's appends


def test_a_follower_appends_the_leader_s_batches_unchanged(tmp_path):
    leader = leader_log(tmp_path / "leader-0", [(0, 3), (2, 4)])
    data = read_all(leader)
    follower = open_log(tmp_path / "t-0")
    first = follower.append_as_follower(data[: len(make_batch(0)) * 2])
    assert (first.first_offset, first.last_offset, first.record_count) == (0, 5, 6)
    assert not first.duplicate and first.log_append_time_ms == -1
    rest = follower.append_as_follower(data[len(make_batch(0)) * 2 :])
    assert (rest.first_offset, rest.last_offset) == (6, 20)
    assert read_all(follower) == data
    assert follower.log_end_offset == leader.log_end_offset == 21
    assert epochs_of(follower) == epochs_of(leader) == [(0, 0), (2, 9)]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("crc", r"batch at offsets 3\.\.5 does not match its CRC"),
        (
            "gap",
            r"batch at offset 9 does not follow on from the one before it, which ends before 6",
        ),
        ("start", r"the leader's batches start at offset 3, the log ends at offset 0"),
    ],
)
def test_a_follower_refuses_batches_that_are_damaged_or_out_of_place(tmp_path, damage, message):
    batches = [with_base_offset(make_batch(i), 3 * i) for i in range(3)]
    if damage == "crc":
        spoiled = bytearray(batches[1])
        spoiled[HEADER_BYTES + 5] ^= 0xFF
        batches[1] = bytes(spoiled)
    elif damage == "gap":
        batches[2] = with_base_offset(batches[2], 9)
    else:
        batches = batches[1:]
    follower = open_log(tmp_path / "t-0")
    with pytest.raises(ProtocolError, match=message):
        follower.append_as_follower(b"".join(batches))
    assert follower.log_end_offset == 0 and follower.segments[0].size == 0
    with pytest.raises(ProtocolError):
        follower.append_as_follower(b"not a batch")


def test_a_follower_keeps_the_producer_state_the_leader_checked(tmp_path):
    leader = open_log(tmp_path / "leader-0")
    for sequence in range(3):
        leader.append(producer_batch(sequence), leader_epoch=1)
    follower = open_log(tmp_path / "t-0")
    follower.append_as_follower(read_all(leader))
    # Made leader, the follower answers the producer's retry as the leader would.
    retry = follower.append(producer_batch(2), leader_epoch=2)
    assert retry.duplicate and retry.first_offset == 2
    assert follower.append(producer_batch(3), leader_epoch=2).first_offset == 3
    assert epochs_of(follower) == [(1, 0), (2, 3)]


def test_a_follower_rolls_and_reports_flushes_as_a_leader_append_does(tmp_path):
    config = LogConfig(segment_bytes=1024, index_interval_bytes=256, flush_interval_messages=6)
    leader = leader_log(tmp_path / "leader-0", [(1, 5)], config)  # two batches a segment
    batches = _batches_of(read_all(leader))
    follower = open_log(tmp_path / "t-0", config)
    assert not follower.append_as_follower(batches[0]).flush_due
    assert follower.append_as_follower(batches[1]).flush_due  # 6 records unflushed
    with pytest.raises(RollDue):
        follower.append_as_follower(batches[2], roll=False)
    assert follower.log_end_offset == 6
    follower.roll_when_due()
    follower.append_as_follower(batches[2], roll=False)
    follower.append_as_follower(batches[3], roll=False)
    follower.append_as_follower(batches[4])  # rolls by itself
    assert len(follower.segments) == 3
    assert read_all(follower) == read_all(leader)


def _batches_of(data: bytes) -> list[bytes]:
    return [data[p : p + h.size_bytes] for p, h in iter_batches(data)]


# the high watermark


def test_the_high_watermark_is_the_log_end_until_the_log_is_replicated(tmp_path):
    log = leader_log(tmp_path / "t-0", [(0, 4)])
    assert not log.replicated
    assert log.high_watermark == log.log_end_offset == 12
    log.replicated = True
    assert log.high_watermark == 0
    assert log.set_high_watermark(6) == 6
    assert log.set_high_watermark(3) == 6  # never backwards
    assert log.set_high_watermark(100) == 12  # at most the log end
    log.append(bytearray(make_batch(8)))
    assert log.high_watermark == 12
    log.delete_records(13)
    assert log.high_watermark == 13  # never below the log start
    read = log.read(0 + 13, 1 << 20, max_offset=log.high_watermark)
    assert isinstance(read, ReadResult) and read.spans == []


# truncation


def _segment_files(directory):
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".deleted"))


@pytest.mark.parametrize(("offset", "end"), [(12, 12), (13, 12), (14, 12), (0, 0)])
def test_truncate_cuts_at_the_start_of_the_batch_holding_the_offset(tmp_path, offset, end):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(0, 4), (3, 3)])  # one segment
    before = read_all(log)
    assert len(log.segments) == 1
    assert log.truncate_to(offset)
    assert log.log_end_offset == end
    kept = before[: sum(h.size_bytes for h in headers_in(before) if h.last_offset < end)]
    assert read_all(log) == kept
    segment = log.segments[0]
    assert segment.log_path.stat().st_size == segment.size == len(kept)
    assert epochs_of(log) == ([(0, 0)] if end else [])
    assert (directory / CHECKPOINT).read_text() == ("0\n1\n0 0\n" if end else "0\n0\n")
    info = log.append(bytearray(make_batch(50)), leader_epoch=4)
    assert info.first_offset == end
    assert epochs_of(log)[-1] == (4, end)


def test_truncate_at_or_past_the_log_end_changes_nothing(tmp_path):
    log = leader_log(tmp_path / "t-0", [(0, 2)])
    before = read_all(log)
    assert not log.truncate_to(6)
    assert not log.truncate_to(60)
    assert read_all(log) == before and epochs_of(log) == [(0, 0)]


def test_truncate_across_segments_reopens_an_earlier_one_for_appends(tmp_path):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(1, 10), (2, 10), (5, 10)])
    bases = [segment.base_offset for segment in log.segments]
    assert len(bases) >= 3
    log.flush()
    before = read_all(log)
    target = bases[1] + 13  # inside the second segment, one past a batch boundary
    second = log.segments[1]
    index_before = second.offset_index.path.read_bytes()
    log.replicated = True
    log.set_high_watermark(log.log_end_offset)
    assert log.truncate_to(target)
    end = target - 1  # batches of three: bases[1] + 12 starts the batch holding it
    assert log.log_end_offset == end
    assert log.high_watermark == end and log.recovery_point <= end
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert read_all(log) == before[: len(read_all(log))]
    assert (
        read_all(log, end - 3) == before[_position_of(before, end - 3) : _position_of(before, end)]
    )
    deleted = sorted(p.name for p in directory.glob("*.deleted"))
    assert deleted and all(int(name[:20]) >= bases[2] for name in deleted)
    # the cut segment's index keeps a prefix of its entries, all inside the file
    kept_index = second.offset_index.path.read_bytes()
    assert index_before.startswith(kept_index)
    assert second.check_indexes()
    assert epochs_of(log) == [(1, 0)] + ([(2, 30)] if end > 30 else [])
    # appends go into the segment that was cut, which was closed for writing
    info = log.append(bytearray(make_batch(99)), leader_epoch=7)
    assert info.first_offset == end and log.segments[-1] is second
    expected = read_all(log)
    log.close()
    for clean in (True, False):
        reopened = open_log(directory, clean_shutdown=clean)
        assert read_all(reopened) == expected
        assert reopened.log_end_offset == end + 3
        assert epochs_of(reopened)[-1] == (7, end)
        reopened.close()


def _position_of(data: bytes, offset: int) -> int:
    for position, header in iter_batches(data):
        if header.last_offset >= offset:
            return position
    return len(data)


def test_truncate_keeps_the_leader_epochs_that_remain(tmp_path):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(1, 4), (2, 4), (5, 4)])  # epochs at 0, 12, 24
    log.truncate_to(20)
    assert log.log_end_offset == 18
    assert epochs_of(log) == [(1, 0), (2, 12)]
    assert (directory / CHECKPOINT).read_text() == "0\n2\n1 0\n2 12\n"
    assert log.leader_epochs.end_offset_for(2, log.log_end_offset) == (2, 18)
    assert log.leader_epochs.end_offset_for(5, log.log_end_offset) == (-1, -1)


def test_truncate_rebuilds_the_producer_state_for_what_remains(tmp_path):
    log = open_log(tmp_path / "t-0")
    for sequence in range(4):
        log.append(producer_batch(sequence), leader_epoch=0)
    assert log.append(producer_batch(3), leader_epoch=0).duplicate
    log.truncate_to(2)  # sequences 2 and 3 go
    again = log.append(producer_batch(2), leader_epoch=1)
    assert not again.duplicate and again.first_offset == 2
    assert log.append(producer_batch(2), leader_epoch=1).duplicate


def test_reads_go_on_and_appends_wait_while_truncation_cuts_the_files(tmp_path, monkeypatch):
    log = leader_log(tmp_path / "t-0", [(0, 6)])
    entered, release = threading.Event(), threading.Event()
    original = LogSegment.trim_files

    def slow_trim(segment):
        entered.set()
        assert release.wait(10)
        original(segment)

    monkeypatch.setattr(LogSegment, "trim_files", slow_trim)
    worker = threading.Thread(target=log.truncate_to, args=(9,))
    worker.start()
    try:
        assert entered.wait(10)
        assert log.log_end_offset == 9  # swapped in memory: reads see the new end
        assert len(read_all(log)) == 3 * len(make_batch(0))
        with pytest.raises(RollDue):  # the append stops, as before a roll
            log.append(bytearray(make_batch(20)), roll=False)
        with pytest.raises(RollDue):
            log.append_as_follower(with_base_offset(make_batch(20), 9), roll=False)
    finally:
        release.set()
        worker.join()
    log.roll_when_due()  # what the broker runs after RollDue: nothing is due now
    assert len(log.segments) == 1
    assert log.append(bytearray(make_batch(20)), roll=False).first_offset == 9


# recovery


def test_recovery_rebuilds_leader_epochs_a_crash_kept_from_the_checkpoint(tmp_path):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(1, 3), (4, 3)])
    log.flush()  # the checkpoint holds epochs 1 and 4
    log.append(bytearray(make_batch(10)), leader_epoch=6)
    log.append(bytearray(make_batch(11)), leader_epoch=8)
    expected = read_all(log)
    del log  # a crash: epochs 6 and 8 never reached the checkpoint
    assert (directory / CHECKPOINT).read_text() == "0\n2\n1 0\n4 9\n"
    reopened = open_log(directory, clean_shutdown=False, recovery_point=0)
    assert read_all(reopened) == expected
    assert epochs_of(reopened) == [(1, 0), (4, 9), (6, 18), (8, 21)]
    assert (directory / CHECKPOINT).read_text() == "0\n4\n1 0\n4 9\n6 18\n8 21\n"


def test_recovery_drops_epochs_of_a_torn_tail(tmp_path):
    directory = tmp_path / "t-0"
    log = leader_log(directory, [(1, 3), (2, 1)])
    log.flush()
    assert epochs_of(log) == [(1, 0), (2, 9)]
    segment = log.segments[-1]
    path, size = segment.log_path, segment.size
    del log
    with path.open("r+b") as file:  # the last batch is torn
        file.truncate(size - 10)
    reopened = open_log(directory, clean_shutdown=False)
    assert reopened.log_end_offset == 9
    assert epochs_of(reopened) == [(1, 0)]
    assert (directory / CHECKPOINT).read_text() == "0\n1\n1 0\n"


def test_a_checkpoint_past_the_log_end_is_cut_when_the_log_opens(tmp_path):
    directory = tmp_path / "t-0"
    leader_log(directory, [(1, 2)]).close()
    (directory / CHECKPOINT).write_text("0\n3\n1 0\n3 6\n9 100\n")
    reopened = open_log(directory)
    assert epochs_of(reopened) == [(1, 0)]
    assert (directory / CHECKPOINT).read_text() == "0\n1\n1 0\n"


def test_a_malformed_checkpoint_is_rebuilt_from_every_batch(tmp_path, caplog):
    directory = tmp_path / "t-0"
    leader_log(directory, [(1, 12), (3, 12)]).close()  # several segments
    (directory / CHECKPOINT).write_text("0\n2\n1 0\nthree 36\n")
    with caplog.at_level(logging.WARNING, logger="wirekafka.storage"):
        reopened = open_log(directory)  # a clean start: no recovery scan
    assert len(reopened.segments) > 2
    assert f"{directory / CHECKPOINT}: line 4: epoch 'three'" in caplog.text
    assert epochs_of(reopened) == [(1, 0), (3, 36)]
    assert (directory / CHECKPOINT).read_text() == "0\n2\n1 0\n3 36\n"


# the high watermark checkpoint


def test_the_log_manager_checkpoints_high_watermarks_of_replicated_logs(tmp_path):
    def manager() -> LogManager:
        m = LogManager([tmp_path], SMALL, FakeClock(), broker_id=1)
        m.startup()
        return m

    m = manager()
    replicated = m.get_or_create_log("r", 0)
    single = m.get_or_create_log("s", 0)
    for i in range(4):
        replicated.append(bytearray(make_batch(i)), leader_epoch=2)
        single.append(bytearray(make_batch(i)))
    replicated.replicated = True
    replicated.set_high_watermark(9)
    m.write_checkpoints()
    assert read_checkpoint(tmp_path / "replication-offset-checkpoint") == {("r", 0): 9}
    assert m.shutdown()

    m = manager()
    reopened = m.get_log("r", 0)
    assert reopened is not None and reopened.replicated and reopened.high_watermark == 9
    assert epochs_of(reopened) == [(2, 0)]
    other = m.get_log("s", 0)
    assert other is not None and not other.replicated and other.high_watermark == 12
    assert m.shutdown()

    # a high watermark past the log end (the log was cut) starts at the log end
    write_checkpoint(tmp_path / "replication-offset-checkpoint", {("r", 0): 500})
    m = manager()
    reopened = m.get_log("r", 0)
    assert reopened is not None and reopened.high_watermark == 12
    assert m.shutdown()
