"""Benchmark: what the check of a batch's records costs before it is stored.

For batches shaped as producers send them it prints the time per record and
per batch of :func:`check_batch` (``wirekafka.protocol.records.validate``),
next to CRC32C over the same bytes, which the broker computes anyway:

* records of one layout (the same key and value sizes, no headers), as
  rdkafka_performance and most benchmarks send, in batches of 9,000, 1,000,
  50 and 1, with timestamp deltas of one and of two bytes;
* 90 such records, whose offset deltas take a second byte from the 65th record
  on, and whose timestamp deltas also do from the 42nd (past 63 ms): batches
  as librdkafka sends to each of 1,000 partitions;
* 4,000 batches as librdkafka sends them over 1,000 partitions, one after
  another: 8 to 251 keyless records of 100 bytes, ~1 ms apart, few of a size
  and count seen lately (so mostly not checked as the runs kept for an
  earlier batch of that size and count);
* records whose value sizes vary, and records with headers, read one by one;
* compressed batches (the inflating included).

    python tools/bench_validate.py [--seconds S]
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

import crc32c

from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch, read_batch_header
from wirekafka.protocol.records.validate import check_batch

BASE_TIMESTAMP = 1_700_000_000_000


def batch(
    count: int,
    *,
    value_bytes: int = 100,
    vary: bool = False,
    headers: bool = False,
    timestamp_step_ms: float = 0.001,
    compression: CompressionType = CompressionType.NONE,
    seed: int = 0,
) -> bytes:
    rng = random.Random(count + seed)
    records = [
        Record(
            i,
            BASE_TIMESTAMP + int(i * timestamp_step_ms),
            None,
            rng.randbytes(value_bytes + (rng.randrange(50) if vary else 0)),
            [("trace", b"abc")] if headers else [],
        )
        for i in range(count)
    ]
    return encode_batch(records, compression=compression)


def partitions_1000() -> list[bytes]:
    """Batches as librdkafka sent to each of 1,000 partitions in bench_peers'
    partitions-1000 row (captured there: 9 to 251 records, 122 the median,
    0.85-1.8 ms apart; a batch's size and count came again a median of 2,800
    batches later). These 4,000 have 2,672 sizes and counts."""
    rng = random.Random(1000)
    return [
        batch(rng.randrange(8, 252), timestamp_step_ms=rng.uniform(0.85, 1.8), seed=seed)
        for seed in range(4000)
    ]


SHAPES = {
    "one layout, 9,000 records": batch(9000),
    "one layout, 1,000 records": batch(1000),
    "one layout, 50 records": batch(50),
    "one layout, 1 record": batch(1),
    "one layout, 2-byte timestamp deltas": batch(9000, timestamp_step_ms=1),
    "90 records, 64 + 26 (offset deltas widen)": batch(90),
    "90 records, 41 + 23 + 26 (both widen)": batch(90, timestamp_step_ms=1.6),
    "1,000 partitions, 4,000 batches": partitions_1000(),
    "varying value sizes, 5,000": batch(5000, vary=True),
    "headers, 5,000": batch(5000, headers=True),
    "one layout, lz4, 9,000": batch(9000, compression=CompressionType.LZ4),
    "one layout, gzip, 9,000": batch(9000, compression=CompressionType.GZIP),
}


def per_run_s(work, seconds: float) -> float:
    work()
    runs = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        work()
        runs += 1
    return elapsed / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    print(f"{'batch':<38} {'ns/record':>10} {'µs/batch':>9} {'CRC32C µs':>10}")
    for name, shape in SHAPES.items():
        batches = [shape] if isinstance(shape, bytes) else shape
        headers = [read_batch_header(data) for data in batches]
        turns = itertools.cycle(list(zip(batches, headers, strict=True)))

        def check(turns=turns) -> None:  # the next batch in turn
            data, header = next(turns)
            check_batch(data, header, keys_required=False, max_inflated_bytes=1 << 30)

        checked = per_run_s(check, args.seconds)
        crc = per_run_s(lambda turns=turns: crc32c.crc32c(next(turns)[0]), args.seconds / 4)
        records = sum(header.record_count for header in headers) / len(headers)
        print(
            f"{name:<38} {checked / records * 1e9:>10.0f} {checked * 1e6:>9.1f} {crc * 1e6:>10.1f}"
        )


if __name__ == "__main__":
    main()
