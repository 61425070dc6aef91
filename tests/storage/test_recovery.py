"""Recovery after a crash: torn tails, garbage, missing indexes, leftovers."""

from __future__ import annotations

import logging
import random

import pytest

from tests.storage.helpers import FakeClock, make_batch, read_all, with_base_offset
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.segment import LogSegment

CONFIG = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512)


def open_log(directory, *, clean, recovery_point=0, config=CONFIG):
    return PartitionLog(
        directory, "t", 0, config, FakeClock(), clean_shutdown=clean, recovery_point=recovery_point
    )


def active_file(directory, suffix):
    return sorted(directory.glob("*" + suffix))[-1]


def written_part(log):
    """The active ``.log``'s bytes up to the last batch appended: the file
    goes on with zeros, preallocated for the next appends."""
    segment = log.segments[-1]
    return segment.log_path.read_bytes()[: segment.size]


def test_corrupt_tail_rounds_like_kafkas_test_corrupt_log(tmp_path):
    """10 rounds: append 50-100 batches, append garbage to the active .log and
    .index, reopen without the clean-shutdown marker; nothing written is lost."""
    rng = random.Random(2024)
    directory = tmp_path / "t-0"
    expected = b""
    recovery_point = 0
    batch_number = 0
    for _ in range(10):
        log = open_log(directory, clean=False, recovery_point=recovery_point)
        assert read_all(log) == expected
        for _ in range(rng.randint(50, 100)):
            codec = rng.choice(list(CompressionType))
            batch = make_batch(
                batch_number,
                records=rng.randint(1, 5),
                value_bytes=rng.randint(10, 400),
                compression=codec,
            )
            info = log.append(bytearray(batch))
            expected += with_base_offset(batch, info.first_offset)
            batch_number += 1
        end = log.log_end_offset
        recovery_point = log.recovery_point
        written = log.segments[-1].size
        del log  # as if the process died: nothing closed or flushed
        # Garbage right after the last batch (over the preallocated zeros), as
        # a torn write leaves it, and after the last index entry.
        with open(active_file(directory, ".log"), "r+b") as garbage:
            garbage.seek(written)
            garbage.write(rng.randbytes(rng.randint(1, 1024)))
        with open(active_file(directory, ".index"), "ab") as garbage:
            garbage.write(rng.randbytes(rng.randint(1, 1024)))
        reopened = open_log(directory, clean=False, recovery_point=recovery_point)
        assert reopened.log_end_offset == end
        assert read_all(reopened) == expected
        del reopened  # as if the process died: nothing closed or flushed


def _log_with_batches(directory, count=30, config=CONFIG):
    log = open_log(directory, clean=False, config=config)
    expected = []
    for i in range(count):
        batch = make_batch(i, value_bytes=200)
        expected.append(with_base_offset(batch, log.append(bytearray(batch)).first_offset))
    return log, expected


def test_segment_cut_mid_batch_loses_only_the_torn_batch(tmp_path, caplog):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory)
    data = written_part(log)
    del log  # as if the process died: nothing closed or flushed
    active = active_file(directory, ".log")
    active.write_bytes(data[:-50])
    with caplog.at_level(logging.WARNING, logger="wirekafka.storage"):
        reopened = open_log(directory, clean=False)
    assert read_all(reopened) == b"".join(expected[:-1])
    assert reopened.log_end_offset == 29 * 3
    assert "truncated" in caplog.text and active.name in caplog.text


def test_zero_filled_tail_is_cut(tmp_path):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory)
    del log  # as if the process died: nothing closed or flushed
    with open(active_file(directory, ".log"), "ab") as tail:
        tail.write(b"\x00" * 4096)
    reopened = open_log(directory, clean=False)
    assert read_all(reopened) == b"".join(expected)
    assert reopened.segments[-1].size == active_file(directory, ".log").stat().st_size


