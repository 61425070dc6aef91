"""The partition log owns its idempotent producers' state: checked and recorded on
append, rebuilt when the log loads (after recovery cut a torn tail), expired."""

from __future__ import annotations

import logging

import pytest

from tests.storage.helpers import BASE_TIME_MS, FakeClock, read_batches, spoil_header
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import (
    ATTRIBUTES_OFFSET,
    encode_batch,
    iter_batches,
)
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.producer_state import InvalidProducerBatch

CONFIG = LogConfig(segment_bytes=4096)
PID = 42


def new_log(tmp_path, clock, *, clean_shutdown=True, expiration_ms=None, config=CONFIG):
    extra = {} if expiration_ms is None else {"producer_id_expiration_ms": expiration_ms}
    return PartitionLog(
        tmp_path / "t-0", "t", 0, config, clock, clean_shutdown=clean_shutdown, **extra
    )


def batch(clock, sequence, count=1, *, epoch=0, producer_id=PID) -> bytearray:
    records = [Record(i, clock.now_ms, b"k", b"seq %d" % (sequence + i)) for i in range(count)]
    return bytearray(
        encode_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
    )


def refused(log, data) -> ErrorCode:
    end, size = log.log_end_offset, log.size_bytes
    with pytest.raises(InvalidProducerBatch) as caught:
        log.append(data)
    assert (log.log_end_offset, log.size_bytes) == (end, size)  # nothing written
    return caught.value.error_code


def test_a_retried_batch_is_answered_with_its_first_offsets_and_not_written(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, None, b"plain")])))
    first = log.append(batch(clock, 0, 2))
    assert (first.first_offset, first.last_offset, first.duplicate) == (1, 2, False)
    size = log.size_bytes
    retry = log.append(batch(clock, 0, 2))
    assert retry.duplicate
    assert (retry.first_offset, retry.last_offset, retry.record_count) == (1, 2, 0)
    assert (log.log_end_offset, log.size_bytes) == (3, size)
    assert log.append(batch(clock, 2)).first_offset == 3


