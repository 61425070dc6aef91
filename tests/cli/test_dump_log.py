"""``wirekafka dump-log`` on segment files written through the storage layer
(and message sets as older Kafka versions wrote them), read back as JSON."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

from tests.storage.helpers import BASE_TIME_MS, FakeClock
from wirekafka.cli import main
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.message_set import encode_message_set
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog

SEGMENT = "00000000000000000000"
CODECS = [
    CompressionType.NONE,
    CompressionType.GZIP,
    CompressionType.SNAPPY,
    CompressionType.LZ4,
    CompressionType.ZSTD,
]


def dump(capsys, *args):
    """(exit code, the --json document, stderr)."""
    code = main(["dump-log", "--json", *map(str, args)])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def records(first: int, count: int, *, when: int = BASE_TIME_MS) -> list[Record]:
    return [
        Record(
            first + i,
            when + i,
            b"key-%d" % (first + i),
            b"value-%d" % (first + i),
            [("trace", b"t-%d" % i), ("bin", b"\xff\x00")],
        )
        for i in range(count)
    ]


def write_log(directory: Path, *, close: bool = True, batches: int = 10) -> PartitionLog:
    """A partition log with ``batches`` batches of 3 records, each codec in turn,
    indexed every 200 bytes."""
    log = PartitionLog(directory, "t", 0, LogConfig(index_interval_bytes=200), FakeClock())
    for i in range(batches):
        batch = encode_batch(
            records(3 * i, 3, when=BASE_TIME_MS + 10 * i), compression=CODECS[i % len(CODECS)]
        )
        log.append(bytearray(batch))
    if close:
        log.close()
    return log


def only_file(doc):
    assert len(doc["files"]) == 1
    return doc["files"][0]


def test_batches_records_and_indexes_of_a_closed_log(tmp_path, capsys):
    write_log(tmp_path / "t-0")
    code, doc, _ = dump(capsys, "--deep", "--print-data", tmp_path / "t-0")
    assert code == 0, doc
    assert doc["problem_count"] == 0
    log_doc, index_doc, time_doc = doc["files"]
    assert [f["kind"] for f in doc["files"]] == ["log", "index", "timeindex"]
    assert log_doc["base_offset"] == 0
    batches = log_doc["batches"]
    assert [(b["base_offset"], b["last_offset"], b["record_count"]) for b in batches] == [
        (3 * i, 3 * i + 2, 3) for i in range(10)
    ]
    assert [b["compression"] for b in batches] == [c.name.lower() for c in CODECS] * 2
    assert all(b["magic"] == 2 and b["crc_valid"] for b in batches)
    assert all(b["timestamp_type"] == "CreateTime" for b in batches)
    assert [b["max_timestamp"] for b in batches] == [BASE_TIME_MS + 10 * i + 2 for i in range(10)]
    assert [b["first_timestamp"] for b in batches] == [BASE_TIME_MS + 10 * i for i in range(10)]
    positions = [b["position"] for b in batches]
    assert positions[0] == 0
    assert all(
        b["position"] + b["size_bytes"] == n
        for b, n in zip(batches[:-1], positions[1:], strict=True)
    )
    assert log_doc["valid_bytes"] == log_doc["size_bytes"]  # closed: no zeros left
    assert log_doc["zero_bytes"] == 0
    fifth = batches[4]["records"][1]  # zstd
    assert fifth == {
        "offset": 13,
        "timestamp": BASE_TIME_MS + 41,
        "sequence": -1,
        "key_size": 6,
        "value_size": 8,
        "headers": [
            {"key": "trace", "value_size": 3, "value": "t-1", "value_encoding": "utf-8"},
            {"key": "bin", "value_size": 2, "value": "/wA=", "value_encoding": "base64"},
        ],
        "key": "key-13",
        "key_encoding": "utf-8",
        "value": "value-13",
        "value_encoding": "utf-8",
    }
    entries = index_doc["entries"]
    assert len(entries) >= 3
    by_position = {b["position"]: b for b in batches}
    for entry in entries:
        assert entry["offset"] == by_position[entry["position"]]["last_offset"]
    assert time_doc["entries"]
    last_batches = {b["last_offset"]: b for b in batches}
    for entry in time_doc["entries"]:
        assert entry["timestamp"] == last_batches[entry["offset"]]["max_timestamp"]


def test_without_deep_no_records_and_without_print_data_sizes_only(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=2)
    log_path = tmp_path / "t-0" / f"{SEGMENT}.log"
    _, doc, _ = dump(capsys, log_path)
    assert "records" not in only_file(doc)["batches"][0]
    _, doc, _ = dump(capsys, "--deep-iteration", log_path)
    record = only_file(doc)["batches"][0]["records"][0]
    assert (record["key_size"], record["value_size"]) == (5, 7)
    assert "key" not in record and "value" not in record["headers"][0]


def test_the_preallocated_zeros_of_an_active_segment_end_the_log(tmp_path, capsys):
    log = write_log(tmp_path / "t-0", close=False, batches=3)
    active = log.segments[-1]
    code, doc, _ = dump(capsys, active.log_path)
    log_doc = only_file(doc)
    assert code == 0 and log_doc["problems"] == []
    assert len(log_doc["batches"]) == 3
    assert log_doc["valid_bytes"] == active.size
    assert log_doc["zero_bytes"] == log_doc["size_bytes"] - active.size > 0


def test_dumping_changes_no_file(tmp_path, capsys):
    write_log(tmp_path / "t-0", close=False)
    files = sorted((tmp_path / "t-0").iterdir())

    def state():
        return [
            (f.name, f.stat().st_mtime_ns, hashlib.sha256(f.read_bytes()).hexdigest())
            for f in files
        ]

    before = state()
    for path in files:
        os.chmod(path, 0o444)  # read-only files are enough
    dump(capsys, "--print-data", tmp_path / "t-0")
    assert state() == before


def test_message_sets_of_magic_0_and_1(tmp_path, capsys):
    plain = encode_message_set([Record(0, -1, b"a", b"v0"), Record(1, -1, None, b"v1")], magic=0)
    wrapped = encode_message_set(
        [Record(2, BASE_TIME_MS, b"b", b"v2"), Record(3, BASE_TIME_MS + 5, b"c", b"\xff\x01")],
        magic=1,
        compression=CompressionType.GZIP,
    )
    path = tmp_path / f"{SEGMENT}.log"
    path.write_bytes(plain + wrapped)
    code, doc, _ = dump(capsys, "--print-data", path)
    assert code == 0, doc
    batches = only_file(doc)["batches"]
    summary = [
        (b["magic"], b["base_offset"], b["last_offset"], b["record_count"], b["compression"])
        for b in batches
    ]
    assert summary == [(0, 0, 0, 1, "none"), (0, 1, 1, 1, "none"), (1, 2, 3, 2, "gzip")]
    assert all(b["crc_valid"] for b in batches)
    assert [b["timestamp_type"] for b in batches] == ["NoTimestampType"] * 2 + ["CreateTime"]
    assert batches[2]["max_timestamp"] == BASE_TIME_MS + 5
    assert batches[0]["producer_id"] is None and batches[2]["is_control"] is None
    inner = batches[2]["records"]
    assert [(r["offset"], r["timestamp"], r["key"], r["value"]) for r in inner] == [
        (2, BASE_TIME_MS, "b", "v2"),
        (3, BASE_TIME_MS + 5, "c", "/wE="),
    ]
    assert inner[1]["value_encoding"] == "base64" and inner[1]["sequence"] is None
    assert batches[1]["records"][0]["key"] is None


def test_a_crc32_mismatch_in_a_message_set(tmp_path, capsys):
    data = bytearray(encode_message_set([Record(0, 1, b"k", b"value")], magic=1))
    data[-1] ^= 0x01
    path = tmp_path / f"{SEGMENT}.log"
    path.write_bytes(bytes(data))
    code, doc, _ = dump(capsys, path)
    log_doc = only_file(doc)
    assert code == 1
    assert log_doc["batches"][0]["crc_valid"] is False
    assert "CRC32 mismatch" in log_doc["problems"][0]["message"]


def test_transactional_and_control_batches(tmp_path, capsys):
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(), FakeClock())
    log.append(
        bytearray(
            encode_batch(
                records(0, 2),
                producer_id=7,
                producer_epoch=3,
                base_sequence=10,
                is_transactional=True,
                partition_leader_epoch=4,
            )
        )
    )
    commit = encode_batch(
        [Record(2, BASE_TIME_MS + 9, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))],
        producer_id=7,
        producer_epoch=3,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=4,
    )
    log.append_as_follower(commit)  # markers come from the coordinator, not a producer
    log.close()
    code, doc, _ = dump(capsys, "--deep", tmp_path / "t-0" / f"{SEGMENT}.log")
    assert code == 0, doc
    data, marker = only_file(doc)["batches"]
    assert (data["producer_id"], data["producer_epoch"]) == (7, 3)
    assert (data["base_sequence"], data["last_sequence"]) == (10, 11)
    assert data["is_transactional"] and not data["is_control"]
    assert [r["sequence"] for r in data["records"]] == [10, 11]
    assert marker["is_transactional"] and marker["is_control"]
    assert marker["partition_leader_epoch"] == 4
    assert marker["records"][0]["control"] == {"type": "COMMIT", "coordinator_epoch": 5}


def test_an_index_entry_corrupted_by_hand(tmp_path, capsys):
    write_log(tmp_path / "t-0")
    index = tmp_path / "t-0" / f"{SEGMENT}.index"
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 8)  # the second entry
    struct.pack_into(">ii", data, 8, relative, position + 3)
    index.write_bytes(bytes(data))
    code, doc, _ = dump(capsys, index)
    index_doc = only_file(doc)
    assert code == 1
    assert index_doc["entries"][1] == {
        "offset": relative,
        "relative_offset": relative,
        "position": position + 3,
    }
    [problem] = index_doc["problems"]
    assert problem["entry"] == 1
    assert "not an entry boundary" in problem["message"]
    assert doc["problem_count"] == 1


def test_index_entries_that_go_back_or_point_past_their_offset(tmp_path, capsys):
    write_log(tmp_path / "t-0")
    index = tmp_path / "t-0" / f"{SEGMENT}.index"
    entries = list(struct.iter_unpack(">ii", index.read_bytes()))
    assert len(entries) >= 3
    # the first entry names an offset below its batch; the last comes before the one before it
    entries[0] = (entries[0][0] - 3, entries[0][1])
    entries[-1], entries[-2] = entries[-2], entries[-1]
    index.write_bytes(b"".join(struct.pack(">ii", *entry) for entry in entries))
    code, doc, _ = dump(capsys, index)
    problems = only_file(doc)["problems"]
    assert code == 1
    assert [p["entry"] for p in problems] == [0, len(entries) - 1, len(entries) - 1]
    assert "starts at offset" in problems[0]["message"]
    assert "offset not above" in problems[1]["message"]
    assert "position not above" in problems[2]["message"]


def test_a_time_index_entry_that_does_not_match_its_batch(tmp_path, capsys):
    write_log(tmp_path / "t-0")
    time_index = tmp_path / "t-0" / f"{SEGMENT}.timeindex"
    data = bytearray(time_index.read_bytes())
    timestamp, relative = struct.unpack_from(">qi", data, 0)
    struct.pack_into(">qi", data, 0, timestamp - 1, relative)  # still below the next one
    time_index.write_bytes(bytes(data))
    code, doc, _ = dump(capsys, time_index)
    [problem] = only_file(doc)["problems"]
    assert code == 1
    assert problem["entry"] == 0
    assert f"has max timestamp {timestamp}" in problem["message"]


def test_zeros_after_index_entries_are_preallocated_space(tmp_path, capsys):
    """Apache Kafka grows an active segment's indexes to their full size ahead of use."""
    write_log(tmp_path / "t-0")
    index = tmp_path / "t-0" / f"{SEGMENT}.index"
    time_index = tmp_path / "t-0" / f"{SEGMENT}.timeindex"
    entries = len(index.read_bytes()) // 8
    with open(index, "ab") as file:
        file.write(bytes(8 * 100))
    with open(time_index, "ab") as file:
        file.write(bytes(12 * 100))
    code, doc, _ = dump(capsys, index, time_index)
    assert code == 0, doc
    index_doc, time_doc = doc["files"]
    assert len(index_doc["entries"]) == entries and index_doc["zero_bytes"] == 800
    assert time_doc["zero_bytes"] == 1200


