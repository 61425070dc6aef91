"""``wirekafka perf consume``: read N records in a consumer group and measure.

The clock starts before the subscription, as in Kafka's tool: the rebalance
time is from there to the first assignment, the fetch time is the rest, and the
time to the first record is reported too. Records are taken in batches
(``consume()``); the only per-record work is an error check and adding the
key's and value's sizes. No record for ``--timeout`` seconds ends the run with
an error.
"""

from __future__ import annotations

import argparse
import datetime
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition

from wirekafka.cli import kafka_clients
from wirekafka.cli.client_options import client_config
from wirekafka.cli.errors import (
    EXIT_OK,
    EXIT_UNREACHABLE,
    CommandError,
    from_kafka_error,
    unreachable,
)
from wirekafka.cli.key_values import key_values
from wirekafka.cli.output import print_json, stdout_console
from wirekafka.cli.perf_common import (
    BYTES_PER_MB,
    ProgressLine,
    per_second,
    progress_console,
)

BATCH_RECORDS = 1000  # the most records one consume() call returns
CONSUME_WAIT_S = 0.1  # the longest one consume() call waits

# Kafka's tool's column names, in its order, then the time to the first record
TEXT_COLUMNS = (
    "start.time",
    "end.time",
    "data.consumed.in.MB",
    "MB.sec",
    "data.consumed.in.nMsg",
    "nMsg.sec",
    "rebalance.time.ms",
    "fetch.time.ms",
    "fetch.MB.sec",
    "fetch.nMsg.sec",
    "first.record.time.ms",
)


@dataclass(frozen=True, slots=True)
class _Summary:
    start_time: datetime.datetime
    end_time: datetime.datetime
    records: int
    bytes: int
    elapsed_s: float
    rebalance_s: float
    first_record_s: float

    @property
    def mb(self) -> float:
        return self.bytes / BYTES_PER_MB

    @property
    def fetch_s(self) -> float:
        return max(self.elapsed_s - self.rebalance_s, 0.0)

    def to_json(self, topic: str, group: str) -> dict[str, object]:
        return {
            "topic": topic,
            "group": group,
            "start_time": self.start_time.isoformat(timespec="milliseconds"),
            "end_time": self.end_time.isoformat(timespec="milliseconds"),
            "records_consumed": self.records,
            "bytes_consumed": self.bytes,
            "data_consumed_mb": round(self.mb, 6),
            "mb_per_s": round(per_second(self.mb, self.elapsed_s), 6),
            "records_per_s": round(per_second(self.records, self.elapsed_s), 3),
            "rebalance_time_ms": round(self.rebalance_s * 1000.0, 3),
            "fetch_time_ms": round(self.fetch_s * 1000.0, 3),
            "fetch_mb_per_s": round(per_second(self.mb, self.fetch_s), 6),
            "fetch_records_per_s": round(per_second(self.records, self.fetch_s), 3),
            "first_record_time_ms": round(self.first_record_s * 1000.0, 3),
        }

    def text(self) -> str:
        """Kafka's tool's two lines: the column names, then the figures."""
        values = (
            _kafka_time(self.start_time),
            _kafka_time(self.end_time),
            f"{self.mb:.4f}",
            f"{per_second(self.mb, self.elapsed_s):.4f}",
            str(self.records),
            f"{per_second(self.records, self.elapsed_s):.4f}",
            f"{self.rebalance_s * 1000.0:.0f}",
            f"{self.fetch_s * 1000.0:.0f}",
            f"{per_second(self.mb, self.fetch_s):.4f}",
            f"{per_second(self.records, self.fetch_s):.4f}",
            f"{self.first_record_s * 1000.0:.0f}",
        )
        return ", ".join(TEXT_COLUMNS) + "\n" + ", ".join(values)


def _kafka_time(moment: datetime.datetime) -> str:
    """``yyyy-MM-dd HH:mm:ss:SSS``, the date format of Kafka's tool."""
    return moment.strftime("%Y-%m-%d %H:%M:%S:") + f"{moment.microsecond // 1000:03d}"


