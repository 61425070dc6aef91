"""``wirekafka consume --topic T``: print a topic's records, as Kafka's console
consumer does.

Without ``--group`` the partitions (``--partition``, default all) are assigned
directly: no group is joined, nothing is committed, and ``--from`` (default
``latest``) says where each starts. With ``--group`` the consumer joins the
group and commits the offsets of the records it printed when it ends; where
the group has a committed offset it starts there, elsewhere at ``--from``
``earliest`` or ``latest`` (default ``latest``); ``--from OFFSET`` or
``@TIMESTAMP`` overrides the committed offsets of the partitions it is assigned.

It runs until ``--max-messages`` records were printed, ``--idle-timeout``
seconds passed without one (counted from the start; with a group, from its
assignment, and joining may take ``--timeout`` more), or Ctrl-C (or SIGTERM):
then the consumer is closed and it exits 0. A summary goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import BinaryIO

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from wirekafka.cli.client_options import add_client_options
from wirekafka.cli.errors import EXIT_USAGE, CommandError, from_kafka_error
from wirekafka.cli.kafka_clients import consumer, existing_topic, kafka_config, kafka_error
from wirekafka.cli.record_output import json_line, raw_line, record_json
from wirekafka.cli.start_offsets import StartFrom, StartKind, start_from_argument

BATCH = 500  # records taken from librdkafka at once
POLL_S = 0.2  # how long one poll waits; Ctrl-C and --idle-timeout are seen between polls
ASSIGN_ONLY_GROUP = "wirekafka-consume"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="print a topic's records",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--topic", required=True, metavar="TOPIC")
    parser.add_argument(
        "--from",
        dest="start",
        type=start_from_argument,
        metavar="earliest|latest|OFFSET|@TIMESTAMP",
        help="where to start: TIMESTAMP is ms since the epoch or ISO-8601 (UTC without a "
        "zone) and starts each partition at its first record at or after it (default: latest)",
    )
    parser.add_argument(
        "--partition",
        type=int,
        action="append",
        metavar="P",
        help="read partition P (repeatable; default: all); not with --group",
    )
    parser.add_argument("--group", metavar="G", help="join group G and commit its offsets")
    parser.add_argument(
        "--max-messages", type=int, metavar="N", help="exit after printing N records"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        metavar="SECONDS",
        help="exit after SECONDS without a record (default: run until interrupted)",
    )
    parser.add_argument(
        "--format",
        choices=("raw", "json"),
        default="raw",
        help="raw: the value per line; json: one object per line with topic, partition, "
        "offset, timestamp, timestamp_type, key, value, headers (bytes that are not UTF-8 "
        'as base64, with key_encoding/value_encoding "base64")',
    )
    parser.add_argument(
        "--print-key", action="store_true", help="raw: print KEY SEP VALUE per line"
    )
    parser.add_argument(
        "--key-separator",
        default="\t",
        metavar="SEP",
        help="raw: what separates key and value with --print-key (default: a tab)",
    )
    add_client_options(parser)
    parser.set_defaults(run=run)


@dataclass
class Progress:
    """Records printed, when the last came, and the partitions already started."""

    printed: int = 0
    last_activity: float = field(default_factory=time.monotonic)
    started: set[int] = field(default_factory=set)
    joining: bool = False  # a group member not yet assigned partitions
    stopping: bool = False  # Ctrl-C or SIGTERM came while records were printed

    def idle_limit(self, args: argparse.Namespace) -> float | None:
        """How long without a record ends the run; joining the group may take
        ``--timeout`` more."""
        if args.idle_timeout is None:
            return None
        return float(args.idle_timeout) + (float(args.timeout) if self.joining else 0.0)


def run(args: argparse.Namespace) -> int:
    if args.group is not None and args.partition:
        raise CommandError("--partition and --group exclude each other", EXIT_USAGE)
    if args.max_messages is not None and args.max_messages < 1:
        raise CommandError("--max-messages must be at least 1", EXIT_USAGE)
    start: StartFrom = args.start or StartFrom(StartKind.LATEST)
    settings: dict[str, object] = {
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest" if start.kind is StartKind.EARLIEST else "latest",
    }
    if args.group is not None:
        settings["group.id"] = args.group
        settings["enable.auto.commit"] = True
    else:  # librdkafka wants a group id; assigned partitions never use it
        settings["group.id"] = ASSIGN_ONLY_GROUP
        settings["enable.auto.commit"] = False
    client = consumer(kafka_config(args, settings))
    progress = Progress()
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        metadata = existing_topic(client, args, args.topic, doing="consume from")
        partitions = args.partition or sorted(metadata.partitions)
        for partition in partitions:
            if partition not in metadata.partitions:
                raise from_kafka_error(
                    KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART),
                    broker=args.bootstrap_server,
                    topic=args.topic,
                    doing=f"consume from partition {partition} of",
                )
        if args.group is None:
            offsets = _start_offsets(client, args, start, partitions)
            client.assign([TopicPartition(args.topic, p, offsets[p]) for p in partitions])
        else:
            _subscribe(client, args, start, partitions, progress)
        _stop_on_signals(progress)
        _print_records(client, args, progress)
    except KeyboardInterrupt:
        pass
    finally:
        _close(client, args)
    print(f"wirekafka consume: {progress.printed} records", file=sys.stderr)
    return 0


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM ends the setup as Ctrl-C does."""
    raise KeyboardInterrupt