def test_a_truncated_last_batch(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=4)
    path = tmp_path / "t-0" / f"{SEGMENT}.log"
    size = path.stat().st_size
    os.truncate(path, size - 10)
    code, doc, _ = dump(capsys, "--deep", path)
    log_doc = only_file(doc)
    assert code == 1
    assert [b["base_offset"] for b in log_doc["batches"]] == [0, 3, 6]
    [problem] = log_doc["problems"]
    last_end = log_doc["batches"][-1]["position"] + log_doc["batches"][-1]["size_bytes"]
    assert problem["position"] == last_end == log_doc["valid_bytes"]
    assert "cut off" in problem["message"] and "the dump stops here" in problem["message"]


def test_a_flipped_byte_fails_its_crc_and_the_dump_goes_on(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=3)
    path = tmp_path / "t-0" / f"{SEGMENT}.log"
    data = bytearray(path.read_bytes())
    _, doc, _ = dump(capsys, path)
    second = only_file(doc)["batches"][1]  # gzip: its records no longer inflate
    data[second["position"] + second["size_bytes"] - 5] ^= 0x40
    path.write_bytes(bytes(data))
    code, doc, _ = dump(capsys, "--deep", path)
    log_doc = only_file(doc)
    assert code == 1
    assert [b["crc_valid"] for b in log_doc["batches"]] == [True, False, True]
    assert log_doc["batches"][2]["records"][0]["offset"] == 6  # read on past the bad one
    messages = [(p["position"], p["message"]) for p in log_doc["problems"]]
    assert messages[0] == (
        second["position"],
        f"CRC32C mismatch in the entry at offsets 3..5: stored {second['crc']}",
    )
    assert all(position == second["position"] for position, _ in messages)


