"""The leader epoch cache and its ``leader-epoch-checkpoint`` file (real files, no mocks)."""

from __future__ import annotations

import pytest
import trio

from wirekafka.storage.leader_epochs import (
    CorruptLeaderEpochCheckpointError,
    EpochEntry,
    LeaderEpochCache,
)
from wirekafka.worker_threads import BlockingCallOnEventLoop


def cache_of(tmp_path, *pairs: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, start in pairs:
        assert cache.assign(epoch, start)
    return cache


def pairs(cache: LeaderEpochCache) -> list[tuple[int, int]]:
    return [(entry.epoch, entry.start_offset) for entry in cache.entries]


# the file


def test_a_missing_file_is_an_empty_cache(tmp_path):
    cache = LeaderEpochCache.load(tmp_path / "leader-epoch-checkpoint")
    assert cache.entries == [] and cache.latest_epoch == -1 and not cache.dirty


def test_flush_writes_kafkas_format_and_load_reads_it_back(tmp_path):
    cache = cache_of(tmp_path, (0, 0), (3, 120), (4, 5000))
    assert cache.dirty
    assert cache.flush()
    path = tmp_path / "leader-epoch-checkpoint"
    assert path.read_text() == "0\n3\n0 0\n3 120\n4 5000\n"
    assert not (tmp_path / "leader-epoch-checkpoint.tmp").exists()
    assert not cache.dirty
    loaded = LeaderEpochCache.load(path)
    assert loaded.entries == [EpochEntry(0, 0), EpochEntry(3, 120), EpochEntry(4, 5000)]
    assert loaded.latest_epoch == 4 and not loaded.dirty


def test_flush_writes_only_when_something_changed(tmp_path):
    cache = cache_of(tmp_path, (1, 0))
    assert cache.flush()
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("changed behind its back\n")
    assert not cache.flush()  # nothing changed: no write
    assert path.read_text() == "changed behind its back\n"
    assert not cache.assign(1, 50)  # the latest epoch again: ignored, still clean
    assert not cache.flush()
    cache.assign(2, 50)
    assert cache.flush()
    assert path.read_text() == "0\n2\n1 0\n2 50\n"


def test_an_empty_cache_that_changed_writes_an_empty_checkpoint(tmp_path):
    cache = cache_of(tmp_path, (1, 10))
    cache.flush()
    cache.truncate_from_end(0)
    assert cache.flush()
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n0\n"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("", 1, "empty"),
        ("1\n0\n", 1, "unknown version 1"),
        ("zero\n0\n", 1, "version 'zero' is not an integer"),
        ("0\n", 2, "missing"),
        ("0\n-1\n", 2, "negative entry count"),
        ("0\n2\n0 0\n", 4, "ends after 1 of the 2 entries"),
        ("0\n1\n0 0\n1 5\n", 4, "more entries than the 1"),
        ("0\n1\n0 0 0\n", 3, "expected '<epoch> <start offset>'"),
        ("0\n1\n0 x\n", 3, "start offset 'x' is not an integer"),
        ("0\n1\n-1 0\n", 3, "negative epoch"),
        ("0\n2\n3 0\n2 10\n", 4, "epoch 2 at offset 10 does not follow epoch 3 at offset 0"),
        ("0\n2\n1 10\n2 10\n", 4, "does not follow"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_file_and_line(tmp_path, text, line, problem):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptLeaderEpochCheckpointError) as raised:
        LeaderEpochCache.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: line {line}: ")
    assert problem in message


def test_load_and_flush_are_refused_on_the_event_loop(tmp_path):
    cache = cache_of(tmp_path, (0, 0))

    async def main() -> None:
        with pytest.raises(BlockingCallOnEventLoop, match="flush"):
            cache.flush()
        with pytest.raises(BlockingCallOnEventLoop, match="load"):
            LeaderEpochCache.load(tmp_path / "leader-epoch-checkpoint")
        cache.assign(1, 10)  # memory only: fine on the loop
        cache.truncate_from_end(5)
        cache.truncate_from_start(0)

    trio.run(main)


# assign


def test_assign_records_increasing_epochs_and_ignores_the_rest(tmp_path):
    cache = cache_of(tmp_path)
    assert not cache.assign(-1, 0)  # a batch no leader stamped
    assert cache.entries == [] and not cache.dirty
    assert cache.assign(0, 0)
    assert not cache.assign(0, 7)  # the latest epoch again
    assert cache.assign(2, 10)
    assert not cache.assign(1, 20)  # below the latest
    assert pairs(cache) == [(0, 0), (2, 10)] and cache.latest_epoch == 2


def test_assign_drops_entries_whose_start_is_not_below_the_new_one(tmp_path):
    cache = cache_of(tmp_path, (0, 0), (1, 10), (2, 20))
    assert cache.assign(3, 10)  # epochs 1 and 2 wrote nothing before offset 10
    assert pairs(cache) == [(0, 0), (3, 10)]
    assert cache.assign(4, 10)
    assert pairs(cache) == [(0, 0), (4, 10)]


def test_assign_refuses_a_negative_start_offset(tmp_path):
    with pytest.raises(ValueError, match="offset -5"):
        cache_of(tmp_path).assign(1, -5)


# OffsetForLeaderEpoch


@pytest.mark.parametrize(
    ("requested", "answer"),
    [
        (5, (5, 900)),  # the latest: the log end
        (6, (-1, -1)),  # above every known epoch
        (-1, (-1, -1)),  # undefined
        (3, (3, 650)),  # known: ends where the next starts
        (4, (3, 650)),  # unknown, between: the largest known below it
        (1, (1, 400)),  # known, the first
        (0, (0, 100)),  # below all: the epoch asked for, ending at the first start
        (2, (1, 400)),
    ],
)
def test_end_offset_for_follows_kip_101_and_279(tmp_path, requested, answer):
    cache = cache_of(tmp_path, (1, 100), (3, 400), (5, 650))
    assert cache.end_offset_for(requested, 900) == answer


def test_an_empty_cache_knows_no_epoch(tmp_path):
    assert cache_of(tmp_path).end_offset_for(0, 50) == (-1, -1)


# truncation


def test_truncate_from_end_drops_entries_starting_at_or_after_the_offset(tmp_path):
    cache = cache_of(tmp_path, (0, 0), (2, 100), (4, 200))
    cache.flush()
    cache.truncate_from_end(300)  # nothing starts there
    assert not cache.dirty
    cache.truncate_from_end(200)
    assert pairs(cache) == [(0, 0), (2, 100)] and cache.latest_epoch == 2 and cache.dirty
    cache.truncate_from_end(150)
    assert pairs(cache) == [(0, 0), (2, 100)]
    cache.truncate_from_end(0)
    assert pairs(cache) == [] and cache.latest_epoch == -1
    assert cache.assign(1, 0)  # epochs below the old latest are new again


def test_truncate_from_start_moves_the_spanning_entry_to_the_new_start(tmp_path):
    cache = cache_of(tmp_path, (0, 0), (2, 100), (4, 200))
    cache.flush()
    cache.truncate_from_start(0)  # nothing before it
    assert not cache.dirty
    cache.truncate_from_start(150)
    assert pairs(cache) == [(2, 150), (4, 200)] and cache.dirty
    cache.truncate_from_start(200)
    assert pairs(cache) == [(4, 200)]
    cache.truncate_from_start(50)  # below every entry: nothing changes
    assert pairs(cache) == [(4, 200)]
    cache.truncate_from_start(900)
    assert pairs(cache) == [(4, 900)] and cache.latest_epoch == 4


def test_clear(tmp_path):
    cache = cache_of(tmp_path, (1, 0))
    cache.flush()
    cache.clear()
    assert cache.entries == [] and cache.latest_epoch == -1 and cache.dirty


@pytest.mark.parametrize(
    ("offset", "epoch"), [(0, -1), (99, -1), (100, 1), (399, 1), (400, 3), (650, 5), (10_000, 5)]
)
def test_epoch_for_offset_is_the_latest_epoch_starting_at_or_before_it(tmp_path, offset, epoch):
    cache = cache_of(tmp_path, (1, 100), (3, 400), (5, 650))
    assert cache.epoch_for_offset(offset) == epoch
