"""``wirekafka perf produce``: send N records of a given size and measure.

The record value is made once. The loop does little per record: ``produce()``,
a ``poll(0)`` every :data:`POLL_EVERY` records (delivery reports are served
there), polling while the client's queue is full (``BufferError``) and, with
``--throughput``, polling until the record's turn comes. The delivery report
appends the record's latency (librdkafka's, from ``produce()`` to the
acknowledgement) to an array; percentiles come from
:mod:`wirekafka.cli.latency_stats`.
"""

from __future__ import annotations

import argparse
import array
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from wirekafka.cli import kafka_clients
from wirekafka.cli.client_options import client_config
from wirekafka.cli.errors import EXIT_OK, CommandError, from_kafka_error
from wirekafka.cli.key_values import key_values
from wirekafka.cli.latency_stats import LatencySummary, running_percentiles
from wirekafka.cli.output import print_json, stdout_console
from wirekafka.cli.perf_common import (
    BYTES_PER_MB,
    ProgressLine,
    per_second,
    progress_console,
)

POLL_EVERY = 256  # records between two poll(0) calls when not throttled
FULL_QUEUE_POLL_S = 0.05  # how long to serve delivery reports when the queue is full
DRAIN_POLL_S = 0.1
# With --throughput, records ahead of their turn by less than this go at once (a wait
# per record would be shorter than the clock's and poll's granularity).
THROTTLE_SLACK_S = 0.002


@dataclass(slots=True)
class _Deliveries:
    """What the delivery reports said: the latency of each delivered record, the failures."""

    latencies_ms: array.array[float] = field(default_factory=lambda: array.array("d"))
    failures: Counter[tuple[str, int]] = field(default_factory=Counter)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            latency_s = message.latency()
            self.latencies_ms.append(latency_s * 1000.0 if latency_s is not None else 0.0)
        else:
            self.failures[(error.name(), error.code())] += 1

    @property
    def delivered(self) -> int:
        return len(self.latencies_ms)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())


def run(args: argparse.Namespace) -> int:
    settings = {
        **key_values(args.producer_properties, "--producer-property"),
    }
    if args.acks is not None:
        settings["acks"] = args.acks
    if args.compression is not None:
        settings["compression.type"] = args.compression
    deliveries = _Deliveries()
    config = client_config(args, **settings)
    config["on_delivery"] = deliveries.on_delivery
    producer = kafka_clients.producer(config)
    # the topic's metadata tells an unreachable broker or a topic that cannot be
    # produced to before the run, and has a broker that auto-creates topics create it
    kafka_clients.existing_topic(producer, args, args.topic, doing="produce to")
    value = _payload(args.record_size)

    with ProgressLine(progress_console(args.json)) as progress:
        start_s = time.monotonic()
        try:
            _produce_all(producer, args, value, deliveries, progress, start_s)
        except KeyboardInterrupt:
            raise CommandError(
                f"interrupted: {deliveries.delivered} of {args.num_records} records delivered"
            ) from None
        elapsed_s = time.monotonic() - start_s
        if progress.enabled:
            progress.show(_progress_text(deliveries, args, elapsed_s))

    summary = _Summary(
        num_records=args.num_records,
        record_size_bytes=args.record_size,
        elapsed_s=elapsed_s,
        records_sent=deliveries.delivered,
        latency=LatencySummary.of(deliveries.latencies_ms) if deliveries.delivered else None,
        failures=[(name, code, n) for (name, code), n in deliveries.failures.most_common()],
    )
    if args.json:
        print_json(summary.to_json(args.topic))
    else:
        stdout_console().print(summary.text(), highlight=False)
    if summary.failures:
        raise CommandError(summary.failure_message(args.topic, args.bootstrap_server))
    return EXIT_OK


def _payload(size: int) -> bytes:
    """``size`` random upper-case letters, as Kafka's tool fills its records."""
    return bytes(random.choices(range(ord("A"), ord("Z") + 1), k=size))


def _produce_all(
    producer: Producer,
    args: argparse.Namespace,
    value: bytes,
    deliveries: _Deliveries,
    progress: ProgressLine,
    start_s: float,
) -> None:
    """Produce every record, then serve delivery reports until none is outstanding."""
    topic = args.topic
    produce = producer.produce
    poll = producer.poll
    monotonic = time.monotonic
    interval_s = 1.0 / args.throughput if args.throughput > 0 else 0.0
    for index in range(args.num_records):
        if interval_s and start_s + index * interval_s - monotonic() > THROTTLE_SLACK_S:
            _wait_until(start_s + index * interval_s, producer, deliveries, args, progress, start_s)
        try:
            produce(topic, value)
        except BufferError:  # the client's queue is full: serve reports until there is room
            _produce_when_room(producer, topic, value, args)
        except KafkaException as exc:
            raise from_kafka_error(
                kafka_clients.kafka_error(exc),
                broker=args.bootstrap_server,
                topic=topic,
                doing="produce to",
            ) from exc
        if index % POLL_EVERY == 0:
            poll(0)
            if progress.due():
                progress.show(_progress_text(deliveries, args, monotonic() - start_s))
    while len(producer) > 0:
        poll(DRAIN_POLL_S)
        if progress.due():
            progress.show(_progress_text(deliveries, args, monotonic() - start_s))


