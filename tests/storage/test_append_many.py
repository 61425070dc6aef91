"""Group commit: the appends of pipelined produce requests written with one write."""

from __future__ import annotations

import os
import textwrap

import pytest

from tests.storage.helpers import FakeClock, make_batch, read_all, run_child
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    NO_PRODUCER_ID,
    encode_batch,
    iter_batches,
    read_batch_header,
)
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import AppendInfo, PartitionLog
from wirekafka.storage.producer_state import InvalidProducerBatch

CONFIG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=256)


def new_log(directory, config=CONFIG):
    return PartitionLog(directory, "t", 0, config, FakeClock())


def item(batch: bytes) -> tuple[bytearray, list]:
    """An append as the produce handler hands it over: the batch and its header."""
    data = bytearray(batch)
    return data, [(0, read_batch_header(data))]


def files_of(log: PartitionLog) -> dict[str, bytes]:
    log.close()
    return {path.name: path.read_bytes() for path in sorted(log.directory.iterdir())}


@pytest.fixture
def pwritev_calls(monkeypatch):
    """How many times os.pwritev writes (it still writes)."""
    calls = []
    real = os.pwritev

    def counted(fd, buffers, offset, *args):
        calls.append(len(buffers))
        return real(fd, buffers, offset, *args)

    monkeypatch.setattr(os, "pwritev", counted)
    return calls


def test_a_group_is_one_write_and_leaves_what_appends_one_by_one_leave(tmp_path, pwritev_calls):
    batches = [make_batch(i, records=1 + i % 5, value_bytes=40 + 13 * i) for i in range(24)]
    one_by_one = new_log(tmp_path / "one")
    singles = [one_by_one.append(bytearray(b), flush_when_due=False, roll=False) for b in batches]
    assert pwritev_calls == []
    grouped = new_log(tmp_path / "grouped")
    infos = grouped.append_many([item(batches[0])])  # a segment's first batch goes alone
    for start in range(1, len(batches), 6):
        infos += grouped.append_many([item(b) for b in batches[start : start + 6]])
    assert pwritev_calls == [6, 6, 6, 5]
    assert infos == singles
    assert all(type(info) is AppendInfo for info in infos)
    assert grouped.log_end_offset == one_by_one.log_end_offset
    # the log, offset index and time index alike, byte for byte
    assert files_of(grouped) == files_of(one_by_one)


def test_a_group_the_segment_cannot_hold_stops_where_it_must_roll(tmp_path):
    log = new_log(tmp_path / "t-0", LogConfig(segment_bytes=2000, index_interval_bytes=256))
    batches = [make_batch(i, value_bytes=100) for i in range(10)]  # ~470 bytes each
    one_by_one = new_log(tmp_path / "one", LogConfig(segment_bytes=2000, index_interval_bytes=256))
    for batch in batches:
        one_by_one.append(bytearray(batch))
    infos: list = []
    while len(infos) < len(batches):
        results = log.append_many([item(b) for b in batches[len(infos) :]])
        assert results or not infos, "nothing appended after a roll"
        infos += results
        if len(infos) < len(batches):  # the rest waits for the roll
            log.roll_when_due()
    assert [info.first_offset for info in infos] == [3 * i for i in range(10)]
    # rolled where appends one by one roll
    assert [s.base_offset for s in log.segments] == [s.base_offset for s in one_by_one.segments]
    assert len(log.segments) > 2
    assert files_of(log) == files_of(one_by_one)


def idempotent(sequence: int, value: bytes = b"v") -> bytes:
    return encode_batch(
        [Record(0, 1_700_000_000_000, None, value)],
        producer_id=7,
        producer_epoch=0,
        base_sequence=sequence,
    )


def test_an_idempotent_batch_in_a_group_is_checked_against_its_producer(tmp_path):
    log = new_log(tmp_path / "t-0")
    plain = [make_batch(i, records=1) for i in range(3)]
    results = log.append_many(
        [
            item(plain[0]),
            item(idempotent(0)),
            item(plain[1]),
            item(idempotent(0)),  # a retry of the one before: not written again
            item(idempotent(5)),  # a gap in its sequence
            item(plain[2]),
        ]
    )
    first, accepted, second, retry, gap, third = results
    assert [r.first_offset for r in (first, accepted, second, third)] == [0, 1, 2, 3]
    assert retry.duplicate and retry.first_offset == 1
    assert isinstance(gap, InvalidProducerBatch)
    producers = [header.producer_id for _, header in iter_batches(read_all(log))]
    assert producers == [NO_PRODUCER_ID, 7, NO_PRODUCER_ID, NO_PRODUCER_ID]


# A child process whose files may not grow past a limit (RLIMIT_FSIZE): a write
# beyond it fails with EFBIG, as a full disk would.
CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path
    from tests.storage.helpers import FakeClock, make_batch
    from tests.storage.test_append_many import item
    from wirekafka.storage.config import LogConfig
    from wirekafka.storage.log import PartitionLog, StorageError

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    log = PartitionLog(Path(sys.argv[1]), "t", 0, LogConfig(), FakeClock())
    log.append(bytearray(make_batch(0, value_bytes=1000)))  # a group goes to a segment begun
    log.append_many([item(make_batch(i, value_bytes=1000)) for i in range(1, 4)])
    before = log.log_end_offset, log.segments[-1].size
    limit = before[1] + 7000  # room for two batches of the next group of five, and a part
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    results = log.append_many([item(make_batch(i, value_bytes=1000)) for i in range(4, 9)])
    print(json.dumps({
        "before": before, "after": [log.log_end_offset, log.segments[-1].size],
        "errors": [str(r) for r in results if isinstance(r, StorageError)],
        "results": len(results),
    }))
    """
)


def test_a_failed_group_write_refuses_every_append_and_leaves_the_log_as_it_was(tmp_path):
    directory = tmp_path / "t-0"
    result = run_child(CHILD, directory, timeout_s=60)
    assert result["results"] == 5
    assert len(result["errors"]) == 5
    assert all("append failed" in error and "t-0" in error for error in result["errors"])
    assert result["after"] == result["before"]
    assert (directory / "00000000000000000000.log").stat().st_size == result["before"][1]
    reopened = PartitionLog(directory, "t", 0, LogConfig(), FakeClock(), clean_shutdown=False)
    assert reopened.log_end_offset == result["before"][0]
