"""The look inside a batch before it is stored: what passes, what is refused and why."""

from __future__ import annotations

import os
import random
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch

from tests.protocol.crafted_batches import (
    BAD_RECORDS,
    bad_batch,
    batch_of,
    record_bytes,
    uniform,
)
from tests.protocol.records_gen import sample_records
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.records import validate
from wirekafka.protocol.records.compression import CompressionType, compress
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    CRC_OFFSET,
    HEADER_BYTES,
    compute_crc,
    encode_batch,
    read_batch_header,
)
from wirekafka.protocol.records.validate import BatchCheck, InvalidRecords, check_batch

LIMIT = 64 * 1024 * 1024
CODECS = list(CompressionType)
EXAMPLES = int(os.environ.get("WIREKAFKA_FUZZ_EXAMPLES", "10000"))


def check(batch: bytes, *, keys_required: bool = False, limit: int = LIMIT, chunk: int = 0) -> None:
    header = read_batch_header(batch)
    extra = {"chunk_bytes": chunk} if chunk else {}
    BatchCheck(batch, header, keys_required=keys_required, max_inflated_bytes=limit, **extra).run()


def refused(batch: bytes, **kwargs: object) -> InvalidRecords:
    with pytest.raises(InvalidRecords) as caught:
        check(batch, **kwargs)  # type: ignore[arg-type]
    return caught.value


# what passes


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_batches_as_clients_write_them_pass(codec: CompressionType) -> None:
    for seed in range(3):
        check(encode_batch(sample_records(40, seed=seed), compression=codec))
    rng = random.Random(5)
    mixed = [
        Record(
            i,
            1_700_000_000_000 + rng.randint(0, 100_000),
            b"k%d" % i,
            rng.randbytes(rng.choice([0, 90, 200])),
        )
        for i in range(3000)
    ]
    check(encode_batch(mixed, compression=codec))


@pytest.mark.parametrize("count", [1, 7, 8, 9, 63, 64, 65, 1000, 8191, 8192, 8193, 20_000])
def test_runs_of_one_layout_pass_across_every_offset_delta_width(count: int) -> None:
    check(batch_of(b"".join(uniform(count, size=20)), count))


def test_runs_broken_by_other_layouts_pass() -> None:
    records = uniform(300)
    records[100] = record_bytes(100, key=b"other", value=b"x" * 7)
    records[200] = record_bytes(200, key=b"key1", value=b"y" * 100, headers=[(b"h", b"v")])
    records[250] = record_bytes(250, key=b"key1", value=b"z" * 100, timestamp_delta=100_000)
    check(batch_of(b"".join(records), 300))


@pytest.mark.parametrize("chunk", [1, 7, 100, 4096])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_records_cut_by_chunk_boundaries_pass(chunk: int, codec: CompressionType) -> None:
    records = [
        *uniform(200, size=30),
        *(record_bytes(i, value=b"v" * 5000) for i in range(200, 203)),
    ]
    check(batch_of(b"".join(records), 203, codec), chunk=chunk)


def test_null_and_empty_keys_and_values_pass_and_compacted_topics_take_empty_keys() -> None:
    records = [
        record_bytes(0, key=None, value=None),
        record_bytes(1, key=b"", value=b""),
        record_bytes(2, key=b"k", value=None, headers=[(b"", None), ("ключ".encode(), b"")]),
    ]
    check(batch_of(b"".join(records), 3))
    keyed = [record_bytes(0, key=b"", value=None), record_bytes(1, key=b"k", value=b"")]
    check(batch_of(b"".join(keyed), 2), keys_required=True)


def test_a_check_stopped_at_its_deadline_goes_on_where_it_stopped() -> None:
    batch = batch_of(b"".join(uniform(5000, size=200)), 5000)
    work = BatchCheck(
        batch, read_batch_header(batch), keys_required=False, max_inflated_bytes=LIMIT,
        chunk_bytes=1024,
    )  # fmt: skip
    assert work.run(deadline=time.perf_counter()) is False
    assert work.run() is True
    assert work.run() is True


# what is refused


def code_of(batch: bytes, **kwargs: object) -> ErrorCode:
    return ErrorCode(refused(batch, **kwargs).error_code)


