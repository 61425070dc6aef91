"""Micro-benchmark of the request path in process: µs per one-record Produce.

A Produce v9 (acks=1, one batch of one 200-byte record, as librdkafka sends
it) goes through ``wirekafka.server.connection._respond``: the request
decoded, handled by the real handler against a real log in a temporary dir,
the response encoded; no socket. With ``--pipelined N``, N Produce v7
requests of one batch of 50 records of 200 B each (librdkafka's batch-50 row of
``tools/bench_peers.py``) arrive together in a frame decoder and go through the
connection's path for pipelined produce requests (taken together, handled
together, each answered); µs per request. It prints the best of five timings
in µs per request. ``--baseline DIR`` also times the source tree at DIR (for
instance ``git archive REF | tar -x -C DIR``), each tree in subprocesses
taking turns, ``--reps`` times, and prints the medians side by side::

    python tools/bench_respond.py [--seconds S] [--reps R] [--pipelined N] [--baseline /tmp/base]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent


class _Host:
    """What ``_respond`` reads of the server: the broker's context."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.stopping = False


def measure(seconds: float, pipelined: int = 0) -> float:
    from tests.handlers.support import TestBroker, make_batch, produce_request
    from wirekafka.protocol.api_table import ApiKey
    from wirekafka.protocol.headers import peek_request_prefix
    from wirekafka.server import connection
    from wirekafka.server.connection import _respond

    with tempfile.TemporaryDirectory(prefix="wirekafka-bench-respond-") as directory:
        broker = TestBroker(Path(directory))
        broker.create_topic("bench")
        host = _Host(broker.ctx)
        # who sent it: a Session since listeners have security (a string in older trees)
        session_class = getattr(connection, "Session", None)
        sender = session_class("/127.0.0.1", "PLAINTEXT") if session_class else "/127.0.0.1"
        if pipelined:
            group = _pipelined_group(broker, host, sender, pipelined)

            async def timed(calls: int) -> float:
                started = time.perf_counter()
                for _ in range(calls):
                    await group()
                return (time.perf_counter() - started) / pipelined

        else:
            request = produce_request("bench", make_batch([b"v" * 200]), acks=1)
            frame = broker.encode(ApiKey.PRODUCE, 9, request)
            prefix = peek_request_prefix(bytearray(frame))

            async def timed(calls: int) -> float:
                started = time.perf_counter()
                for _ in range(calls):
                    await _respond(host, bytearray(frame), prefix, sender)
                return time.perf_counter() - started

        async def best() -> float:
            calls = 1
            while (elapsed := await timed(calls)) < seconds / 20:
                calls *= 2
            calls = max(1, int(calls * seconds / 5 / elapsed))
            return min([await timed(calls) for _ in range(5)]) / calls * 1e6

        try:
            result: float = trio.run(best)
        finally:
            broker.close()
        return result


def _pipelined_group(broker: Any, host: _Host, sender: Any, count: int) -> Any:
    """A coroutine function: ``count`` pipelined batch-50 Produce v7 requests, whole in a
    frame decoder, taken and answered as the connection takes and answers them."""
    from tests.handlers.support import make_batch, produce_request
    from wirekafka.protocol.api_table import ApiKey
    from wirekafka.protocol.framing import FrameDecoder
    from wirekafka.protocol.rpc import decode_request
    from wirekafka.server import connection

    batch = make_batch([b"v" * 200] * 50)
    frame = broker.encode(ApiKey.PRODUCE, 7, produce_request("bench", batch, acks=1))
    stream = (len(frame).to_bytes(4, "big") + frame) * count
    read_simple = getattr(connection, "_produce_request", None)  # from 14848c6

    async def group() -> None:
        decoder = FrameDecoder()
        decoder.receive_data(stream)
        first_frame = decoder.next_frame()
        if read_simple is not None:
            first = read_simple(first_frame, sender, True)
            taken = connection._pipelined_produces(decoder, first, sender, None, True)
        else:
            first = decode_request(first_frame, "/127.0.0.1")
            taken = connection._pipelined_produces(decoder, first, sender)
        assert len(taken) == count, "every request taken together"
        await connection._respond_produces(host, taken)

    return group


def measure_tree(tree: str, seconds: float, pipelined: int = 0) -> float:
    """:func:`measure` against the source tree at ``tree``, in a subprocess."""
    env = {**os.environ, "PYTHONPATH": tree}
    command = [
        sys.executable, str(Path(__file__).resolve()), "--seconds", str(seconds), "--json",
        "--pipelined", str(pipelined),
    ]  # fmt: skip
    output = subprocess.run(
        command, env=env, check=True, capture_output=True, text=True, cwd=tree
    ).stdout
    return float(json.loads(output))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--reps", type=int, default=5, help="measurements per tree")
    parser.add_argument("--baseline", help="another source tree to time")
    parser.add_argument(
        "--pipelined",
        type=int,
        default=0,
        help="time N pipelined batch-50 requests handled together instead",
    )
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.seconds, args.pipelined)))
        return
    trees = [str(ROOT)] + ([args.baseline] if args.baseline else [])
    results: dict[str, list[float]] = {tree: [] for tree in trees}
    for _ in range(args.reps):
        for tree in trees:
            results[tree].append(measure_tree(tree, args.seconds, args.pipelined))
    for tree, values in results.items():
        runs = " ".join(f"{v:.2f}" for v in values)
        print(f"{tree}: median {statistics.median(values):.2f} µs per Produce ({runs})")
    if args.baseline:
        difference = statistics.median(results[str(ROOT)]) - statistics.median(
            results[args.baseline]
        )
        print(f"difference: {difference:+.2f} µs per Produce")


if __name__ == "__main__":
    main()