def test_a_flipped_byte_in_an_old_segment_cuts_the_log_there(tmp_path):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory, count=100)
    del log  # as if the process died: nothing closed or flushed
    segments = sorted(directory.glob("*.log"))
    assert len(segments) >= 4
    victim = segments[1]
    data = bytearray(victim.read_bytes())
    data[300] ^= 0xFF  # inside the first or second batch of the segment
    victim.write_bytes(bytes(data))
    reopened = open_log(directory, clean=False)
    survivors = read_all(reopened)
    assert b"".join(expected).startswith(survivors)
    assert len(sorted(directory.glob("*.log"))) == 2  # later segments removed
    assert reopened.log_end_offset < 100 * 3


def test_missing_index_is_rebuilt_after_a_clean_shutdown(tmp_path):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory, count=60)
    log.close()
    first_index = sorted(directory.glob("*.index"))[0]
    original = first_index.read_bytes()
    assert original
    first_index.unlink()
    reopened = open_log(directory, clean=True)
    assert first_index.read_bytes() == original
    assert read_all(reopened) == b"".join(expected)


def test_corrupt_index_is_rebuilt(tmp_path):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory, count=60)
    log.close()
    index = sorted(directory.glob("*.index"))[0]
    original = index.read_bytes()
    index.write_bytes(original + b"\x01\x02\x03")  # not a whole entry
    time_index = sorted(directory.glob("*.timeindex"))[0]
    time_index.write_bytes(
        b"\x7f" * 12 + time_index.read_bytes()
    )  # first entry sorts after the last
    reopened = open_log(directory, clean=True)
    assert index.read_bytes() == original
    assert read_all(reopened) == b"".join(expected)


def test_stray_files_are_tidied(tmp_path):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory)
    log.close()
    strays = [
        "00000000000000000000.log.deleted",
        "00000000000000000000.index.cleaned",
        "recovery-point-offset-checkpoint.tmp",
        "00000000000000099999.index",  # an index with no log
    ]
    for name in strays:
        (directory / name).write_bytes(b"junk")
    reopened = open_log(directory, clean=False)
    assert not any((directory / name).exists() for name in strays)
    assert read_all(reopened) == b"".join(expected)


def test_an_interrupted_compaction_swap_is_completed(tmp_path):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory, count=60)
    log.close()
    first = sorted(directory.glob("*.log"))[0]
    # The compacted copy kept only the first batch; the crash came after it was
    # renamed .swap and before it replaced the old file.
    kept = expected[0]
    first.with_name(first.name + ".swap").write_bytes(kept)
    reopened = open_log(directory, clean=False)
    assert first.read_bytes() == kept
    assert not list(directory.glob("*.swap"))
    assert read_all(reopened).startswith(kept)


def test_segments_before_the_recovery_point_are_not_scanned(tmp_path, monkeypatch):
    directory = tmp_path / "t-0"
    log, _ = _log_with_batches(directory, count=100)
    recovery_point = log.segments[-1].base_offset
    del log  # as if the process died: nothing closed or flushed
    recovered: list[int] = []
    original = LogSegment.check_batches

    def counting(segment, expected_offset, leader_epochs=None):
        recovered.append(segment.base_offset)
        return original(segment, expected_offset, leader_epochs)

    monkeypatch.setattr(LogSegment, "check_batches", counting)
    reopened = open_log(directory, clean=False, recovery_point=recovery_point)
    assert recovered == [recovery_point]
    reopened.close()
    recovered.clear()
    open_log(directory, clean=True)
    assert recovered == []


@pytest.mark.parametrize("cut", [1, 12, 60, 61, 62])
def test_any_cut_point_in_the_last_batch(tmp_path, cut):
    directory = tmp_path / "t-0"
    log, expected = _log_with_batches(directory, count=5)
    data = written_part(log)
    del log  # as if the process died: nothing closed or flushed
    active = active_file(directory, ".log")
    active.write_bytes(data[: len(data) - len(expected[-1]) + cut])
    reopened = open_log(directory, clean=False)
    assert read_all(reopened) == b"".join(expected[:-1])
    reopened.append(bytearray(make_batch(99)))
    assert reopened.log_end_offset == 5 * 3