@pytest.mark.parametrize("case", BAD_RECORDS, ids=list(BAD_RECORDS))
def test_records_that_do_not_parse_are_invalid_records(case: str) -> None:
    assert code_of(bad_batch(case)) == ErrorCode.INVALID_RECORD
    assert code_of(bad_batch(case, CompressionType.LZ4)) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", CODECS[1:], ids=lambda c: c.name)
def test_payloads_that_do_not_decompress_are_corrupt(codec: CompressionType) -> None:
    good = compress(codec, b"".join(uniform(50)))
    for junk in (b"\x00" * 40, good[: len(good) // 2], good[:5], bytes(range(256)) * 3):
        batch = batch_of(junk, 50, codec, raw=True)
        assert code_of(batch) == ErrorCode.CORRUPT_MESSAGE, junk[:10]


@pytest.mark.parametrize("codec", CODECS[1:], ids=lambda c: c.name)
def test_payloads_inflating_past_the_limit_are_too_large(codec: CompressionType) -> None:
    records = [record_bytes(0, value=b"\x00" * 3_000_000)]
    batch = batch_of(b"".join(records), 1, codec)
    assert len(batch) < 300_000
    error = refused(batch, limit=1_000_000)
    assert error.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "exceeds 1000000" in str(error)
    check(batch, limit=4_000_000)


def test_compacted_topics_refuse_records_without_a_key() -> None:
    assert code_of(batch_of(record_bytes(0, key=None), 1), keys_required=True) == (
        ErrorCode.INVALID_RECORD
    )
    records = uniform(500)
    records[321] = record_bytes(321, key=None, value=bytes([321 % 251]) * 103)
    assert "record 321" in str(refused(batch_of(b"".join(records), 500), keys_required=True))
    check(batch_of(b"".join(records), 500))


# In a run of one layout, a fault in any field of any record is found.
RUN_FAULTS = [
    "length",
    "attributes",
    "timestamp",
    "offset delta",
    "key length",
    "value length",
    "header count",
]


def field_at(record: bytes, field: str) -> int:
    """Where ``field`` starts in a record of :func:`uniform`."""
    at = 0
    while record[at] >= 0x80:
        at += 1
    attributes = at + 1
    if field == "attributes":
        return attributes
    starts = {"length": 0, "timestamp": attributes + 1}
    at = attributes + 1
    for name in ("timestamp", "offset delta", "key length"):
        starts[name] = at
        while record[at] >= 0x80:
            at += 1
        at += 1
    starts["value length"] = at + 4  # after the key, b"key1"
    starts["header count"] = len(record) - 1
    return starts[field]


@pytest.mark.parametrize("fault", RUN_FAULTS)
@pytest.mark.parametrize("victim", [1, 9, 100, 999])
def test_a_fault_inside_a_run_is_found(fault: str, victim: int) -> None:
    records = uniform(1000)
    broken = bytearray(records[victim])
    at = field_at(records[victim], fault)
    broken[at] ^= 0x80 if fault in ("attributes", "timestamp") else 0x02
    records[victim] = bytes(broken)
    error = refused(batch_of(b"".join(records), 1000))
    assert error.error_code == ErrorCode.INVALID_RECORD


# Generated batches, one byte or field corrupted at a time: whatever the
# check lets through, kafka-python's parser reads whole, with every offset
# in its place.

records_strategy = st.lists(
    st.builds(
        lambda key, value, headers, ts: (key, value, headers, ts),
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(
            st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))),
            max_size=2,
        ),
        st.integers(min_value=-(10**6), max_value=10**9),
    ),
    min_size=1,
    max_size=40,
)


def _records(drawn: list[tuple]) -> list[Record]:
    return [
        Record(i, 1_700_000_000_000 + ts, key, value, headers)
        for i, (key, value, headers, ts) in enumerate(drawn)
    ]


def kafka_python_reads_it_whole(batch: bytes, count: int, keys_required: bool) -> bool:
    parsed = DefaultRecordBatch(bytearray(batch))
    try:
        records = list(parsed)
    except CorruptRecordError:
        return False
    return (
        len(records) == count
        and [r.offset for r in records] == list(range(count))
        and not (keys_required and any(r.key is None for r in records))
    )


