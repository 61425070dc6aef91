"""The active segment's file is grown ahead of appends and trimmed when it stops being active."""

from __future__ import annotations

import logging

from tests.storage.helpers import FakeClock, make_batch, read_all, with_base_offset
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.segment import PREALLOCATE_STEP_BYTES


def open_log(directory, config, *, clean=True):
    return PartitionLog(directory, "t", 0, config, FakeClock(), clean_shutdown=clean)


def append_batches(log, count, value_bytes=200):
    expected = []
    for i in range(count):
        batch = make_batch(i, value_bytes=value_bytes)
        expected.append(with_base_offset(batch, log.append(bytearray(batch)).first_offset))
    return expected


def file_size(segment):
    return segment.log_path.stat().st_size


def test_the_active_file_runs_ahead_of_its_batches_in_zeros(tmp_path):
    log = open_log(tmp_path / "t-0", LogConfig())
    expected = append_batches(log, 10)
    active = log.segments[-1]
    assert active.size == len(b"".join(expected))
    assert file_size(active) == PREALLOCATE_STEP_BYTES
    assert active.log_path.read_bytes()[active.size :] == bytes(
        PREALLOCATE_STEP_BYTES - active.size
    )
    assert read_all(log) == b"".join(expected)  # reads stop at the last batch


def test_preallocation_stops_at_segment_bytes_but_a_larger_batch_still_fits(tmp_path):
    config = LogConfig(segment_bytes=4096)
    log = open_log(tmp_path / "t-0", config)
    append_batches(log, 1)
    assert file_size(log.segments[-1]) == 4096
    append_batches(log, 1, value_bytes=3 * 4096)  # rolls, and alone outgrows a segment
    big = log.segments[-1]
    assert big.size > 4096 and file_size(big) == big.size


def test_rolled_and_closed_segments_hold_exactly_their_batches(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory, LogConfig(segment_bytes=8 * 1024))
    expected = append_batches(log, 40)
    rolled = log.segments[:-1]
    assert rolled
    assert all(file_size(segment) == segment.size for segment in rolled)
    assert file_size(log.segments[-1]) > log.segments[-1].size
    log.close()
    assert all(file_size(segment) == segment.size for segment in log.segments)
    assert read_all(open_log(directory, LogConfig(segment_bytes=8 * 1024))) == b"".join(expected)


def test_a_crash_leaves_zeros_that_recovery_cuts_and_names(tmp_path, caplog):
    directory = tmp_path / "t-0"
    log = open_log(directory, LogConfig())
    expected = append_batches(log, 25)
    end = log.log_end_offset
    del log  # as if the process died: nothing closed or flushed
    with caplog.at_level(logging.WARNING, logger="wirekafka.storage"):
        reopened = open_log(directory, LogConfig(), clean=False)
    assert reopened.log_end_offset == end
    assert read_all(reopened) == b"".join(expected)
    active = reopened.segments[-1]
    assert file_size(active) == active.size == len(b"".join(expected))
    assert "zeros, never written" in caplog.text
    more = append_batches(reopened, 3)  # and appends go on after the cut, preallocating again
    assert read_all(reopened) == b"".join(expected + more)
    assert file_size(reopened.segments[-1]) > reopened.segments[-1].size