def test_garbage_in_place_of_a_batch(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=2)
    path = tmp_path / "t-0" / f"{SEGMENT}.log"
    with open(path, "ab") as file:
        file.write(b"\x00" * 8 + b"\x00\x00\x00\x40" + b"\x07" * 70)  # magic 7
    code, doc, _ = dump(capsys, path)
    log_doc = only_file(doc)
    assert code == 1
    assert len(log_doc["batches"]) == 2
    [problem] = log_doc["problems"]
    assert problem["position"] == log_doc["valid_bytes"]
    assert "magic 7 is not 0, 1 or 2" in problem["message"]


def test_data_after_zeros_is_reported(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=1)
    path = tmp_path / "t-0" / f"{SEGMENT}.log"
    end = path.stat().st_size
    with open(path, "ab") as file:
        file.write(bytes(100) + b"\x01")
    code, doc, _ = dump(capsys, path)
    [problem] = only_file(doc)["problems"]
    assert code == 1
    assert problem["position"] == end
    assert f"data again at position {end + 100}" in problem["message"]


def test_the_lines_for_people(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=2)
    path = tmp_path / "t-0" / f"{SEGMENT}.log"
    with open(path, "ab") as file:
        file.write(b"\x01" * 5)
    code = main(["dump-log", "--print-data", str(path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == f"Dumping {path}"
    assert out[1] == "Log starting offset: 0"
    assert out[2].startswith("baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1")
    assert " compresscodec: none " in out[2] and out[2].endswith("isvalid: true")
    assert out[3].startswith("| offset: 0 CreateTime: ")
    assert out[3].endswith(
        "headerKeys: [trace,bin] key: key-0 payload: value-0 headers: [trace=t-0,bin=base64:/wA=]"
    )
    assert any(line.startswith("PROBLEM position ") for line in out)
    assert out[-2] == "Found 1 problem(s) in 1 file(s):"
    assert out[-1].startswith(f"  {path}: position ")


def test_paths_that_are_no_segment_files(tmp_path, capsys):
    other = tmp_path / "notes.txt"
    other.write_text("x")
    (tmp_path / "build.log").write_text("not named by a base offset")
    code, doc, err = dump(capsys, tmp_path / f"{SEGMENT}.log", other, tmp_path)
    assert code == 2
    assert [f["error"] for f in doc["files"]] == [
        "No such file or directory",
        "not a segment file (.log, .index or .timeindex)",
        "a directory without segment files",
    ]
    assert f"{SEGMENT}.log: No such file or directory" in err
    assert main(["dump-log"]) == 2
    assert "name at least one PATH" in capsys.readouterr().err


def test_an_index_without_its_log_and_the_files_option(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=10)
    (tmp_path / "t-0" / f"{SEGMENT}.log").unlink()
    index = tmp_path / "t-0" / f"{SEGMENT}.index"
    time_index = tmp_path / "t-0" / f"{SEGMENT}.timeindex"
    code, doc, _ = dump(capsys, "--files", f"{index},{time_index}")
    assert code == 1
    assert [f["problems"][-1]["message"] for f in doc["files"]] == [
        f"no {SEGMENT}.log beside it: entries not checked"
    ] * 2


@pytest.mark.parametrize("flag", ["--help"])
def test_help(flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["dump-log", flag])
    assert exit_info.value.code == 0
    assert "--deep-iteration" in capsys.readouterr().out


def test_an_append_of_several_batches_is_indexed_at_its_first(tmp_path, capsys):
    """The storage layer indexes an append by its last offset at its first batch's position."""
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(index_interval_bytes=100), FakeClock())
    three_batches = b"".join(encode_batch(records(0, 2)) for _ in range(3))
    for _ in range(6):
        log.append(bytearray(three_batches))
    log.close()
    code, doc, _ = dump(capsys, tmp_path / "t-0")
    assert code == 0, doc
    log_doc, index_doc, _ = doc["files"]
    starts = {b["position"]: b for b in log_doc["batches"]}
    assert index_doc["entries"]
    for entry in index_doc["entries"]:
        first = starts[entry["position"]]
        assert entry["offset"] == first["last_offset"] + 4  # the third batch's last offset


def test_a_batch_larger_than_max_message_size_is_taken_for_corruption(tmp_path, capsys):
    write_log(tmp_path / "t-0", batches=2)
    path = tmp_path / "t-0" / f"{SEGMENT}.log"
    code, doc, _ = dump(capsys, "--max-message-size", "100", path)
    [problem] = only_file(doc)["problems"]
    assert code == 1
    assert problem["position"] == 0
    assert "larger than the limit of 100 bytes" in problem["message"]
    assert main(["dump-log", "--max-message-size", "0", str(path)]) == 2


def test_verify_index_only_checks_entries_without_printing_them(tmp_path, capsys):
    write_log(tmp_path / "t-0")
    index = tmp_path / "t-0" / f"{SEGMENT}.index"
    count = len(index.read_bytes()) // 8
    code, doc, _ = dump(capsys, "--verify-index-only", index)
    assert code == 0
    assert (only_file(doc)["entries"], only_file(doc)["entry_count"]) == ([], count)
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, relative, position + 3)  # no longer a batch boundary
    index.write_bytes(bytes(data))
    code, doc, _ = dump(capsys, "--verify-index-only", index)
    assert code == 1
    [problem] = only_file(doc)["problems"]
    assert problem["entry"] == 1 and "not an entry boundary" in problem["message"]
    assert main(["dump-log", "--verify-index-only", str(index)]) == 1
    text = capsys.readouterr().out
    assert "position:" not in text.replace(f"at position {position + 3}", "")  # no entry lines
    assert f"{count} entries checked, not printed" in text
    assert "not an entry boundary" in text


def test_index_sanity_check_is_the_brokers_check_without_the_log(tmp_path, capsys):
    write_log(tmp_path / "t-0")
    directory = tmp_path / "t-0"
    index, time_index = directory / f"{SEGMENT}.index", directory / f"{SEGMENT}.timeindex"
    (directory / f"{SEGMENT}.log").unlink()  # not needed for the sanity check
    code, doc, _ = dump(capsys, "--index-sanity-check", index, time_index)
    assert code == 0, doc
    assert [(f["kind"], f["sanity_check"], f["entries"], f["problems"]) for f in doc["files"]] == [
        ("index", "passed", [], []),
        ("timeindex", "passed", [], []),
    ]
    assert main(["dump-log", "--index-sanity-check", str(index)]) == 0
    assert f"{index} passed sanity check." in capsys.readouterr().out

    offsets = bytearray(index.read_bytes())
    struct.pack_into(">ii", offsets, len(offsets) - 8, -1, 0)  # the last offset below the base
    index.write_bytes(bytes(offsets) + b"\x00\x00")  # and not whole entries
    times = bytearray(time_index.read_bytes())
    first_timestamp = struct.unpack_from(">q", times, 0)[0]
    struct.pack_into(">q", times, len(times) - 12, first_timestamp - 1)  # last below the first
    time_index.write_bytes(bytes(times))
    code, doc, _ = dump(capsys, "--index-sanity-check", index, time_index)
    assert code == 1
    index_doc, time_doc = doc["files"]
    assert index_doc["sanity_check"] == time_doc["sanity_check"] == "failed"
    assert [p["message"] for p in index_doc["problems"]] == [
        "2 bytes after the last whole entry (the file's size is not a multiple of 8)",
        "the last entry's offset is below the base offset (relative offset -1)",
    ]
    assert [p["message"] for p in time_doc["problems"]] == [
        f"the last timestamp {first_timestamp - 1} is below the first timestamp {first_timestamp}"
    ]
    assert main(["dump-log", "--index-sanity-check", str(time_index)]) == 1
    text = capsys.readouterr().out
    assert f"{time_index} failed sanity check." in text and "is below the first" in text
