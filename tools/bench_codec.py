"""Micro-benchmark of the protocol codec: µs per decode or encode of a whole message.

Cases (each through :mod:`wirekafka.protocol.rpc`, header included):

* decode of a Produce request, v3 and v9, carrying one record batch of one
  200-byte record, as librdkafka sends it (client id, acks=1, no
  transactional id);
* encode of its ProduceResponse (``rpc.encode_response_parts``);
* decode of a Metadata v12 response and encode of a Metadata v12 response,
  each with 3 brokers and 10 topics of 3 partitions;
* the codec alone (``codec.decode_struct``/``encode_struct``, no header):
  the Produce v9 request's body and its response's.

It uses only the codec's public functions, so it runs against any source
tree; ``--baseline DIR`` also times the tree at DIR (in a subprocess) and
prints both side by side::

    python tools/bench_codec.py [--seconds S] [--baseline /tmp/codec-base]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.codec import decode_struct, encode_struct
from wirekafka.protocol.headers import RequestHeader, read_request_header
from wirekafka.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from wirekafka.protocol.primitives import Reader, Writer
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch

ROOT = Path(__file__).resolve().parent.parent


def produce_request(version: int) -> bytes:
    batch = encode_batch([Record(0, 1_700_000_000_000, None, b"v" * 200)])
    body = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="test", partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    return rpc.encode_request(RequestHeader(ApiKey.PRODUCE, version, 7, "rdkafka"), body)


def produce_response() -> ProduceResponse:
    partition = PartitionProduceResponse(index=0, error_code=0, base_offset=12345)
    return ProduceResponse(responses=[TopicProduceResponse(name="test", partition_responses=[partition])])  # fmt: skip


def metadata_response() -> MetadataResponse:
    brokers = [MetadataResponseBroker(node_id=n, host="localhost", port=9092 + n) for n in range(3)]
    topics = [
        MetadataResponseTopic(
            name=f"topic-{t}",
            topic_id=uuid.UUID(int=t + 1),
            partitions=[
                MetadataResponsePartition(
                    partition_index=p,
                    leader_id=p % 3,
                    leader_epoch=0,
                    replica_nodes=[0, 1, 2],
                    isr_nodes=[0, 1, 2],
                )
                for p in range(3)
            ],
        )
        for t in range(10)
    ]
    return MetadataResponse(brokers=brokers, cluster_id="cluster", controller_id=0, topics=topics)


def cases() -> dict[str, Callable[[], object]]:
    v3, v9 = produce_request(3), produce_request(9)
    produced = produce_response()
    metadata = metadata_response()
    metadata_frame = rpc.encode_response(ApiKey.METADATA, 12, 1, metadata)
    body_reader = Reader(v9)
    read_request_header(body_reader, 2)
    body_at = body_reader.pos

    def decode_body() -> object:
        return decode_struct(ProduceRequest, 9, True, Reader(v9, body_at))

    return {
        "decode Produce v3 request": lambda: rpc.decode_request(v3),
        "decode Produce v9 request": lambda: rpc.decode_request(v9),
        "encode Produce v3 response": lambda: rpc.encode_response_parts(0, 3, 7, produced),
        "encode Produce v9 response": lambda: rpc.encode_response_parts(0, 9, 7, produced),
        "decode Metadata v12 response": lambda: rpc.decode_response(3, 12, metadata_frame),
        "encode Metadata v12 response": lambda: rpc.encode_response_parts(3, 12, 1, metadata),
        "codec: decode Produce v9 body": decode_body,
        "codec: encode Produce v9 response body": lambda: encode_struct(
            produced, 9, True, Writer()
        ),
    }


def microseconds(work: Callable[[], object], seconds: float) -> float:
    """The best of five timings of ``work``, in µs per call."""
    calls = 1
    while True:  # calls per timing: enough for about a fifth of ``seconds``
        started = time.perf_counter()
        for _ in range(calls):
            work()
        if (elapsed := time.perf_counter() - started) > seconds / 20:
            break
        calls *= 2
    calls = max(1, int(calls * seconds / 5 / elapsed))
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            work()
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def measure(seconds: float) -> dict[str, float]:
    return {name: microseconds(work, seconds) for name, work in cases().items()}


def measure_tree(tree: str, seconds: float) -> dict[str, float]:
    """:func:`measure` against the source tree at ``tree``, in a subprocess."""
    env = {**os.environ, "PYTHONPATH": tree}
    command = [sys.executable, str(Path(__file__).resolve()), "--seconds", str(seconds), "--json"]
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(output)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per case")
    parser.add_argument("--baseline", help="another source tree to time, e.g. a worktree of main")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.seconds)))
        return
    ours = measure_tree(str(ROOT), args.seconds)
    if not args.baseline:
        for name, value in ours.items():
            print(f"{name:<40} {value:8.2f} µs")
        return
    base = measure_tree(args.baseline, args.seconds)
    print(f"| case | {args.baseline} µs | {ROOT} µs | speed-up |")
    print("|---|---:|---:|---:|")
    for name, value in ours.items():
        print(f"| {name} | {base[name]:.2f} | {value:.2f} | {base[name] / value:.1f}x |")


if __name__ == "__main__":
    main()
