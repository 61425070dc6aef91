"""Numbered records written and read while brokers fail: who was told what, and the log
at the end (Jepsen's way of checking a replicated log).

:class:`Workload` runs, each in a thread of its own, idempotent acks=all
producers of confluent-kafka and kafka-python, a confluent-kafka producer with
acks=1 and no retries (Kafka's weaker promise, as a contrast) and consumers of
kafka-python and confluent-kafka reading along from the start. Each producer
writes its own numbered values round robin over the partitions and notes the
partition and offset of every value it was told is written (librdkafka tells
no offset for the records of a request whose answer it lost when a later
request of the same producer succeeds: their sequence numbers say they were
written). :meth:`Workload.check` then reads the whole topic and asserts
Kafka's promises:

* every value an acks=all producer was told is written is in the log at the
  partition and offset it was told (none lost), and the acks=all producers
  were told of no failure (they retry, within DELIVERY_TIMEOUT_MS); a value
  told without an offset is looked for anywhere in its partition;
* no value is in the log twice (idempotence; the acks=1 producer does not
  retry);
* every record a consumer saw is still in the log where it saw it (consumers
  read below the high watermark only), and librdkafka's consumer, which checks
  its position against the leader's epochs after each leader change
  (KIP-320), never reports the log truncated under it.

What the acks=1 producer lost is counted in the report, not asserted.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import confluent_kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError

from interop_tests.protocol_client import ProtocolClient
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from interop_tests.support import Deadline
from wirekafka.storage.log import LATEST_TIMESTAMP as LATEST

DELIVERY_TIMEOUT_MS = 180_000  # longer than a test: a producer retries, never gives up
HIGH_WATERMARK_TIMEOUT_S = 60.0
END_OFFSETS_TIMEOUT_MS = 5000
SEND_PAUSE_S = 0.002  # each producer writes about 400 records a second
IDEMPOTENT = {"enable.idempotence": True, "acks": "all"}
LEADER_ONLY = {"enable.idempotence": False, "acks": "1", "message.send.max.retries": 0}
# What librdkafka's consumer reports when its position is gone from the log: the log
# truncated below it (KIP-320), or the offset out of range with no reset allowed. Its
# other errors while brokers come and go (all brokers down, a coordinator lost) are
# notices it recovers from by itself.
POSITION_LOST = frozenset(
    {
        confluent_kafka.KafkaError._LOG_TRUNCATION,
        confluent_kafka.KafkaError._AUTO_OFFSET_RESET,
        confluent_kafka.KafkaError.OFFSET_OUT_OF_RANGE,
    }
)


@dataclass
class Written:
    """What a producer was told: (partition, offset) per acknowledged value, and errors."""

    # offset None: acknowledged without one (librdkafka's implicit acks)
    acknowledged: dict[bytes, tuple[int, int | None]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acked(self, value: bytes, partition: int, offset: int | None) -> None:
        with self.lock:
            self.acknowledged[value] = (partition, offset)

    def failed(self, value: bytes, error: object) -> None:
        with self.lock:
            self.errors.append(f"{value!r}: {error}")

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)


@dataclass
class Seen:
    """(partition, offset) -> value of every record the consumer read, and what stopped
    it if anything did."""

    records: dict[tuple[int, int], bytes] = field(default_factory=dict)
    error: str = ""
    notices: list[str] = field(default_factory=list)  # errors the client recovers from


class Workload:
    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.by_confluent, self.by_kafka_python, self.by_leader_only = (
            Written(),
            Written(),
            Written(),
        )
        self.seen, self.seen_by_confluent = Seen(), Seen()
        self._stop_writing, self._stop_reading = threading.Event(), threading.Event()
        self._writers: list[threading.Thread] = []
        self._readers: list[threading.Thread] = []

    def start(self) -> Workload:
        self._writers = _in_background(
            lambda: self._write_confluent(self.by_confluent, IDEMPOTENT, b"confluent"),
            lambda: self._write_kafka_python(self.by_kafka_python),
            lambda: self._write_confluent(self.by_leader_only, LEADER_ONLY, b"acks-1"),
        )
        self._readers = _in_background(self._read_along, self._read_along_confluent)
        return self

    def progress(self) -> int:
        """The fewer acknowledged records of the two acks=all producers."""
        return min(self.by_confluent.count, self.by_kafka_python.count)

    def counts(self) -> tuple[int, int, int]:
        """Acknowledged records: confluent-kafka's, kafka-python's, acks=1's."""
        return (self.by_confluent.count, self.by_kafka_python.count, self.by_leader_only.count)

    def abandon(self) -> None:
        """Stop every thread soon, checking nothing (a test that failed)."""
        self._stop_writing.set()
        self._stop_reading.set()

    def stop(self) -> None:
        """Stop writing, wait for every record sent to be answered, stop reading."""
        self._stop_writing.set()
        for thread in self._writers:
            thread.join(DELIVERY_TIMEOUT_MS / 1000)
            assert not thread.is_alive(), f"a producer did not finish: {_stack_of(thread)}"
        self._stop_reading.set()
        for thread in self._readers:
            thread.join(60)
            assert not thread.is_alive(), f"a consumer did not finish: {_stack_of(thread)}"

    def check(self) -> str:
        """Read the whole topic and assert Kafka's promises (the module's docstring);
        a report of what the clients saw."""
        ends = self._high_watermarks()
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS
        )
        consumer.assign(self._partitions())
        consumer.seek_to_beginning()
        log = {(r.partition, r.offset): r.value for r in read_to_end(consumer, ends=ends)}
        consumer.close()
        at = {value: position for position, value in log.items()}

        def lost(written: Written) -> dict[bytes, tuple[int, int | None]]:
            return {
                v: (partition, offset)
                for v, (partition, offset) in written.acknowledged.items()
                if (found := at.get(v)) is None
                or found[0] != partition
                or offset not in (None, found[1])
            }

        report = (
            f"{len(log)} records in the log; acknowledged (lost, errors): confluent-kafka "
            f"{self.by_confluent.count} ({len(lost(self.by_confluent))}, "
            f"{len(self.by_confluent.errors)}), kafka-python {self.by_kafka_python.count} "
            f"({len(lost(self.by_kafka_python))}, {len(self.by_kafka_python.errors)}), acks=1 "
            f"{self.by_leader_only.count} ({len(lost(self.by_leader_only))}, "
            f"{len(self.by_leader_only.errors)}); the consumers saw {len(self.seen.records)} "
            f"(kafka-python) and {len(self.seen_by_confluent.records)} (confluent-kafka), "
            f"which noted {sorted(set(self.seen_by_confluent.notices)) or 'no error'}"
        )
        print(report)
        for name, seen in (
            ("kafka-python", self.seen),
            ("confluent-kafka", self.seen_by_confluent),
        ):
            assert seen.error == "", f"the {name} consumer stopped: {seen.error}"
            disappeared = {p: v for p, v in seen.records.items() if log.get(p) != v}
            assert disappeared == {}, f"{len(disappeared)} records a consumer saw are gone"
        assert len(at) == len(log), "a record is in the log twice"
        for written in (self.by_confluent, self.by_kafka_python):
            assert written.errors == []
            missing = lost(written)
            assert missing == {}, (
                f"{len(missing)} acknowledged records are not where they were acknowledged; "
                "(value, acknowledged at, found at): "
                f"{[(v, p, at.get(v)) for v, p in sorted(missing.items())[:10]]}"
            )
        return report

    def _high_watermarks(self) -> dict[TopicPartition, int] | None:
        """The end offsets, once they pass every offset an acks=all producer was
        told (None when they never did: the check of what was lost says which). A
        leader elected a moment ago has its followers' log ends to learn before its
        high watermark (the end offset consumers are given) reaches what the last
        leader's did; the reading would stop short meanwhile.

        Each attempt asks through a new consumer: kafka-python 3.0 sends ListOffsets
        again and again to a leader that answered NOT_LEADER_OR_FOLLOWER, without
        asking for metadata, until its timeout (the preferred replica taking its
        leadership back after a failover is enough)."""
        wanted: dict[int, int] = {}
        for written in (self.by_confluent, self.by_kafka_python):
            for partition, offset in written.acknowledged.values():
                if offset is not None:
                    wanted[partition] = max(wanted.get(partition, 0), offset + 1)
        deadline = Deadline(HIGH_WATERMARK_TIMEOUT_S)
        while deadline.left > 0:
            consumer = KafkaConsumer(bootstrap_servers=self.bootstrap)
            try:
                ends = consumer.end_offsets(self._partitions(), timeout_ms=END_OFFSETS_TIMEOUT_MS)
            except (KafkaTimeoutError, KeyError) as exc:  # KeyError: a partition without leader
                print(f"asking for the end offsets: {exc!r}; the brokers say {self._ends()}")
                continue
            finally:
                consumer.close()
            if all(ends[TopicPartition(self.topic, p)] >= end for p, end in wanted.items()):
                return dict(ends)
            time.sleep(0.1)
        return None

    def _ends(self) -> dict[str, object]:
        """What each broker answers Metadata (leader, leader epoch) and ListOffsets
        latest with, by partition: for the report when a client gets no answer."""
        answers: dict[str, object] = {}
        for address in self.bootstrap.split(","):
            host, port = address.rsplit(":", 1)
            try:
                with ProtocolClient(host, int(port), timeout_s=10) as client:
                    (topic,) = client.metadata(self.topic).topics
                    leaders = {
                        p.partition_index: (p.leader_id, p.leader_epoch) for p in topic.partitions
                    }
                    ends = {
                        p.partition_index: (p.error_code, p.offset)
                        for p in client.list_offsets(
                            self.topic, LATEST, partitions=range(self.partitions), version=1
                        )
                    }
                    answers[address] = {"leaders": leaders, "ends": ends}
            except Exception as exc:
                answers[address] = repr(exc)
        return answers

    def _partitions(self) -> list[TopicPartition]:
        return [TopicPartition(self.topic, p) for p in range(self.partitions)]

    def _write_confluent(
        self, written: Written, settings: dict[str, object], prefix: bytes
    ) -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 5,
                "message.timeout.ms": DELIVERY_TIMEOUT_MS,
                **settings,
            }
        )

        def delivered(
            error: confluent_kafka.KafkaError | None, message: confluent_kafka.Message
        ) -> None:
            value = message.value()
            assert value is not None
            if error is None:
                written.acked(value, message.partition(), message.offset())
            else:
                written.failed(value, error)

        number = 0
        while not self._stop_writing.is_set():
            value = b"%s-%07d" % (prefix, number)
            partition = number % self.partitions
            producer.produce(self.topic, value=value, partition=partition, on_delivery=delivered)
            number += 1
            producer.poll(SEND_PAUSE_S)
        remaining = producer.flush(DELIVERY_TIMEOUT_MS / 1000)
        if remaining:
            written.failed(b"", f"{remaining} records still undelivered at the end")

    def _write_kafka_python(self, written: Written) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            request_timeout_ms=10_000,
        )
        number = 0
        while not self._stop_writing.is_set():
            value = b"kafka-python-%07d" % number
            future = producer.send(self.topic, value=value, partition=number % self.partitions)
            future.add_callback(lambda m, value=value: written.acked(value, m.partition, m.offset))
            future.add_errback(lambda e, value=value: written.failed(value, e))
            number += 1
            time.sleep(SEND_PAUSE_S)
        producer.flush(DELIVERY_TIMEOUT_MS / 1000)
        producer.close()

    def _read_along(self) -> None:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, auto_offset_reset="earliest")
        consumer.assign(self._partitions())
        try:
            while not self._stop_reading.is_set():
                for records in consumer.poll(timeout_ms=200).values():
                    for record in records:
                        self.seen.records[(record.partition, record.offset)] = record.value
        except Exception as exc:
            self.seen.error = repr(exc)
        finally:
            consumer.close()

    def _read_along_confluent(self) -> None:
        """librdkafka's consumer checks its position with OffsetForLeaderEpoch after each
        leader change (KIP-320): had it read a record that went, it would report log
        truncation, an error here."""
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "read-along",
                "enable.auto.commit": False,
                "auto.offset.reset": "error",  # a reset would be an error, not a quiet jump
            }
        )
        consumer.assign(
            [
                confluent_kafka.TopicPartition(self.topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(self.partitions)
            ]
        )
        try:
            while not self._stop_reading.is_set():
                message = consumer.poll(0.2)
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.fatal() or error.code() in POSITION_LOST:
                        self.seen_by_confluent.error = f"{error.name()}: {error.str()}"
                        return
                    self.seen_by_confluent.notices.append(f"{error.name()}: {error.str()}")
                    continue
                value = message.value()
                assert value is not None
                self.seen_by_confluent.records[(message.partition(), message.offset())] = value
        finally:
            consumer.close()


def _in_background(*tasks: Callable[[], None]) -> list[threading.Thread]:
    """Each task in a daemon thread named after it (a thread that hangs is named)."""
    threads = [
        threading.Thread(target=task, daemon=True, name=getattr(task, "__name__", repr(task)))
        for task in tasks
    ]
    for thread in threads:
        thread.start()
    return threads


def _stack_of(thread: threading.Thread) -> str:
    """Where a thread that did not finish is now: its name and its stack."""
    frame = sys._current_frames().get(thread.ident or -1)
    where = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"
    return f"{thread.name}\n{where}"
