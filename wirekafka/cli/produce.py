"""``wirekafka produce --topic T [--file F]``: one record per line of the file or
of stdin, as Kafka's console producer sends them.

Every delivery is waited for (each within ``message.timeout.ms``, by default
``--timeout``). The summary goes to stderr (records sent, failed); ``--json``
prints it on stdout too: ``{"topic", "records_sent", "records_failed",
"errors": {ERROR_NAME: count}}``. Exit 1 when a delivery failed, naming the
first error's code; a topic the broker does not have (auto-create off) is
UNKNOWN_TOPIC_OR_PART before anything is sent. Keyed records go to the
partition Java clients choose (murmur2) unless ``--partition`` is given.

``--property`` takes Kafka's console producer reader properties
(``parse.key``, ``key.separator``, ``parse.headers``, ``headers.delimiter``,
``headers.separator``, ``headers.key.separator``, ``ignore.error``,
``null.marker``; see :mod:`wirekafka.cli.record_lines`) and librdkafka's
producer settings (any other key).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from confluent_kafka import KafkaError, Message, Producer

from wirekafka.cli.client_options import add_client_options
from wirekafka.cli.errors import EXIT_USAGE, CommandError, from_kafka_error
from wirekafka.cli.kafka_clients import existing_topic, kafka_config, producer, timeout_ms
from wirekafka.cli.key_values import key_values, split_key_value
from wirekafka.cli.output import print_json
from wirekafka.cli.record_lines import (
    READER_PROPERTIES,
    Header,
    LineError,
    LineFormat,
    LineFormatError,
    numbered_lines,
    parse_line,
)

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("0", "1", "all")
QUEUE_FULL_WAIT_S = 0.1


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="send lines of a file or of stdin as records",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--topic", required=True, metavar="TOPIC")
    parser.add_argument(
        "--file", type=Path, metavar="FILE", help="read the records from FILE (default: stdin)"
    )
    parser.add_argument(
        "--key-separator",
        metavar="SEP",
        help="each line is KEY SEP VALUE, split at the first SEP; a line without SEP is an "
        "error naming its number (records before it are sent). Without it, lines are values "
        "and records have no key",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a header added to every record (before a line's own); repeatable (in order)",
    )
    parser.add_argument(
        "--partition", type=int, metavar="P", help="send every record to partition P"
    )
    parser.add_argument(
        "--compression",
        choices=COMPRESSIONS,
        help="compression.type of the batches (default: none)",
    )
    parser.add_argument("--acks", choices=ACKS, help="acks (default: all)")
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a line reader property as Kafka's console producer takes it (parse.key, "
        "key.separator, parse.headers, headers.delimiter, headers.separator, "
        "headers.key.separator, ignore.error, null.marker) or a librdkafka producer "
        "setting (linger.ms=5, ...); repeatable",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    add_client_options(parser)
    parser.set_defaults(run=run)


@dataclass
class Deliveries:
    """What the delivery reports said."""

    sent: int = 0
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    first_error: KafkaError | None = None

    def report(self, error: KafkaError | None, _message: Message) -> None:
        if error is None:
            self.sent += 1
            return
        self.failed += 1
        self.errors[error.name()] += 1
        if self.first_error is None:
            self.first_error = error


def run(args: argparse.Namespace) -> int:
    headers: list[Header] = []
    for header in args.header:
        key, value = split_key_value(header, "--header")
        headers.append((key, value.encode()))
    properties = key_values(args.property, "--property")
    line_format = _line_format(args, properties)
    settings: dict[str, object] = {
        key: value for key, value in properties.items() if key not in READER_PROPERTIES
    }
    if args.acks is not None:
        settings["acks"] = args.acks
    if args.compression is not None:
        settings["compression.type"] = args.compression
    config = kafka_config(
        args,
        settings,
        defaults={"message.timeout.ms": timeout_ms(args), "partitioner": "murmur2_random"},
    )
    source = _open(args.file)
    client = producer(config)
    try:
        metadata = existing_topic(client, args, args.topic, doing="produce to")
        if args.partition is not None and args.partition not in metadata.partitions:
            error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            raise from_kafka_error(
                error,
                broker=args.bootstrap_server,
                topic=args.topic,
                doing=f"produce to partition {args.partition} of",
            )
        deliveries = Deliveries()
        line_error = _send_lines(client, args, source, line_format, headers, deliveries)
        _wait_for_deliveries(client)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    _summarize(args, deliveries)
    if line_error is not None:
        raise CommandError(f"{_where(args)}: {line_error}", EXIT_USAGE)
    if deliveries.first_error is not None:
        raise from_kafka_error(
            deliveries.first_error,
            broker=args.bootstrap_server,
            topic=args.topic,
            doing=f"produce {deliveries.failed} of {deliveries.sent + deliveries.failed} "
            "records to",
        )
    return 0


def _line_format(args: argparse.Namespace, properties: dict[str, str]) -> LineFormat:
    """The line format: the reader properties, with ``--key-separator SEP`` for
    ``parse.key=true`` and ``key.separator=SEP``."""
    reader = {key: value for key, value in properties.items() if key in READER_PROPERTIES}
    if args.key_separator is not None:
        if "parse.key" in reader or "key.separator" in reader:
            raise CommandError(
                "--key-separator and --property parse.key/key.separator: give one", EXIT_USAGE
            )
        if not args.key_separator:
            raise CommandError("--key-separator must not be empty", EXIT_USAGE)
        reader |= {"parse.key": "true", "key.separator": args.key_separator}
    try:
        return LineFormat.from_properties(reader)
    except LineFormatError as exc:
        raise CommandError(f"--property: {exc}", EXIT_USAGE) from None


def _open(path: Path | None) -> BinaryIO:
    if path is None:
        return sys.stdin.buffer
    try:
        return path.open("rb")
    except OSError as exc:
        raise CommandError(f"--file: {exc}", EXIT_USAGE) from exc


def _where(args: argparse.Namespace) -> str:
    return str(args.file) if args.file is not None else "stdin"


def _send_lines(
    client: Producer,
    args: argparse.Namespace,
    source: BinaryIO,
    line_format: LineFormat,
    headers: list[Header],
    deliveries: Deliveries,
) -> LineError | None:
    """Send each line; stop at the first line that is no record (returned), or at Ctrl-C."""
    extra = {} if args.partition is None else {"partition": args.partition}
    try:
        for number, line in numbered_lines(source):
            record = parse_line(line, number, line_format)
            record_headers: list[tuple[str, str | bytes | None]] = [*headers, *record.headers]
            while True:
                try:
                    client.produce(
                        args.topic,
                        value=record.value,
                        key=record.key,
                        headers=record_headers or None,
                        on_delivery=deliveries.report,
                        **extra,
                    )
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    client.poll(QUEUE_FULL_WAIT_S)
            client.poll(0)
    except LineError as exc:
        return exc
    except KeyboardInterrupt:  # the end of the input: what was read is sent
        pass
    return None


def _wait_for_deliveries(client: Producer) -> None:
    """Wait for every delivery report; a Ctrl-C meanwhile fails the records not
    yet delivered (``_PURGE_QUEUE``, ``_PURGE_INFLIGHT``)."""
    try:
        client.flush()
    except KeyboardInterrupt:
        client.purge()
        client.flush(0)


def _summarize(args: argparse.Namespace, deliveries: Deliveries) -> None:
    print(
        f"wirekafka produce: {deliveries.sent} records sent to topic {args.topic!r}, "
        f"{deliveries.failed} failed",
        file=sys.stderr,
    )
    if args.json:
        print_json(
            {
                "topic": args.topic,
                "records_sent": deliveries.sent,
                "records_failed": deliveries.failed,
                "errors": dict(deliveries.errors),
            }
        )
