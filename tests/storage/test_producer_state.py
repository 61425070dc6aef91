"""The idempotent-producer state of a partition: epochs, sequences, the last five batches."""

from __future__ import annotations

import pytest

from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    NO_PRODUCER_ID,
    BatchHeader,
    encode_batch,
    read_batch_header,
)
from wirekafka.storage.producer_state import (
    BATCHES_REMEMBERED,
    MAX_SEQUENCE,
    AppendedBatch,
    Duplicate,
    ProducerStateTable,
)

PID = 42
TIME = 1_700_000_000_000


def header(
    sequence: int,
    count: int = 1,
    *,
    epoch: int = 0,
    producer_id: int = PID,
    base_offset: int = 0,
    timestamp: int = TIME,
    log_append_time_ms: int | None = None,
) -> BatchHeader:
    batch = encode_batch(
        [Record(base_offset + i, timestamp, None, b"v") for i in range(count)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        log_append_time_ms=log_append_time_ms,
    )
    return read_batch_header(batch)


def append(table: ProducerStateTable, h: BatchHeader, offset: int, append_time: int = -1) -> None:
    assert table.check(h) is None
    table.record(h._replace(base_offset=offset), offset, append_time)


def test_magic_numbers():
    assert BATCHES_REMEMBERED == 5
    assert MAX_SEQUENCE == 2**31 - 1


def test_new_producer_may_start_anywhere():
    table = ProducerStateTable()
    assert table.check(header(0)) is None
    assert table.check(header(17)) is None
    assert len(table) == 0


def test_batches_without_producer_id_are_not_tracked():
    table = ProducerStateTable()
    plain = header(-1, producer_id=NO_PRODUCER_ID, epoch=-1)
    assert table.check(plain) is None
    table.record(plain, 0, -1)
    assert len(table) == 0
    assert table.entry(NO_PRODUCER_ID) is None


def test_each_of_the_last_five_batches_is_a_duplicate_with_its_offsets():
    table = ProducerStateTable()
    offset = 100
    for index in range(7):  # sequences 0-1, 2-3, ..., 12-13 at offsets 100.., 2 records each
        append(table, header(2 * index, 2), offset)
        offset += 2
    for index in range(2, 7):  # the last five
        verdict = table.check(header(2 * index, 2))
        assert verdict == Duplicate(
            AppendedBatch(2 * index, 2 * index + 1, 100 + 2 * index, 101 + 2 * index, -1)
        )
    entry = table.entry(PID)
    assert entry is not None
    assert [b.first_sequence for b in entry.batches] == [4, 6, 8, 10, 12]


def test_the_sixth_oldest_batch_is_forgotten():
    table = ProducerStateTable()
    for index in range(6):
        append(table, header(index), index)
    assert isinstance(table.check(header(1)), Duplicate)  # fifth from last
    assert table.check(header(0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_the_next_sequence_is_accepted():
    table = ProducerStateTable()
    append(table, header(0, 3), 0)
    assert table.check(header(3)) is None
    assert table.check(header(3, 10)) is None


def test_a_gap_is_out_of_order():
    table = ProducerStateTable()
    append(table, header(0, 3), 0)
    assert table.check(header(4)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_partial_overlap_is_out_of_order():
    table = ProducerStateTable()
    append(table, header(0, 3), 0)
    assert table.check(header(1, 2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert table.check(header(0, 2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_an_older_epoch_is_invalid_producer_epoch():
    table = ProducerStateTable()
    append(table, header(0, epoch=5), 0)
    assert table.check(header(1, epoch=4)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert table.check(header(0, epoch=4)) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_a_new_epoch_must_start_at_sequence_0():
    table = ProducerStateTable()
    append(table, header(0, 5, epoch=0), 0)
    assert table.check(header(5, epoch=1)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert table.check(header(0, epoch=1)) is None
    append(table, header(0, 2, epoch=1), 5)
    entry = table.entry(PID)
    assert entry is not None
    assert entry.epoch == 1
    assert [(b.first_sequence, b.first_offset) for b in entry.batches] == [(0, 5)]
    # the old epoch's batches are gone: its retry is now fenced
    assert table.check(header(0, 5, epoch=0)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert table.check(header(2, epoch=1)) is None


def test_sequence_wraps_from_max_to_zero():
    table = ProducerStateTable()
    append(table, header(MAX_SEQUENCE - 1, 2), 0)  # ends at 2**31-1
    assert table.check(header(0)) is None
    assert table.check(header(1)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    append(table, header(0), 2)
    assert table.check(header(1)) is None


def test_a_batch_straddling_the_wrap_ends_past_zero():
    table = ProducerStateTable()
    straddling = header(MAX_SEQUENCE - 1, 4)  # MAX-1, MAX, 0, 1
    assert straddling.last_sequence == 1
    append(table, straddling, 0)
    assert table.check(header(2)) is None
    assert table.check(header(0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert table.check(header(MAX_SEQUENCE - 1, 4)) == Duplicate(
        AppendedBatch(MAX_SEQUENCE - 1, 1, 0, 3, -1)
    )


def test_producers_are_independent():
    table = ProducerStateTable()
    append(table, header(0, producer_id=1), 0)
    append(table, header(0, producer_id=2), 1)
    assert table.check(header(1, producer_id=1)) is None
    assert table.check(header(2, producer_id=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert table.check(header(0, producer_id=2)) == Duplicate(AppendedBatch(0, 0, 1, 1, -1))
    assert len(table) == 2


def _history() -> list[BatchHeader]:
    """Headers as the log holds them: base offsets assigned, oldest first."""
    headers = []
    offset = 0
    for pid, epoch, sequence, count in [
        (1, 0, 0, 2),
        (2, 0, 0, 1),
        (1, 0, 2, 3),
        (1, 0, 5, 1),
        (2, 0, 1, 1),
        (1, 0, 6, 1),
        (1, 0, 7, 2),
        (1, 0, 9, 1),  # producer 1 now has 6 batches: the first is forgotten
        (3, 2, 0, 1),
        (3, 3, 0, 2),  # a new epoch
    ]:
        headers.append(header(sequence, count, epoch=epoch, producer_id=pid, base_offset=offset))
        offset += count
    plain = header(-1, producer_id=NO_PRODUCER_ID, epoch=-1, base_offset=offset)
    headers.append(plain)
    return headers


PROBES = [
    header(s, c, epoch=e, producer_id=p)
    for p, e, s, c in [
        (1, 0, 0, 2),
        (1, 0, 2, 3),
        (1, 0, 5, 1),
        (1, 0, 9, 1),
        (1, 0, 10, 1),
        (1, 0, 11, 1),
        (2, 0, 0, 1),
        (2, 0, 1, 1),
        (2, 0, 2, 1),
        (2, 0, 3, 1),
        (3, 2, 1, 1),
        (3, 3, 0, 2),
        (3, 3, 2, 1),
        (3, 4, 0, 1),
        (3, 4, 1, 1),
        (9, 0, 5, 1),
    ]
]


def test_rebuild_from_headers_gives_the_same_answers():
    live = ProducerStateTable()
    for h in _history():
        verdict = live.check(h)
        assert verdict is None
        live.record(h, h.base_offset, -1)
    rebuilt = ProducerStateTable()
    rebuilt.rebuild(_history())
    answers = [live.check(probe) for probe in PROBES]
    assert [rebuilt.check(probe) for probe in PROBES] == answers
    assert answers == [
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,  # forgotten
        Duplicate(AppendedBatch(2, 4, 3, 5, -1)),
        Duplicate(AppendedBatch(5, 5, 6, 6, -1)),
        Duplicate(AppendedBatch(9, 9, 11, 11, -1)),
        None,
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        Duplicate(AppendedBatch(0, 0, 2, 2, -1)),
        Duplicate(AppendedBatch(1, 1, 7, 7, -1)),
        None,
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        Duplicate(AppendedBatch(0, 1, 13, 14, -1)),
        None,
        None,
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        None,
    ]
    assert len(rebuilt) == len(live) == 3


def test_rebuild_keeps_the_append_time_of_log_append_time_batches():
    """A duplicate of a LogAppendTime batch is answered with its append time, also
    after the state was rebuilt from the log (the header's max timestamp holds it)."""
    appended_at = TIME + 5_000
    stored = header(0, 2, base_offset=10, log_append_time_ms=appended_at)
    live = ProducerStateTable()
    live.record(stored, 10, appended_at)
    rebuilt = ProducerStateTable()
    rebuilt.rebuild([stored])
    probe = header(0, 2)
    assert live.check(probe) == Duplicate(AppendedBatch(0, 1, 10, 11, appended_at))
    assert rebuilt.check(probe) == live.check(probe)


def test_rebuild_skips_control_batches():
    control = read_batch_header(
        encode_batch(
            [Record(0, TIME, b"\x00\x00\x00\x00", b"")],
            producer_id=PID,
            producer_epoch=0,
            base_sequence=-1,
            is_transactional=True,
            is_control=True,
        )
    )
    table = ProducerStateTable()
    table.rebuild([control])
    assert len(table) == 0


@pytest.mark.parametrize(("silent_ms", "expired"), [(999, 0), (1_000, 0), (1_001, 1), (10_000, 1)])
def test_expire_forgets_producers_silent_longer_than_the_expiration(silent_ms, expired):
    table = ProducerStateTable()
    append(table, header(0, timestamp=TIME), 0)
    assert table.expire(TIME + silent_ms, 1_000) == expired
    assert len(table) == 1 - expired
    if expired:  # forgotten: any sequence is welcome again, as for a new producer
        assert table.check(header(7)) is None
        assert table.check(header(0)) is None
    else:
        assert table.check(header(7)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_expire_goes_by_the_newest_batch_of_each_producer():
    table = ProducerStateTable()
    append(table, header(0, producer_id=1, timestamp=TIME), 0)
    append(table, header(0, producer_id=2, timestamp=TIME), 1)
    append(table, header(1, producer_id=2, timestamp=TIME + 5_000), 2)
    assert table.expire(TIME + 3_000, 1_000) == 1
    assert table.entry(1) is None
    entry = table.entry(2)
    assert entry is not None
    assert entry.last_timestamp_ms == TIME + 5_000
