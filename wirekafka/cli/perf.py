"""``wirekafka perf produce|consume``: load tests against any Kafka-protocol broker,
as Kafka's ``kafka-producer-perf-test`` and ``kafka-consumer-perf-test`` run them.

``perf produce`` sends ``--num-records`` records of ``--record-size`` bytes (at
most ``--throughput`` a second) and reports the rate and each record's latency
from ``produce()`` to its delivery report; ``perf consume`` reads ``--messages``
records and reports the rate, the time to join the group and to the first
record. Both draw a progress line on a terminal and print a summary at the
end, or one JSON document with ``--json``.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from wirekafka.cli import perf_consume, perf_produce
from wirekafka.cli.client_options import add_client_options
from wirekafka.cli.output import add_output_options

COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "perf",
        help="load tests: produce or consume many records and report rates and latencies",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    commands = parser.add_subparsers(dest="perf_command", required=True, metavar="COMMAND")
    _add_produce(commands)
    _add_consume(commands)


def _add_produce(commands: Any) -> None:
    parser = commands.add_parser(
        "produce",
        help="send records as fast as allowed; report throughput and latency percentiles",
        description="Send --num-records records of --record-size bytes to --topic and report "
        "records/sec, MB/sec (MB = 1024*1024 bytes) and the latency from produce() to each "
        "delivery report: average, maximum, 50th, 95th, 99th and 99.9th percentiles. "
        "Exits 1 if any record failed, naming the error codes.",
    )
    parser.add_argument("--topic", required=True, help="the topic to produce to")
    parser.add_argument(
        "--num-records", type=_positive_int, required=True, metavar="N", help="records to send"
    )
    parser.add_argument(
        "--record-size",
        type=_non_negative_int,
        required=True,
        metavar="BYTES",
        help="each record's value size (random upper-case letters, made once)",
    )
    parser.add_argument(
        "--throughput",
        type=_throughput,
        default=-1.0,
        metavar="MSG_PER_S",
        help="send at most this many records a second (-1, the default: no limit)",
    )
    parser.add_argument(
        "--acks",
        choices=("0", "1", "all", "-1"),
        help="the acknowledgements to wait for (default: the client's, all)",
    )
    parser.add_argument(
        "--compression",
        choices=COMPRESSION_TYPES,
        help="compression.type of the batches (default: the client's, none)",
    )
    parser.add_argument(
        "--producer-property",
        "--producer-props",
        dest="producer_properties",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="a producer setting (librdkafka's keys: linger.ms=5 batch.size=...); repeatable",
    )
    add_client_options(parser)
    add_output_options(parser)
    parser.set_defaults(run=perf_produce.run)


def _add_consume(commands: Any) -> None:
    parser = commands.add_parser(
        "consume",
        help="read records as fast as they come; report throughput",
        description="Read --messages records of --topic in a consumer group and report the "
        "data consumed in MB (1024*1024 bytes, keys and values), MB/sec, records/sec, the time "
        "to join the group (rebalance), the fetch time and the time to the first record. "
        "Fails (exit 1) when no record comes for --timeout seconds.",
    )
    parser.add_argument("--topic", required=True, help="the topic to consume")
    parser.add_argument(
        "--messages", type=_positive_int, required=True, metavar="N", help="records to read"
    )
    parser.add_argument(
        "--group",
        default=f"perf-consumer-{random.randrange(100_000)}",
        help="the consumer group (default: perf-consumer-<random>)",
    )
    parser.add_argument(
        "--from",
        dest="from_",
        choices=("earliest", "latest"),
        default="earliest",
        help="where to start when the group has no committed offset (default earliest)",
    )
    parser.add_argument(
        "--consumer-property",
        "--consumer-props",
        dest="consumer_properties",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="a consumer setting (librdkafka's keys: fetch.max.bytes=...); repeatable",
    )
    add_client_options(parser)
    add_output_options(parser)
    parser.set_defaults(run=perf_consume.run)


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def _throughput(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != -1 and not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a rate above 0, or -1 for no limit")
    return value