def _stop_on_signals(progress: Progress) -> None:
    """From now on Ctrl-C and SIGTERM stop the loop between two records, so that a
    record printed is always counted and its offset stored."""

    def stop(_signum: int, _frame: FrameType | None) -> None:
        progress.stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _start_offsets(
    client: Consumer, args: argparse.Namespace, start: StartFrom, partitions: list[int]
) -> dict[int, int]:
    """Each partition's first offset to read (librdkafka's logical offsets for
    earliest and latest)."""
    if start.kind is StartKind.EARLIEST:
        return dict.fromkeys(partitions, OFFSET_BEGINNING)
    if start.kind is StartKind.LATEST:
        return dict.fromkeys(partitions, OFFSET_END)
    if start.kind is StartKind.OFFSET:
        return dict.fromkeys(partitions, start.value)
    wanted = [TopicPartition(args.topic, p, start.value) for p in partitions]
    try:
        found = client.offsets_for_times(wanted, timeout=args.timeout)
    except KafkaException as exc:
        raise from_kafka_error(
            kafka_error(exc),
            broker=args.bootstrap_server,
            topic=args.topic,
            doing="find offsets by timestamp in",
        ) from exc
    offsets = {}
    for tp in found:
        if tp.error is not None:
            raise from_kafka_error(
                tp.error,
                broker=args.bootstrap_server,
                topic=args.topic,
                doing=f"find offsets by timestamp in partition {tp.partition} of",
            )
        # -1: no record at or after the timestamp; start at the end
        offsets[tp.partition] = tp.offset if tp.offset >= 0 else OFFSET_END
    return offsets


def _subscribe(
    client: Consumer,
    args: argparse.Namespace,
    start: StartFrom,
    partitions: list[int],
    progress: Progress,
) -> None:
    """Join the group; with an offset or timestamp to start from, each partition
    starts there the first time it is assigned."""
    overrides: dict[int, int] = {}
    if start.kind in (StartKind.OFFSET, StartKind.TIMESTAMP):
        overrides = _start_offsets(client, args, start, partitions)

    def on_assign(consumer: Consumer, assigned: list[TopicPartition]) -> None:
        for tp in assigned:
            if tp.partition in overrides and tp.partition not in progress.started:
                tp.offset = overrides[tp.partition]
            progress.started.add(tp.partition)
        consumer.assign(assigned)
        progress.joining = False
        progress.last_activity = time.monotonic()

    progress.joining = True
    client.subscribe([args.topic], on_assign=on_assign)


def _print_records(client: Consumer, args: argparse.Namespace, progress: Progress) -> None:
    out = sys.stdout.buffer
    separator = args.key_separator.encode()
    while not progress.stopping and (
        args.max_messages is None or progress.printed < args.max_messages
    ):
        wanted = BATCH if args.max_messages is None else args.max_messages - progress.printed
        messages = client.consume(min(BATCH, wanted), timeout=POLL_S)
        if not messages:
            limit = progress.idle_limit(args)
            if limit is not None and time.monotonic() - progress.last_activity >= limit:
                return
            continue
        for message in messages:
            if progress.stopping:
                break
            error = message.error()
            if error is not None:
                raise from_kafka_error(
                    error, broker=args.bootstrap_server, topic=args.topic, doing="consume from"
                )
            if not _write(out, _render(message, args, separator)):
                return
            progress.printed += 1
            if args.group is not None:
                client.store_offsets(message=message)
        if not _flush(out):
            return
        progress.last_activity = time.monotonic()


def _render(message: Message, args: argparse.Namespace, separator: bytes) -> bytes:
    if args.format == "raw":
        return raw_line(
            message.key(), message.value(), print_key=args.print_key, separator=separator
        )
    timestamp_type, timestamp = message.timestamp()
    return json_line(
        record_json(
            topic=message.topic() or args.topic,
            partition=message.partition() or 0,
            offset=message.offset() or 0,
            timestamp_type=timestamp_type,
            timestamp=timestamp,
            key=message.key(),
            value=message.value(),
            headers=_headers(message),
        )
    )


def _headers(message: Message) -> list[tuple[str, bytes | None]]:
    headers = message.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in pairs]


def _write(out: BinaryIO, line: bytes) -> bool:
    """Write ``line``; False when stdout's reader is gone (``| head``)."""
    try:
        out.write(line)
    except BrokenPipeError:
        _drop_stdout()
        return False
    return True


def _flush(out: BinaryIO) -> bool:
    try:
        out.flush()
    except BrokenPipeError:
        _drop_stdout()
        return False
    return True


def _drop_stdout() -> None:
    """Point stdout at /dev/null so that flushing it at exit does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _close(client: Consumer, args: argparse.Namespace) -> None:
    """Commit what was printed (with a group), then leave the group and close."""
    try:
        if args.group is not None:
            try:
                client.commit(asynchronous=False)
            except KafkaException as exc:
                if kafka_error(exc).code() != KafkaError._NO_OFFSET:
                    raise from_kafka_error(
                        kafka_error(exc),
                        broker=args.bootstrap_server,
                        topic=args.topic,
                        doing=f"commit offsets of group {args.group!r} for",
                    ) from exc
    finally:
        client.close()
