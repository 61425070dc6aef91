"""Records to produce and how to compare what was read back, for every client.

Stdlib only: the kafka-python 2 driver script, which runs in a venv of its own,
imports this module too.

A :class:`Sample` is a record as the test produces it, with the partition it
goes to. A :class:`Got` is a record as a client read it. The checks compare
per partition: the same records in the same order, at contiguous offsets, and
report the first difference instead of a diff of thousands of records.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

PARTITIONS = 3
RECORDS = 10_000
CROSS_RECORDS = 500

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class Sample:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp: int | None = None  # ms since the epoch; None: the client sets it


@dataclass(frozen=True, slots=True)
class Got:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp: int | None = None

    def content(self, *, headers: bool = True) -> tuple[object, ...]:
        return (self.key, self.value, self.headers if headers else None)


def counts_of(samples: Iterable[Sample], partitions: int = PARTITIONS) -> dict[int, int]:
    """How many samples go to each partition."""
    counts = dict.fromkeys(range(partitions), 0)
    for s in samples:
        counts[s.partition] += 1
    return counts


def got_from_record(record) -> Got:
    """A record as kafka-python (2 or 3) or aiokafka hands it over: same attribute names."""
    return Got(
        partition=record.partition,
        offset=record.offset,
        key=record.key,
        value=record.value,
        headers=tuple((k, v) for k, v in record.headers),
        timestamp=record.timestamp,
    )


def base_timestamp() -> int:
    """An hour ago, to the second: recent enough for any retention, in the past."""
    return (int(time.time()) - 3600) * 1000


def make_samples(
    count: int,
    tag: str,
    *,
    partitions: int = PARTITIONS,
    headers: bool = True,
    null_keys: bool = True,
    null_values: bool = False,
    binary: bool = True,
    timestamps: bool = True,
    t0: int | None = None,
    delimiters: bytes = b"",
) -> list[Sample]:
    """``count`` records over ``partitions`` partitions, round robin, all different.

    Keys are unique (some null when ``null_keys``); values vary in length from
    a few bytes to about a kilobyte and, when ``binary``, hold every byte value
    (except the bytes in ``delimiters``); each record has a header with its
    index, and every seventh a repeated header key. Timestamps, when set,
    increase by one millisecond per record, so each is unique within the topic.
    """
    start = base_timestamp() if t0 is None else t0
    samples = []
    for i in range(count):
        key: bytes | None = f"{tag}-key-{i:06d}".encode()
        if null_keys and i % 101 == 7:
            key = None
        value: bytes | None = f"{tag}-value-{i:06d}|".encode() + b"abcdefgh" * (i % 97)
        if binary:
            value += bytes(
                b for b in ((i * 31 + j) % 256 for j in range(i % 43)) if b not in delimiters
            )
        if null_values and i % 211 == 5:
            value = None
        record_headers: Headers = ()
        if headers:
            record_headers = (("index", str(i).encode()), ("tag", tag.encode()))
            if i % 7 == 0:
                record_headers += (("dup", b"first"), ("dup", b"second"), ("empty", b""))
        samples.append(
            Sample(
                partition=i % partitions,
                key=key,
                value=value,
                headers=record_headers,
                timestamp=start + i if timestamps else None,
            )
        )
    return samples


def by_partition(records: Iterable[Sample | Got]) -> dict[int, list]:
    grouped: dict[int, list] = {}
    for record in records:
        grouped.setdefault(record.partition, []).append(record)
    return grouped


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def mismatches(
    expected: Sequence[Sample],
    got: Sequence[Got],
    *,
    headers: bool = True,
    timestamps: bool = False,
    first_offsets: dict[int, int] | None = None,
    partitions: Iterable[int] | None = None,
) -> list[str]:
    """What differs between the samples and the records read, per partition (empty if none).

    ``got`` must be in the order the client delivered it; per partition it
    must be ``expected``'s records of that partition in produce order, at
    offsets ``first_offsets[p]`` (0 by default), ``+1``, ``+2``...
    """
    problems: list[str] = []
    want = by_partition(expected)
    have = by_partition(got)
    all_partitions = sorted(set(want) | set(have) | set(partitions or ()))
    for p in all_partitions:
        w: list[Sample] = want.get(p, [])
        h: list[Got] = have.get(p, [])
        start = (first_offsets or {}).get(p, 0)
        offsets = [g.offset for g in h]
        if offsets != list(range(start, start + len(h))):
            bad = next(
                (i for i, o in enumerate(offsets) if o != start + i),
                len(offsets),
            )
            problems.append(
                f"partition {p}: offsets not contiguous from {start}: at position {bad} "
                f"got {offsets[max(0, bad - 2) : bad + 3]}"
            )
        if len(w) != len(h):
            problems.append(f"partition {p}: expected {len(w)} records, read {len(h)}")
        for i, (s, g) in enumerate(zip(w, h, strict=False)):
            fields = []
            if s.key != g.key:
                fields.append(f"key {_short(g.key)} != {_short(s.key)}")
            if s.value != g.value:
                fields.append(f"value {_short(g.value)} != {_short(s.value)}")
            if headers and tuple(s.headers) != tuple(g.headers):
                fields.append(f"headers {_short(g.headers)} != {_short(s.headers)}")
            if timestamps and s.timestamp is not None and s.timestamp != g.timestamp:
                fields.append(f"timestamp {g.timestamp} != {s.timestamp}")
            if fields:
                problems.append(
                    f"partition {p} record {i} (offset {g.offset}): " + "; ".join(fields)
                )
                break  # the first difference per partition is enough
    return problems


def assert_same_records(
    expected: Sequence[Sample],
    got: Sequence[Got],
    *,
    headers: bool = True,
    timestamps: bool = False,
    first_offsets: dict[int, int] | None = None,
    what: str = "",
) -> None:
    problems = mismatches(
        expected, got, headers=headers, timestamps=timestamps, first_offsets=first_offsets
    )
    assert not problems, (what + ": " if what else "") + "\n".join(problems)


def assert_acknowledged_in_order(
    samples: Sequence[Sample], acks: Iterable[tuple[int, int]]
) -> None:
    """Per partition, the acknowledged (partition, offset) pairs are 0, 1, 2... in send order."""
    next_offset: dict[int, int] = {}
    for sample, (partition, offset) in zip(samples, acks, strict=True):
        assert partition == sample.partition
        expected = next_offset.get(partition, 0)
        assert offset == expected, (
            f"partition {partition}: acknowledged offset {offset}, expected {expected}"
        )
        next_offset[partition] = expected + 1


def first_offset_at_or_after(records: Sequence[Got], partition: int, timestamp: int) -> int | None:
    """The offset ListOffsets must give for ``timestamp``: the first record at or after it."""
    for record in records:
        if (
            record.partition == partition
            and record.timestamp is not None
            and record.timestamp >= timestamp
        ):
            return record.offset
    return None


# JSON transport for subprocess drivers (kafka-python 2): bytes as base64, None as null.


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def sample_to_json(sample: Sample) -> dict:
    return {
        "partition": sample.partition,
        "key": b64(sample.key),
        "value": b64(sample.value),
        "headers": [[k, b64(v)] for k, v in sample.headers],
        "timestamp": sample.timestamp,
    }


def sample_from_json(data: dict) -> Sample:
    return Sample(
        partition=data["partition"],
        key=unb64(data["key"]),
        value=unb64(data["value"]),
        headers=tuple((k, unb64(v)) for k, v in data["headers"]),
        timestamp=data["timestamp"],
    )


def got_to_json(got: Got) -> dict:
    return {
        "partition": got.partition,
        "offset": got.offset,
        "key": b64(got.key),
        "value": b64(got.value),
        "headers": [[k, b64(v)] for k, v in got.headers],
        "timestamp": got.timestamp,
    }


def got_from_json(data: dict) -> Got:
    return Got(
        partition=data["partition"],
        offset=data["offset"],
        key=unb64(data["key"]),
        value=unb64(data["value"]),
        headers=tuple((k, unb64(v)) for k, v in data["headers"]),
        timestamp=data["timestamp"],
    )


@dataclass
class Deadline:
    """A bound on a wait, so a silent broker fails a test instead of hanging it."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    @property
    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def check(self, waiting_for: str) -> float:
        left = self.left
        if left <= 0:
            raise AssertionError(f"timed out after {self.seconds} s waiting for {waiting_for}")
        return left