@settings(
    max_examples=max(EXAMPLES // 10, 200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    drawn=records_strategy,
    repeat=st.integers(min_value=1, max_value=30),
    where=st.integers(min_value=0),
    byte=st.integers(min_value=0, max_value=255),
    count_change=st.sampled_from([0, 0, 0, -1, 1]),
    keys_required=st.booleans(),
)
def test_what_passes_a_client_can_read(
    drawn: list[tuple], repeat: int, where: int, byte: int, count_change: int, keys_required: bool
) -> None:
    records = _records((drawn * repeat)[:200])
    good = bytearray(encode_batch(records))
    if not (keys_required and any(r.key is None for r in records)):
        check(bytes(good), keys_required=keys_required)
    bad = good
    position = HEADER_BYTES + where % (len(bad) - HEADER_BYTES)
    bad[position] = byte
    count = len(records) + count_change
    struct.pack_into(">i", bad, HEADER_BYTES - 4, count)
    struct.pack_into(">I", bad, CRC_OFFSET, compute_crc(bad, 0, len(bad)))
    try:
        check_batch(
            bytes(bad),
            read_batch_header(bad),
            keys_required=keys_required,
            max_inflated_bytes=LIMIT,
        )
    except InvalidRecords:
        return
    assert kafka_python_reads_it_whole(bytes(bad), count, keys_required)


@pytest.mark.parametrize(
    "deltas",
    [
        [i // 3 for i in range(1000)],  # one and two bytes
        [-1 - i // 3 for i in range(1000)],  # all before the base: the largest is -1
        [(-1) ** i * i for i in range(1000)],  # both signs
        [2**40 + i for i in range(1000)],  # six bytes
        [5] * 500 + [2**50] + [7] * 499,  # one far out, in the middle of runs
        [(i * 7) % 60 for i in range(1000)],  # one byte, the largest not the last
        [64 + (i * 37) % 4000 for i in range(1000)],  # two bytes, the largest not the last
        [100 + i for i in range(500)] + [300] * 10 + [299] * 5,  # last's high group, not last
        [200 + i // 2 for i in range(200)] + [150] * 50,  # two bytes, falling back at the end
        [70] * 20 + [300, 290],  # the last two share a high group: the larger is not last
        [70] * 5 + [300] + [70] * 20 + [290],  # the largest shares the last's high group
    ],
    ids=[
        "growing",
        "negative",
        "both-signs",
        "six-bytes",
        "one-far-out",
        "sawtooth",
        "two-byte-sawtooth",
        "two-byte-plateau",
        "two-byte-drop",
        "two-byte-same-high",
        "two-byte-same-high-far",
    ],
)
def test_the_max_timestamp_must_be_what_the_records_say(deltas: list[int]) -> None:
    assert_max_timestamp_checked(deltas, key=b"key1", value=b"v" * 90)


def assert_max_timestamp_checked(deltas: list[int], *, key: bytes, value: bytes) -> None:
    """Records of these timestamp deltas pass with the largest as the batch's max
    timestamp, and are refused with one more or less."""
    records = b"".join(
        record_bytes(i, key=key, value=value, timestamp_delta=delta)
        for i, delta in enumerate(deltas)
    )
    largest = max(deltas)
    check(batch_of(records, len(deltas), max_timestamp_delta=largest))
    for wrong in (largest - 1, largest + 1):
        error = refused(batch_of(records, len(deltas), max_timestamp_delta=wrong))
        assert error.error_code == ErrorCode.INVALID_RECORD
        assert f"reach {largest} ms past" in str(error)


def test_a_log_append_time_batch_keeps_its_max_timestamp() -> None:
    """The broker sets a LogAppendTime batch's max timestamp; the records' say nothing of it."""
    batch = bytearray(batch_of(b"".join(uniform(100)), 100, max_timestamp_delta=10**6))
    struct.pack_into(">h", batch, 21, 0x08)  # attributes: LogAppendTime
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(batch, 0, len(batch)))
    check(bytes(batch))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    deltas=st.lists(
        st.one_of(st.integers(64, 8191), st.integers(-4096, -65)), min_size=9, max_size=200
    ),
    grow=st.booleans(),
)
def test_two_byte_timestamp_deltas_give_their_largest(deltas: list[int], grow: bool) -> None:
    """Deltas of two varint bytes, in any order (mostly growing, as clients write
    them, or not): the batch's max timestamp must be their largest."""
    assert_max_timestamp_checked(sorted(deltas) if grow else deltas, key=b"k", value=b"v" * 20)


# The records of a batch of known layouts (a layout the walk found a run of
# before, in any batch) are checked as runs of those layouts, the first record of
# each run included (validate._known_records); what does not fit goes to the walk.


def check_small(batch: bytes, *, keys_required: bool = False) -> None:
    """The check a produce makes of a small uncompressed batch (start_check's)."""
    check_batch(
        batch, read_batch_header(batch), keys_required=keys_required, max_inflated_bytes=LIMIT
    )


def refused_small(batch: bytes, **kwargs: bool) -> InvalidRecords:
    with pytest.raises(InvalidRecords) as caught:
        check_small(batch, **kwargs)
    return caught.value


def layout_seen(count: int) -> list[bytes]:
    """Records of one layout, after a batch of them passed twice: the walk kept their
    layout, then the check of runs of it kept the batch's runs, by its size and count."""
    records = uniform(count, size=50)
    check_small(batch_of(b"".join(records), count))
    check_small(batch_of(b"".join(records), count))
    return records


# 260 records of uniform(): offset deltas of one byte to the 64th, timestamp deltas
# (i // 3) of one byte to the 192nd: runs of three layouts, each learned by the walk
LAYOUTS_SEEN = 260


def layouts_seen() -> None:
    check_small(batch_of(b"".join(uniform(LAYOUTS_SEEN, size=50)), LAYOUTS_SEEN))


def known_records(batch: bytes) -> int | None:
    header = read_batch_header(batch)
    return validate._known_records(bytes(batch[HEADER_BYTES:]), header.record_count, False)


@pytest.mark.parametrize("count", [1, 3, 50, 63, 64, 65, 90, 192, 193, 200, 300])
def test_batches_of_any_count_are_checked_as_runs_of_the_layouts_seen(count: int) -> None:
    layouts_seen()
    records = uniform(count, size=50)
    batch = batch_of(b"".join(records), count)
    assert known_records(batch) == (count - 1) // 3  # runs of known layouts, found whole
    check_small(batch)


def test_a_layout_walked_again_keeps_the_check_it_had() -> None:
    """The walk finding a kept layout again keeps the check it had (and the columns
    kept for its runs), not an equal new one."""
    batch = batch_of(b"".join(uniform(100, size=50)), 100)
    check(batch)  # the walk, chunk by chunk
    kept = dict(validate._known_layouts)
    check(batch)
    assert kept and all(validate._known_layouts[key] is found for key, found in kept.items())


@pytest.mark.parametrize("fault", RUN_FAULTS)
@pytest.mark.parametrize(
    ("count", "victim"),
    [
        *((1, 0), (3, 0), (3, 2), (50, 0), (50, 1), (50, 25), (50, 49)),
        *((90, 0), (90, 63), (90, 64), (90, 89)),  # offset deltas widen at the 65th record
        *((200, 64), (200, 191), (200, 192), (200, 199)),  # timestamp deltas, at the 193rd
    ],
)
def test_a_batch_of_known_layouts_is_checked_in_every_record(
    fault: str, count: int, victim: int
) -> None:
    layouts_seen()
    layout_seen(count)
    records = uniform(count, size=50)
    broken = bytearray(records[victim])
    broken[field_at(records[victim], fault)] ^= (
        0x80 if fault in ("attributes", "timestamp") else 0x02
    )
    records[victim] = bytes(broken)
    batch = batch_of(b"".join(records), count)
    assert len(batch) == len(batch_of(b"".join(uniform(count, size=50)), count))  # same key
    assert known_records(batch) is None
    error = refused_small(batch)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert f"record {victim}" in str(error) or "past the batch's base" in str(error)


def test_the_largest_timestamp_delta_of_any_run_is_the_batchs() -> None:
    """The largest delta in the first of two runs (offset deltas of one byte, then two)."""
    deltas = [60 + i % 4 for i in range(64)] + [i % 6 for i in range(64, 130)]
    records = b"".join(
        record_bytes(i, key=b"key1", value=b"v" * 50, timestamp_delta=delta)
        for i, delta in enumerate(deltas)
    )
    check_small(batch_of(records, 130))  # the walk, learning both layouts
    assert known_records(batch_of(records, 130)) == 63
    check_small(batch_of(records, 130))
    for wrong in (62, 64, 5):
        error = refused_small(batch_of(records, 130, max_timestamp_delta=wrong))
        assert "reach 63 ms past" in str(error)


@pytest.mark.parametrize("later", [9000, -9000])
def test_a_run_ends_where_its_timestamp_deltas_take_a_third_byte(later: int) -> None:
    """Two-byte timestamp deltas, then three-byte ones (a batch spanning more than
    8.192 s, forward or back): the run of the first layout ends where a second
    byte carries on, and the largest delta, in either run, is the batch's."""
    deltas = [100 + i for i in range(40)] + [later + i for i in range(40)]
    records = b"".join(
        record_bytes(i, key=b"key1", value=b"v" * 50, timestamp_delta=delta)
        for i, delta in enumerate(deltas)
    )
    largest = max(deltas)
    check_small(batch_of(records, 80))  # the walk, learning both layouts
    assert known_records(batch_of(records, 80)) == largest
    check_small(batch_of(records, 80))
    for wrong in (largest - 1, largest + 1):
        error = refused_small(batch_of(records, 80, max_timestamp_delta=wrong))
        assert f"reach {largest} ms past" in str(error)


def test_batches_of_known_layouts_are_refused_exactly_where_the_walk_refuses_them() -> None:
    """Random batches of records of a few layouts, their timestamp deltas widening
    at random, one byte changed (or none): the check with those layouts known
    refuses exactly what the walk alone refuses."""
    rng = random.Random(16)
    for _ in range(max(EXAMPLES // 20, 100)):
        count = rng.randrange(1, 300)
        step = rng.choice([0, 1, 2, 50])
        layouts = [(b"key1", 50), (None, 100), (b"k", 7)][: rng.randrange(1, 4)]
        records = []
        for i in range(count):
            key, size = layouts[(i // rng.choice([1, 20, 1000])) % len(layouts)]
            records.append(
                record_bytes(i, key=key, value=b"v" * size, timestamp_delta=i * step // 3)
            )
        good = batch_of(b"".join(records), count)
        check_small(good)  # the walk learns the layouts of its runs
        check_small(good)
        bad = bytearray(good)
        if rng.random() < 0.9:
            bad[rng.randrange(HEADER_BYTES, len(bad))] = rng.randrange(256)
            struct.pack_into(">I", bad, CRC_OFFSET, compute_crc(bad, 0, len(bad)))
        try:
            check(bytes(bad))  # the walk, chunk by chunk
        except InvalidRecords as walked:
            assert str(refused_small(bytes(bad))) == str(walked)
        else:
            check_small(bytes(bad))


# A batch of a size and count not seen before is first checked as the runs its size
# predicts (validate._predicted_runs): the first record's layout, offset deltas a
# byte wider from the 65th record, timestamp deltas a byte wider from where the
# size says.


def widening(count: int, widened: int) -> list[bytes]:
    """Records of uniform()'s layout whose timestamp deltas take a second byte from
    the ``widened``-th record on."""
    return [
        record_bytes(
            i, key=b"key1", value=bytes([i % 251]) * 50, timestamp_delta=i + 64 * (i >= widened)
        )
        for i in range(count)
    ]


def all_four_layouts_seen() -> None:
    """The walk learns uniform()'s layout with one- and two-byte offset and timestamp
    deltas, each way round."""
    layouts_seen()  # (1, 1), (1, 2) and (2, 2) bytes of timestamp and offset deltas
    check_small(batch_of(b"".join(widening(40, 20)), 40))  # (2, 1)


@pytest.mark.parametrize(
    ("count", "widened"),
    [(1, 1), (2, 1), (50, 50), (50, 1), (50, 10), (64, 63), (65, 64), (65, 65),
     (90, 64), (90, 30), (90, 80), (90, 1), (256, 200), (300, 100)],
)  # fmt: skip
def test_a_batch_not_seen_before_is_checked_as_the_runs_its_size_predicts(
    monkeypatch: pytest.MonkeyPatch, count: int, widened: int
) -> None:
    all_four_layouts_seen()
    monkeypatch.setattr(validate, "_plans", {})  # no batch of this size and count seen

    def looked_for(*args: object, **kwargs: object) -> None:
        raise AssertionError("the runs were looked for, not predicted")

    monkeypatch.setattr(validate, "_run_length", looked_for)
    records = widening(count, widened)
    largest = (count - 1) + 64 * (count > widened)
    batch = batch_of(b"".join(records), count)
    assert known_records(batch) == largest
    check_small(batch)


@pytest.mark.parametrize("fault", RUN_FAULTS)
@pytest.mark.parametrize("victim", [0, 1, 29, 30, 63, 64, 89])
def test_a_predicted_run_is_checked_in_every_record(fault: str, victim: int) -> None:
    """90 records, timestamp deltas a byte wider from the 31st, offset deltas from the
    65th: three runs predicted, one byte of one record changed."""
    all_four_layouts_seen()
    records = widening(90, 30)
    broken = bytearray(records[victim])
    broken[field_at(records[victim], fault)] ^= (
        0x80 if fault in ("attributes", "timestamp") else 0x02
    )
    records[victim] = bytes(broken)
    joined = b"".join(records)
    predicted = validate._predicted_runs(joined, 90, False)
    assert predicted is None or validate._largest_if_held(joined, predicted) is None
    error = refused_small(batch_of(joined, 90))
    assert error.error_code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("count", [3, 50])
def test_a_batch_of_the_same_size_and_count_in_another_layout_passes(count: int) -> None:
    layout_seen(count)
    # the same record size, the bytes split otherwise between key and value
    others = [
        record_bytes(i, key=b"key12", value=bytes([i]) * 49, timestamp_delta=i // 3)
        for i in range(count)
    ]
    assert b"".join(others) != b"".join(uniform(count, size=50))
    assert len(b"".join(others)) == len(b"".join(uniform(count, size=50)))
    check_small(batch_of(b"".join(others), count))
    # and records of varying sizes adding up to the same
    varying = [
        record_bytes(i, key=b"key1", value=bytes([i]) * (50 + (1 if i % 2 else -1)))
        for i in range(count - 1)
    ]
    varying.append(record_bytes(count - 1, key=b"key1", value=b"x" * (50 + (count - 1) % 2)))
    assert len(b"".join(varying)) == len(b"".join(uniform(count, size=50)))
    check_small(batch_of(b"".join(varying), count))


@pytest.mark.parametrize("count", [3, 50])
def test_a_batch_of_a_layout_seen_before_must_give_its_max_timestamp(count: int) -> None:
    records = layout_seen(count)
    largest = (count - 1) // 3
    check_small(batch_of(b"".join(records), count, max_timestamp_delta=largest))
    for wrong in (largest - 1, largest + 1):
        error = refused_small(batch_of(b"".join(records), count, max_timestamp_delta=wrong))
        assert f"reach {largest} ms past" in str(error)
    # the last record's timestamp byte with its continuation bit set, and a max timestamp
    # that byte would give if it stood alone: refused as a record that does not parse
    last = bytearray(records[-1])
    last[field_at(records[-1], "timestamp")] = 0x82
    records[-1] = bytes(last)
    error = refused_small(batch_of(b"".join(records), count, max_timestamp_delta=0x82 >> 1))
    assert f"record {count - 1}" in str(error)


@pytest.mark.parametrize("count", [3, 50])
def test_a_layout_seen_without_keys_is_refused_where_keys_are_required(count: int) -> None:
    records = uniform(count, size=50, key=None)
    for _ in range(2):
        check_small(batch_of(b"".join(records), count))
    error = refused_small(batch_of(b"".join(records), count), keys_required=True)
    assert "record 0" in str(error)


@pytest.mark.parametrize("width", [2, 3, 4, 5])
def test_batches_with_offset_deltas_wider_than_they_need_pass_again_and_again(width: int) -> None:
    # a varint may be wider than it must (Kafka's reader takes up to five bytes)
    def wide(offset_delta: int) -> bytes:
        record = bytearray(record_bytes(offset_delta, key=b"k", value=b"v" * 20))
        groups = [0x80 | (offset_delta * 2)] + [0x80] * (width - 2) + [0x00]
        record[3:4] = bytes(groups)  # after the length, attributes and timestamp delta
        record[0] += 2 * (width - 1)  # the length (a one-byte zigzag varint) grows as much
        return bytes(record)

    for count in (2, 12):
        records = b"".join(wide(i) for i in range(count))
        for _ in range(3):
            check_small(batch_of(records, count))