def test_a_gap_and_an_older_epoch_are_refused_with_kafkas_errors(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    log.append(batch(clock, 0, epoch=3))
    assert refused(log, batch(clock, 2, epoch=3)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert refused(log, batch(clock, 1, epoch=2)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert refused(log, batch(clock, 5, epoch=4)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(InvalidProducerBatch, match=r"producer 42 in partition t-0: 2 "):
        log.append(batch(clock, 2, epoch=3))
    assert log.append(batch(clock, 0, epoch=4)).first_offset == 1  # a new epoch starts at 0


def test_an_idempotent_batch_is_appended_alone(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    plain = encode_batch([Record(0, clock.now_ms, None, b"plain")])
    data = bytearray(plain + batch(clock, 0))
    with pytest.raises(ProtocolError, match="appended alone"):
        log.append(data, list(iter_batches(data)))
    assert log.log_end_offset == 0
    assert log.append(bytearray(plain + plain)).last_offset == 1  # plain ones go together


def test_given_headers_the_state_is_checked_as_without(tmp_path):
    """Produce hands the log the headers it read; the check is the same."""
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    data = batch(clock, 0)
    assert not log.append(data, list(iter_batches(data))).duplicate
    again = batch(clock, 0)
    assert log.append(again, list(iter_batches(again))).duplicate
    gap = batch(clock, 3)
    with pytest.raises(InvalidProducerBatch):
        log.append(gap, list(iter_batches(gap)))


def test_the_state_is_rebuilt_when_the_log_loads(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    offsets = []
    for n in range(7):
        offsets.append(log.append(batch(clock, 2 * n, 2)).first_offset)
        if n == 3:
            log.roll()  # the state comes from both segments
    log.append(batch(clock, 0, producer_id=7))
    log.close()
    reopened = new_log(tmp_path, clock)
    for n in range(2, 7):  # the producer's last five batches are known again
        retry = reopened.append(batch(clock, 2 * n, 2))
        assert (retry.duplicate, retry.first_offset) == (True, offsets[n])
    assert refused(reopened, batch(clock, 0, 2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert reopened.append(batch(clock, 0, producer_id=7)).duplicate
    assert not reopened.append(batch(clock, 14)).duplicate


def test_a_torn_tail_cut_by_recovery_is_not_remembered(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for sequence in range(3):
        log.append(batch(clock, sequence))
    log.flush()
    last = log.segments[-1]
    position = [p for p, _ in iter_batches(last.log_path.read_bytes()[: last.size])][-1]
    with last.log_path.open("r+b") as file:  # the last batch half written: its CRC fails
        file.seek(position + ATTRIBUTES_OFFSET + 30)
        file.write(b"\xde\xad")
    reopened = new_log(tmp_path, clock, clean_shutdown=False)
    assert reopened.log_end_offset == 2
    rewritten = reopened.append(batch(clock, 2))  # the retry of the lost batch is new
    assert (rewritten.duplicate, rewritten.first_offset) == (False, 2)
    assert reopened.append(batch(clock, 2)).duplicate
    assert [b.records[0].value for b in read_batches(reopened)] == [b"seq 0", b"seq 1", b"seq 2"]


def test_the_rebuild_passes_over_a_batch_header_that_cannot_be_read(tmp_path, caplog):
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    for sequence in range(3):
        log.append(batch(clock, sequence, producer_id=7))
    log.roll()
    log.append(batch(clock, 3, producer_id=7))
    log.append(batch(clock, 0, producer_id=8))
    log.close()
    spoil_header(log, 1)
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        reopened = new_log(tmp_path, clock)
    assert "cannot be read to its end" in caplog.text
    assert reopened.append(batch(clock, 3, producer_id=7)).duplicate
    assert reopened.append(batch(clock, 0, producer_id=8)).duplicate
    assert reopened.append(batch(clock, 4, producer_id=7)).first_offset == 5


def test_producers_silent_past_the_expiration_are_forgotten(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, expiration_ms=1_000)
    log.append(batch(clock, 0, producer_id=1))
    clock.advance(600)
    log.append(batch(clock, 0, producer_id=2))
    clock.advance(400)
    assert log.expire_producers() == 0  # producer 1 silent for exactly the expiration
    clock.advance(1)
    assert log.expire_producers() == 1
    assert not log.append(batch(clock, 5, producer_id=1)).duplicate  # new again: any sequence
    assert refused(log, batch(clock, 5, producer_id=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_the_rebuild_leaves_out_producers_silent_past_the_expiration(tmp_path):
    clock = FakeClock()
    log = new_log(tmp_path, clock, expiration_ms=1_000)
    log.append(batch(clock, 0, producer_id=1))
    log.roll()
    clock.advance(900)
    log.append(batch(clock, 0, producer_id=2))
    log.close()
    clock.advance(500)  # producer 1 silent for 1,400 ms, producer 2 for 500
    reopened = new_log(tmp_path, clock, expiration_ms=1_000)
    assert not reopened.append(batch(clock, 7, producer_id=1)).duplicate
    assert reopened.append(batch(clock, 0, producer_id=2)).duplicate


def test_a_log_append_time_batch_counts_from_its_append_time(tmp_path):
    """The producer's last time is the one the log stamped, not the client's."""
    clock = FakeClock()
    config = LogConfig(message_timestamp_type=TimestampType.LOG_APPEND_TIME)
    log = new_log(tmp_path, clock, expiration_ms=1_000, config=config)
    old = bytearray(
        encode_batch(
            [Record(0, BASE_TIME_MS - 60_000, None, b"v")],
            producer_id=PID,
            producer_epoch=0,
            base_sequence=0,
        )
    )
    info = log.append(old)
    assert info.log_append_time_ms == clock.now_ms
    clock.advance(1_000)
    assert log.expire_producers() == 0
    retry = log.append(bytearray(old))
    assert (retry.duplicate, retry.log_append_time_ms) == (True, info.log_append_time_ms)


def test_deleting_records_and_segments_keeps_the_producers(tmp_path):
    """As in Kafka, the state outlives the batches it came from: a retry of a
    batch below the log start is still a retry."""
    clock = FakeClock()
    log = new_log(tmp_path, clock)
    first = log.append(batch(clock, 0, 2))
    log.roll()
    log.append(bytearray(encode_batch([Record(0, clock.now_ms, None, b"plain")])))
    assert log.delete_records(2) == 2
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 2
    retry = log.append(batch(clock, 0, 2))
    assert (retry.duplicate, retry.first_offset, retry.log_start_offset) == (
        True,
        first.first_offset,
        2,
    )
    assert log.append(batch(clock, 2)).first_offset == 3
