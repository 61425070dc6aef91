"""Benchmark: decode a 1 MiB Produce request and verify its batch's CRC.

The request carries one magic-2 record batch; the broker's hot path decodes
the request, walks the batch headers and checks CRC32C without decoding any
record. The figures are compared, in the same run, with the limit set by
CRC32C alone over the same bytes.

    python tools/bench_produce_decode.py [--size-bytes N] [--seconds S]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import crc32c

from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import crc_matches, encode_batch, iter_batches

PRODUCE_VERSION = 9


def build_request(size_bytes: int) -> bytes:
    value = b"v" * 1000
    count = max(1, size_bytes // (len(value) + 16))
    batch = encode_batch([Record(i, 1_700_000_000_000 + i, None, value) for i in range(count)])
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="bench", partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    header = RequestHeader(ApiKey.PRODUCE, PRODUCE_VERSION, 1, "bench")
    return encode_frame(rpc.encode_request(header, request))


def decode_and_verify(stream: bytes) -> int:
    decoder = FrameDecoder()
    decoder.receive_data(stream)
    frame = decoder.next_frame()
    assert frame is not None
    request = rpc.decode_request(frame)
    batches = 0
    for topic in request.body.topic_data:
        for partition in topic.partition_data:
            for position, header in iter_batches(partition.records):
                if not crc_matches(partition.records, position, header):
                    raise AssertionError("CRC mismatch")
                batches += 1
    return batches


def rate(label: str, work: Callable[[], object], size_bytes: int, seconds: float) -> float:
    work()  # warm up
    runs = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        work()
        runs += 1
    mb_per_s = runs * size_bytes / elapsed / 1e6
    print(f"{label:<34} {mb_per_s:>9.0f} MB/s  ({runs} runs, {elapsed * 1e6 / runs:.0f} us each)")
    return mb_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-bytes", type=int, default=1 << 20)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()

    stream = build_request(args.size_bytes)
    size = len(stream)
    print(f"Produce v{PRODUCE_VERSION} request: {size} bytes, one record batch")
    limit = rate("crc32c alone (limit)", lambda: crc32c.crc32c(stream), size, args.seconds)
    copy = rate("one copy of the request", lambda: bytes(bytearray(stream)), size, args.seconds)
    ours = rate(
        "decode + verify CRC (wirekafka)", lambda: decode_and_verify(stream), size, args.seconds
    )
    print(f"decode+verify: {ours / 1000:.2f} GB/s, {ours / limit:.0%} of CRC32C alone, "
          f"{ours / copy:.0%} of one copy")  # fmt: skip


if __name__ == "__main__":
    main()
