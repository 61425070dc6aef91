"""Log dirs: meta.properties, checkpoints, the clean-shutdown marker, partition dirs."""

from __future__ import annotations

import logging
import threading

import pytest

from tests.storage.helpers import FakeClock, make_batch, read_all
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.storage.checkpoint import read_checkpoint, write_checkpoint
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import StorageError
from wirekafka.storage.log_manager import LogDirError, LogManager
from wirekafka.storage.meta_properties import read_meta_properties

CONFIG = LogConfig(segment_bytes=4000)


def manager(dirs, broker_id=1, clock=None):
    m = LogManager(dirs, CONFIG, clock or FakeClock(), broker_id=broker_id)
    m.startup()
    return m


def test_layout_of_a_log_dir_after_a_clean_shutdown(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("orders", 3)
    for i in range(20):
        log.append(bytearray(make_batch(i)))
    m.shutdown()
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "meta.properties",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        ".kafka_cleanshutdown",
        "orders-3",
    } <= names
    meta = read_meta_properties(tmp_path)
    assert meta is not None and meta.broker_id == 1 and meta.version == 0
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 3 60\n"
    assert read_checkpoint(tmp_path / "log-start-offset-checkpoint") == {("orders", 3): 0}


def test_marker_is_removed_at_startup_and_restart_finds_the_data(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("t", 0)
    data = [make_batch(i) for i in range(10)]
    for batch in data:
        log.append(bytearray(batch))
    expected = read_all(log)
    m.shutdown()
    again = manager([tmp_path])
    assert again.had_clean_shutdown
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    assert read_all(again.get_log("t", 0)) == expected
    # No shutdown this time: the next start recovers.
    third = manager([tmp_path])
    assert not third.had_clean_shutdown
    assert read_all(third.get_log("t", 0)) == expected


def test_cluster_id_persists_and_broker_id_is_checked(tmp_path):
    first = manager([tmp_path])
    cluster_id = first.cluster_id
    assert len(cluster_id) == 22
    first.shutdown()
    assert manager([tmp_path]).cluster_id == cluster_id
    with pytest.raises(LogDirError, match=r"broker\.id 1"):
        manager([tmp_path], broker_id=2)


def test_partitions_spread_over_log_dirs(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    m = manager(dirs)
    for p in range(6):
        m.get_or_create_log("t", p)
    assert len(list(dirs[0].glob("t-*"))) == 3
    assert len(list(dirs[1].glob("t-*"))) == 3
    m.shutdown()
    again = manager(dirs)
    assert sorted(log.partition for log in again.all_logs()) == list(range(6))


def test_deleted_partition_directory_is_renamed_then_removed(tmp_path):
    clock = FakeClock()
    m = manager([tmp_path], clock=clock)
    m.get_or_create_log("t", 0).append(bytearray(make_batch(0)))
    assert m.delete_log("t", 0)
    assert m.get_log("t", 0) is None
    (doomed,) = [p for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    assert doomed.name.startswith("t-0.")
    m.run_maintenance()
    assert doomed.exists()
    clock.advance(CONFIG.file_delete_delay_ms)
    m.run_maintenance()
    assert not doomed.exists()


def test_maintenance_applies_retention(tmp_path):
    clock = FakeClock()
    m = LogManager(
        [tmp_path], LogConfig(segment_bytes=2000, retention_bytes=3000), clock, broker_id=1
    )
    m.startup()
    log = m.get_or_create_log("t", 0)
    for i in range(60):
        log.append(bytearray(make_batch(i)))
    before = len(log.segments)
    m.run_maintenance()
    assert len(log.segments) < before


def test_the_rounds_go_through_only_the_logs_with_work_for_them(tmp_path):
    clock = FakeClock()
    m = manager([tmp_path], clock=clock)
    idle, written = m.get_or_create_log("t", 0), m.get_or_create_log("t", 1)
    written.append(bytearray(make_batch(0)))  # unflushed, but no flush.ms: nothing for rounds
    assert not idle.needs_rounds() and not written.needs_rounds()
    assert m.partitions_in_rounds() == []
    for i in range(1, 60):  # rolls: the rolled segments wait for their fsync
        written.append(bytearray(make_batch(i)))
    assert m.partitions_in_rounds() == [("t", 1)]
    m.run_maintenance()
    # synced; a segment besides the active one stays, so retention looks every round
    assert written.recovery_point == written.segments[-1].base_offset
    assert m.partitions_in_rounds() == [("t", 1)]
    assert m.delete_log("t", 1)
    m.run_maintenance()
    assert m.partitions_in_rounds() == []


def test_a_log_loaded_with_several_segments_is_in_the_rounds(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("t", 0)
    for i in range(60):
        log.append(bytearray(make_batch(i)))
    m.get_or_create_log("t", 1)
    m.shutdown()
    again = manager([tmp_path])
    assert again.partitions_in_rounds() == [("t", 0)]


def test_a_timed_flush_and_files_waiting_for_deletion_keep_a_log_in_the_rounds(tmp_path):
    clock = FakeClock()
    m = LogManager([tmp_path], LogConfig(segment_bytes=2000), clock, broker_id=1)
    m.startup()
    log = m.get_or_create_log("t", 0)
    assert m.partitions_in_rounds() == []
    log.reconfigure(LogConfig(segment_bytes=2000, flush_interval_ms=1000))  # flush.ms set
    assert m.partitions_in_rounds() == [("t", 0)]
    log.append(bytearray(make_batch(0)))
    clock.advance(1000)
    m.run_maintenance()
    assert log.recovery_point == log.log_end_offset  # flushed by the round
    assert m.partitions_in_rounds() == [("t", 0)]  # and looked at again for the next
    log.reconfigure(LogConfig(segment_bytes=2000))
    m.run_maintenance()
    assert m.partitions_in_rounds() == []
    for i in range(1, 60):
        log.append(bytearray(make_batch(i)))
    log.delete_records(log.log_end_offset)  # every segment but the active one goes
    m.run_maintenance()  # the rolled segments are renamed .deleted, removed later
    assert len(log.segments) == 1 and m.partitions_in_rounds() == [("t", 0)]
    assert any(path.suffix == ".deleted" for path in log.directory.iterdir())
    clock.advance(CONFIG.file_delete_delay_ms)
    m.run_maintenance()
    assert not any(path.suffix == ".deleted" for path in log.directory.iterdir())
    assert m.partitions_in_rounds() == []


def compacted_manager(directory, clock):
    config = LogConfig(segment_bytes=2000, cleanup_policy=frozenset({"compact"}))
    m = LogManager([directory], config, clock, broker_id=1)
    m.startup()
    return m


def write_keys(log, clock, rounds):
    for i in range(rounds):
        record = Record(0, clock.now_ms, b"k%d" % (i % 5), b"v%d" % i)
        log.append(bytearray(encode_batch([record])))


def test_compaction_passes_look_at_the_logs_of_compacted_topics_alone(tmp_path):
    clock = FakeClock()
    compact = LogConfig(segment_bytes=2000, cleanup_policy=frozenset({"compact"}))
    plain = LogConfig(segment_bytes=2000)

    def configs(topic):
        return compact if topic.startswith("c") else plain

    def started():
        m = LogManager([tmp_path], plain, clock, broker_id=1, topic_config=configs)
        m.startup()
        return m

    m = started()
    compacted, deleting, one_segment = (m.get_or_create_log(t, 0) for t in ("c1", "p1", "c2"))
    for log in (compacted, deleting):
        write_keys(log, clock, 60)
    assert len(compacted.segments) > 1 and len(deleting.segments) > 1
    assert len(one_segment.segments) == 1  # nothing a pass could clean yet
    assert m.logs_to_compact() == [compacted]
    deleting.reconfigure(compact)  # its cleanup.policy altered
    assert sorted(log.topic for log in m.logs_to_compact()) == ["c1", "p1"]
    assert deleting.config is compact
    compacted.reconfigure(plain)
    assert m.logs_to_compact() == [deleting]
    m.delete_log("p1", 0)
    assert m.logs_to_compact() == []
    m.shutdown()
    again = started()  # loaded with its topic's config
    assert [log.topic for log in again.logs_to_compact()] == ["c1"]


def test_compaction_passes_are_checkpointed_in_cleaner_offset_checkpoint(tmp_path):
    clock = FakeClock()
    m = compacted_manager(tmp_path, clock)
    log = m.get_or_create_log("__consumer_offsets", 7)
    write_keys(log, clock, 100)
    log.roll()
    stats = m.clean(log)
    assert stats.first_dirty_offset == log.segments[-1].base_offset == 100
    checkpoint = tmp_path / "cleaner-offset-checkpoint"
    assert checkpoint.read_text() == "0\n1\n__consumer_offsets 7 100\n"  # Kafka's format
    m.shutdown()

    again = compacted_manager(tmp_path, clock)
    reopened = again.get_log("__consumer_offsets", 7)
    assert reopened is not None
    assert again.clean(reopened).first_dirty_offset is None  # nothing new: no pass
    write_keys(reopened, clock, 100)
    reopened.roll()
    assert again.clean(reopened).first_dirty_offset == 200
    assert read_checkpoint(checkpoint) == {("__consumer_offsets", 7): 200}
    again.delete_log("__consumer_offsets", 7)
    again.write_checkpoints()
    assert read_checkpoint(checkpoint) == {}


def test_a_first_dirty_offset_past_the_log_end_cleans_the_whole_log(tmp_path, caplog):
    clock = FakeClock()
    m = compacted_manager(tmp_path, clock)
    log = m.get_or_create_log("c", 0)
    write_keys(log, clock, 60)
    log.roll()
    m.shutdown()
    # As if the log had been cut back by a crash after a pass checkpointed offset 500.
    write_checkpoint(tmp_path / "cleaner-offset-checkpoint", {("c", 0): 500})
    again = compacted_manager(tmp_path, clock)
    reopened = again.get_log("c", 0)
    assert reopened is not None
    with caplog.at_level(logging.WARNING, logger="wirekafka.storage"):
        stats = again.clean(reopened)
    assert "past the log end" in caplog.text
    assert stats.records_removed == 55 and stats.first_dirty_offset == 60


def test_checkpoints_are_written_safely_while_partitions_come_and_go(tmp_path):
    """Maintenance writes checkpoints from a worker thread while topics are
    created and deleted and the cleaner records its passes."""
    clock = FakeClock()
    m = compacted_manager(tmp_path, clock)
    errors: list[BaseException] = []
    stop = threading.Event()

    def checkpoint_forever() -> None:
        while not stop.is_set():
            try:
                m.write_checkpoints()
            except BaseException as exc:  # reported below
                errors.append(exc)
                return

    writer = threading.Thread(target=checkpoint_forever)
    writer.start()
    try:
        for round_number in range(40):
            log = m.get_or_create_log("churn", round_number)
            write_keys(log, clock, 30)
            log.roll()
            m.clean(log)
            m.delete_log("churn", round_number, delay_ms=0)
    finally:
        stop.set()
        writer.join()
    assert errors == []
    m.write_checkpoints()
    assert read_checkpoint(tmp_path / "cleaner-offset-checkpoint") == {}
    assert read_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {}


def take_offline(log):
    """Roll a segment, then take its file away before the roll's fsync (the
    segment no longer holding it, as when the file cache let it go): the open
    fails with a real FileNotFoundError and the log goes offline. Returns a
    function that puts the file back, and the log's bytes before the failure."""
    batch = make_batch(0)
    while len(log.segments) < 2:
        log.append(bytearray(batch))
    written = read_all(log)
    rolled = log.segments[0]
    rolled.release_files()
    away = rolled.log_path.with_name(rolled.log_path.name + ".away")
    rolled.log_path.rename(away)
    with pytest.raises(StorageError, match="fsync of a rolled segment failed"):
        log.flush()
    assert log.offline
    return lambda: away.rename(rolled.log_path), written


def test_a_log_offline_after_a_disk_error_keeps_the_shutdown_unclean(tmp_path, caplog):
    m = manager([tmp_path])
    log = m.get_or_create_log("orders", 0)
    batch = make_batch(0)
    put_back, written = take_offline(log)
    with caplog.at_level(logging.ERROR):
        m.shutdown()
    assert "offline after a disk error" in caplog.text
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    put_back()
    again = manager([tmp_path])
    assert not again.had_clean_shutdown  # so the log was checked, not trusted
    reopened = again.get_or_create_log("orders", 0)
    assert read_all(reopened) == written
    reopened.append(bytearray(batch))
    again.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()


def test_an_offline_log_can_still_be_deleted(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("orders", 1)
    take_offline(log)
    assert m.delete_log("orders", 1, delay_ms=0)
    assert not (tmp_path / "orders-1").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    m.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()


def test_maintenance_flushes_a_log_once_its_flush_interval_has_passed(tmp_path):
    clock = FakeClock()
    m = LogManager(
        [tmp_path], LogConfig(segment_bytes=2000, flush_interval_ms=1000), clock, broker_id=1
    )
    m.startup()
    written, idle = m.get_or_create_log("t", 0), m.get_or_create_log("t", 1)
    written.append(bytearray(make_batch(0)))
    end = written.log_end_offset
    m.run_maintenance()
    assert written.recovery_point == 0  # not flushed before log.flush.interval.ms
    clock.advance(999)
    m.run_maintenance()
    assert written.recovery_point == 0
    clock.advance(1)
    m.run_maintenance()
    assert (written.recovery_point, idle.recovery_point) == (end, 0)
    for i in range(1, 60):  # rolls: each rolled segment is synced by the next round
        written.append(bytearray(make_batch(i)))
    assert len(written.segments) > 2
    m.run_maintenance()
    assert written.recovery_point == written.segments[-1].base_offset