class _Run:
    """One consumer's run: counts, the moments that matter, the last broker error."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.records = 0
        self.bytes = 0
        self.start_s = time.monotonic()
        self.assigned_s: float | None = None
        self.first_record_s: float | None = None
        self.last_record_s = self.start_s
        self.broker_error: KafkaError | None = None

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.assigned_s is None:
            self.assigned_s = time.monotonic()

    def on_error(self, error: KafkaError) -> None:
        self.broker_error = error

    def progress_text(self, now_s: float) -> str:
        elapsed_s = now_s - self.start_s
        mb = self.bytes / BYTES_PER_MB
        return (
            f"{self.records}/{self.args.messages} records, "
            f"{mb:.2f} MB, {per_second(self.records, elapsed_s):,.1f} msg/s, "
            f"{per_second(mb, elapsed_s):.2f} MB/s"
        )

    def timed_out(self) -> CommandError:
        args = self.args
        error = self.broker_error
        if self.assigned_s is None and error is not None and unreachable(error):
            failure = from_kafka_error(error, broker=args.bootstrap_server, doing="consume from")
            return CommandError(
                f"no record in {args.timeout:g} s (--timeout): {failure}", EXIT_UNREACHABLE
            )
        waited = "the first record" if self.first_record_s is None else "the next record"
        return CommandError(
            f"read {self.records} of {args.messages} records from topic {args.topic!r} on "
            f"{args.bootstrap_server}: no record came in {args.timeout:g} s (--timeout) "
            f"while waiting for {waited}"
        )


def run(args: argparse.Namespace) -> int:
    settings = {
        "group.id": args.group,
        "auto.offset.reset": args.from_,
        **key_values(args.consumer_properties, "--consumer-property"),
    }
    state = _Run(args)
    config = client_config(args, **settings)
    config["error_cb"] = state.on_error
    consumer = kafka_clients.consumer(config)
    try:
        start_time = datetime.datetime.now().astimezone()
        state.start_s = state.last_record_s = time.monotonic()
        with ProgressLine(progress_console(args.json)) as progress:
            try:
                consumer.subscribe([args.topic], on_assign=state.on_assign)
                _consume_all(consumer, state, progress)
            except KeyboardInterrupt:
                raise CommandError(
                    f"interrupted: {state.records} of {args.messages} records read"
                ) from None
            end_s = time.monotonic()
            end_time = datetime.datetime.now().astimezone()
            if progress.enabled:
                progress.show(state.progress_text(end_s))
    finally:
        consumer.close()
    summary = _Summary(
        start_time=start_time,
        end_time=end_time,
        records=state.records,
        bytes=state.bytes,
        elapsed_s=end_s - state.start_s,
        rebalance_s=(state.assigned_s or state.start_s) - state.start_s,
        first_record_s=(state.first_record_s or end_s) - state.start_s,
    )
    if args.json:
        print_json(summary.to_json(args.topic, args.group))
    else:
        stdout_console().print(summary.text(), highlight=False)
    return EXIT_OK


def _consume_all(consumer: Consumer, state: _Run, progress: ProgressLine) -> None:
    args = state.args
    wanted = args.messages
    timeout_s = args.timeout
    monotonic = time.monotonic
    records = 0
    size = 0
    while records < wanted:
        batch = consumer.consume(min(wanted - records, BATCH_RECORDS), CONSUME_WAIT_S)
        now_s = monotonic()
        if batch:
            for message in batch:
                error = message.error()
                if error is not None:
                    raise from_kafka_error(
                        error, broker=args.bootstrap_server, topic=args.topic, doing="consume from"
                    )
                key = message.key()
                size += len(message) + (len(key) if key else 0)
            if state.first_record_s is None:
                state.first_record_s = now_s
            records += len(batch)
            state.records, state.bytes, state.last_record_s = records, size, now_s
        elif now_s - state.last_record_s >= timeout_s:
            raise state.timed_out()
        if progress.due():
            progress.show(state.progress_text(now_s))
