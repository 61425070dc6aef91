"""The Kafka client side of the Spark source and sink, on librdkafka (confluent-kafka).

The driver uses :class:`KafkaMetadata` to find the partitions a subscription
covers and their log bounds (Metadata and ListOffsets through the admin
client). Executors read one offset range each with :func:`read_range`
(assign, seek, fetch; a throwaway group id but no JoinGroup and no commits,
as Spark's executors do) and write rows with :class:`RowProducer`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from wirekafka.spark.offsets import DATA_LOSS_ADVICE, DataLossError, LogBounds, OffsetRange
from wirekafka.spark.options import Assign, Subscription, partition_name, partition_names
from wirekafka.spark.options import TopicPartition as Partition

FETCH_BATCH_RECORDS = 10_000
RETRY_INTERVAL_S = 0.5
T = TypeVar("T")
_POLL_STEP_S = 1.0


# Consumer errors that waiting will not mend.
_UNRECOVERABLE = {
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
}


def _waiting_cannot_mend(error: KafkaError) -> bool:
    return error.fatal() or error.code() in _UNRECOVERABLE


class KafkaClientError(RuntimeError):
    """A broker could not be reached or refused a request of the source or sink."""


def _config(bootstrap_servers: str, client_config: Mapping[str, str]) -> dict[str, Any]:
    return {**client_config, "bootstrap.servers": bootstrap_servers}


class KafkaMetadata:
    """The driver's view of the subscribed partitions and their offsets.

    A request that fails for a reason that may pass (a broker restarting, a
    leader moving) is tried again (:func:`retried`) until ``timeout_ms`` has
    passed, as Spark's source retries its offset lookups.
    """

    def __init__(
        self, bootstrap_servers: str, client_config: Mapping[str, str], timeout_ms: int
    ) -> None:
        self._refusals: list[KafkaError] = []  # failed logins, reported by librdkafka
        config = {**_config(bootstrap_servers, client_config), "error_cb": self._on_error}
        self._admin = AdminClient(config)
        self._timeout_s = timeout_ms / 1000

    def _on_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            self._refusals.append(error)

    def _retried(self, what: str, attempt: Callable[[float], T]) -> T:
        """:func:`retried`, ended by a failed login: waiting does not mend a wrong
        password, and the broker's reason is what the user needs to see."""

        def unless_refused(left_s: float) -> T:
            self._admin.poll(0)  # serves error_cb
            if self._refusals:
                raise KafkaClientError(f"cannot {what}: {self._refusals[-1].str()}")
            return attempt(left_s)

        try:
            return retried(what, unless_refused, self._timeout_s)
        except KafkaClientError:
            self._admin.poll(0)
            if self._refusals:
                raise KafkaClientError(f"cannot {what}: {self._refusals[-1].str()}") from None
            raise

    def partitions(self, subscription: Subscription) -> set[Partition]:
        """The partitions the subscription covers now (none for a topic that does not exist)."""
        metadata = self._retried(
            "read the cluster's metadata", lambda left_s: self._admin.list_topics(timeout=left_s)
        )
        existing = {
            (name, number)
            for name, topic in metadata.topics.items()
            if topic.error is None
            for number in topic.partitions
        }
        if isinstance(subscription, Assign):
            missing = subscription.partitions - existing
            if missing:
                raise KafkaClientError(
                    f"assigned partitions do not exist: {partition_names(missing)}"
                )
            return set(subscription.partitions)
        return {tp for tp in existing if subscription.matches(tp[0])}

    def bounds(self, partitions: set[Partition]) -> LogBounds:
        """Log start and log end offset of each partition."""
        if not partitions:
            return LogBounds({}, {})
        return LogBounds(
            self.earliest(partitions), self._list_offsets(partitions, OffsetSpec.latest())
        )

    def earliest(self, partitions: set[Partition]) -> dict[Partition, int]:
        """Each partition's log start offset."""
        return self._list_offsets(partitions, OffsetSpec.earliest()) if partitions else {}

    def _list_offsets(self, partitions: set[Partition], spec: OffsetSpec) -> dict[Partition, int]:
        def attempt(left_s: float) -> dict[Partition, int]:
            futures = self._admin.list_offsets(
                {TopicPartition(t, p): spec for t, p in partitions}, request_timeout=left_s
            )
            offsets = {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            if any(offset < 0 for offset in offsets.values()):
                # librdkafka can hand back OFFSET_INVALID (-1001) without an error for a
                # partition whose leader it lost meanwhile (a broker restarting): ask again
                unknown = partition_names({p for p, offset in offsets.items() if offset < 0})
                raise KafkaException(
                    KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"no offset for {unknown}")
                )
            return offsets

        return self._retried("list offsets", attempt)