def _wait_until(
    due_s: float,
    producer: Producer,
    deliveries: _Deliveries,
    args: argparse.Namespace,
    progress: ProgressLine,
    start_s: float,
) -> None:
    """Serve delivery reports (and the progress line) until ``due_s``, a record's turn."""
    while (wait_s := due_s - time.monotonic()) > 0:
        if wait_s >= 0.001:  # poll's timeout is in whole milliseconds
            producer.poll(min(wait_s, DRAIN_POLL_S))
        else:
            time.sleep(wait_s)
        if progress.due():
            progress.show(_progress_text(deliveries, args, time.monotonic() - start_s))


def _produce_when_room(
    producer: Producer, topic: str, value: bytes, args: argparse.Namespace
) -> None:
    while True:
        producer.poll(FULL_QUEUE_POLL_S)
        try:
            producer.produce(topic, value)
            return
        except BufferError:
            continue
        except KafkaException as exc:
            raise from_kafka_error(
                kafka_clients.kafka_error(exc),
                broker=args.bootstrap_server,
                topic=topic,
                doing="produce to",
            ) from exc


def _mb_per_s(records_per_s: float, record_size_bytes: int) -> float:
    return records_per_s * record_size_bytes / BYTES_PER_MB


def _progress_text(deliveries: _Deliveries, args: argparse.Namespace, elapsed_s: float) -> str:
    delivered = deliveries.delivered
    records_per_s = per_second(delivered, elapsed_s)
    mb_per_s = _mb_per_s(records_per_s, args.record_size)
    line = (
        f"{delivered}/{args.num_records} records sent, "
        f"{records_per_s:,.1f} msg/s, {mb_per_s:.2f} MB/s"
    )
    percentiles = running_percentiles(deliveries.latencies_ms, (0.5, 0.99))
    if percentiles is not None:
        line += f", p50 {percentiles[0]:.1f} ms, p99 {percentiles[1]:.1f} ms"
    if deliveries.failures:
        line += f", {deliveries.failed} failed"
    return line


@dataclass(frozen=True, slots=True)
class _Summary:
    num_records: int
    record_size_bytes: int
    elapsed_s: float
    records_sent: int
    latency: LatencySummary | None  # None when no record was delivered
    failures: list[tuple[str, int, int]]  # error name, error code, records

    @property
    def records_per_s(self) -> float:
        return per_second(self.records_sent, self.elapsed_s)

    @property
    def mb_per_s(self) -> float:
        return _mb_per_s(self.records_per_s, self.record_size_bytes)

    @property
    def records_failed(self) -> int:
        return sum(count for _, _, count in self.failures)

    def to_json(self, topic: str) -> dict[str, object]:
        latency = self.latency
        records_per_s = round(self.records_per_s, 3)
        latency_fields: dict[str, float | None] = {
            "latency_avg_ms": latency.avg_ms if latency else None,
            "latency_max_ms": latency.max_ms if latency else None,
            "latency_p50_ms": latency.p50_ms if latency else None,
            "latency_p95_ms": latency.p95_ms if latency else None,
            "latency_p99_ms": latency.p99_ms if latency else None,
            "latency_p99_9_ms": latency.p99_9_ms if latency else None,
        }
        return {
            "topic": topic,
            "num_records": self.num_records,
            "record_size_bytes": self.record_size_bytes,
            "records_sent": self.records_sent,
            "records_failed": self.records_failed,
            "errors": [
                {"error": name, "error_code": code, "records": count}
                for name, code, count in self.failures
            ],
            "elapsed_s": round(self.elapsed_s, 6),
            "records_per_s": records_per_s,
            # of the rate as given above, so that the two fields agree exactly
            "mb_per_s": round(_mb_per_s(records_per_s, self.record_size_bytes), 6),
            **{key: None if ms is None else round(ms, 3) for key, ms in latency_fields.items()},
        }

    def text(self) -> str:
        """The summary in the shape of Kafka's tool's last line."""
        latency = self.latency
        text = (
            f"{self.records_sent} records sent, {self.records_per_s:.1f} records/sec "
            f"({self.mb_per_s:.2f} MB/sec)"
        )
        if latency is None:
            text += "."
        else:
            text += (
                f", {latency.avg_ms:.2f} ms avg latency, {latency.max_ms:.2f} ms max latency, "
                f"{latency.p50_ms:.2f} ms 50th, {latency.p95_ms:.2f} ms 95th, "
                f"{latency.p99_ms:.2f} ms 99th, {latency.p99_9_ms:.2f} ms 99.9th."
            )
        for name, code, count in self.failures:
            text += f"\n{count} records failed: {name} (error code {code})"
        return text

    def failure_message(self, topic: str, broker: str) -> str:
        errors = "; ".join(
            f"{name} (error code {code}): {count} records" for name, code, count in self.failures
        )
        return (
            f"{self.records_failed} of {self.num_records} records failed to topic {topic!r} "
            f"on {broker}: {errors}"
        )