def retried(what: str, attempt: Callable[[float], T], timeout_s: float) -> T:
    """``attempt(seconds left)`` until it succeeds, an error that waiting will not
    mend, or ``timeout_s`` has passed; then :class:`KafkaClientError` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        left_s = max(0.1, deadline - time.monotonic())
        try:
            return attempt(left_s)
        except KafkaException as e:
            error = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
            if (
                error is None
                or _waiting_cannot_mend(error)
                or time.monotonic() + RETRY_INTERVAL_S > deadline
            ):
                raise KafkaClientError(f"cannot {what}: {e}") from None
        time.sleep(RETRY_INTERVAL_S)


def read_range(
    offset_range: OffsetRange,
    bootstrap_servers: str,
    client_config: Mapping[str, str],
    *,
    poll_timeout_ms: int,
    fail_on_data_loss: bool,
) -> Iterator[list[Message]]:
    """The records of one offset range, in offset order, in lists of up to a few thousand.

    Offsets missing inside the range (compacted away) are skipped. A range whose
    start has been deleted meanwhile is data loss: an error, or with
    ``fail_on_data_loss`` off the records still there. No record arrives for
    ``poll_timeout_ms`` while the range is unfinished: an error.
    """
    consumer = Consumer(
        {
            "group.id": f"spark-wirekafka-executor-{uuid.uuid4()}",
            **_config(bootstrap_servers, client_config),
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "error",
        }
    )
    name = partition_name((offset_range.topic, offset_range.partition))
    try:
        consumer.assign(
            [TopicPartition(offset_range.topic, offset_range.partition, offset_range.start_offset)]
        )
        last = offset_range.end_offset - 1
        deadline = time.monotonic() + poll_timeout_ms / 1000
        done = False
        last_error = "none"
        while not done:
            records: list[Message] = []
            for message in consumer.consume(FETCH_BATCH_RECORDS, timeout=_POLL_STEP_S):
                error = message.error()
                if error is None:
                    offset = message.offset() or 0
                    if offset > last:
                        done = True
                        break
                    if offset >= offset_range.start_offset:
                        records.append(message)
                    if offset == last:
                        done = True
                        break
                elif error.code() == KafkaError._AUTO_OFFSET_RESET:
                    if fail_on_data_loss:
                        raise DataLossError(
                            f"offset {offset_range.start_offset} of {name} is out of range:"
                            f" {error.str()}. {DATA_LOSS_ADVICE}"
                        )
                    consumer.assign(
                        [
                            TopicPartition(
                                offset_range.topic, offset_range.partition, OFFSET_BEGINNING
                            )
                        ]
                    )
                elif _waiting_cannot_mend(error):
                    raise KafkaClientError(f"reading {name}: {error.str()}")
                else:  # a broker restarting, a connection lost: librdkafka retries
                    last_error = error.str()
            if records:
                yield records
                deadline = time.monotonic() + poll_timeout_ms / 1000
            elif not done and time.monotonic() > deadline:
                raise KafkaClientError(
                    f"no record of {name} arrived within kafkaConsumer.pollTimeoutMs="
                    f"{poll_timeout_ms} while offsets {offset_range.start_offset}.."
                    f"{last} were being read (last client error: {last_error})"
                )
    finally:
        consumer.close()


class RowProducer:
    """Writes records to Kafka and, on :meth:`flush`, waits for every acknowledgement."""

    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, str]) -> None:
        self._producer = Producer(
            {"linger.ms": 5, **_config(bootstrap_servers, client_config)},
        )
        self._failures: list[str] = []
        self.acknowledged = 0

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int | None,
        headers: list[tuple[str, bytes | None]] | None,
    ) -> None:
        kwargs: dict[str, Any] = {"value": value, "key": key, "on_delivery": self._delivered}
        if partition is not None:
            kwargs["partition"] = partition
        if headers:
            kwargs["headers"] = headers
        while True:
            try:
                self._producer.produce(topic, **kwargs)
                break
            except BufferError:
                self._producer.poll(0.1)  # local queue full: let deliveries drain
            except KafkaException as e:
                raise KafkaClientError(f"cannot write to {topic}: {e}") from None
        self._producer.poll(0)
        self._raise_failures()

    def flush(self, timeout_s: float) -> None:
        left = self._producer.flush(timeout_s)
        self._raise_failures()
        if left:
            raise KafkaClientError(f"{left} records were not acknowledged within {timeout_s} s")

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.acknowledged += 1
        else:
            self._failures.append(f"{message.topic()}-{message.partition()}: {error.str()}")

    def _raise_failures(self) -> None:
        if self._failures:
            raise KafkaClientError(
                f"{len(self._failures)} records were not written; first: {self._failures[0]}"
            )
