"""confluent-kafka (librdkafka 2.16): its adapter and its group member.

librdkafka's consumer API wants a group.id, but readers never subscribe: they
assign() partitions, with auto-commit off, so no group request is ever sent.
The producer is not idempotent unless asked (``enable.idempotence``). Metadata
goes through a consumer handle, which never asks the broker to create a topic
(a producer's does).

``produce``, ``consumer_for`` and ``read_all`` are also what other interop tests
use to put records in and read them back.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from interop_tests.clients.adapter import (
    AtTime,
    Capability,
    ClientAdapter,
    Counts,
    Edge,
    MemberConfig,
    Offset,
    Start,
    TopicAlreadyExists,
)
from interop_tests.group_driver import (
    MAX_POLL_RECORDS,
    POLL_S,
    MemberEvents,
    Owned,
    emit,
    key_text,
    next_command,
    start_python_member,
)
from interop_tests.support import Deadline, Got, Sample

TIMEOUT_S = 60.0


def produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], compression: str = "none", **config
) -> list[tuple[int, int]]:
    """Send every sample to its partition; the (partition, offset) of each, in order
    (offset -1 where the broker gave none: acks=0)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "linger.ms": 5,
            "acks": "all",
            "log_level": 3,
            **config,
        }
    )
    delivered: dict[int, tuple[int, int]] = {}
    errors: list[tuple[int, KafkaError]] = []

    def on_delivery(index: int, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append((index, error))
        else:
            offset = message.offset()  # None, or negative, without an answer (acks=0)
            delivered[index] = (message.partition(), -1 if offset is None else max(offset, -1))

    for index, s in enumerate(samples):
        kwargs = {} if s.timestamp is None else {"timestamp": s.timestamp}
        while True:
            try:
                producer.produce(
                    topic,
                    value=s.value,
                    key=s.key,
                    partition=s.partition,
                    headers=list(s.headers),
                    on_delivery=partial(on_delivery, index),
                    **kwargs,
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_S)
    assert remaining == 0, f"{remaining} messages not delivered within {TIMEOUT_S} s"
    assert not errors, f"{len(errors)} delivery errors, the first: {errors[0]}"
    return [delivered[i] for i in range(len(samples))]


@contextmanager
def consumer_for(bootstrap: str, **config) -> Iterator[Consumer]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "never-joined",  # required by the API; there is no subscribe()
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "check.crcs": True,
            "log_level": 3,
            **config,
        }
    )
    try:
        yield consumer
    finally:
        consumer.close()


def to_got(message: Message) -> Got:
    _, timestamp = message.timestamp()
    return Got(
        partition=message.partition(),
        offset=message.offset(),
        key=message.key(),
        value=message.value(),
        headers=tuple((k, v) for k, v in (message.headers() or [])),
        timestamp=timestamp,
    )


def poll_until(
    consumer: Consumer,
    done: Callable[[list[Got]], bool],
    what: str,
    on_end: Callable[[int], None] = lambda partition: None,
    expected: Callable[[list[Got]], int] = lambda got: 1000,
) -> list[Got]:
    """Consume until ``done``; ``on_end(partition)`` for each end-of-partition event
    (with ``enable.partition.eof``). A consume call waits until it has as many messages as
    it asks for, or its timeout: it asks for ``expected(got)``, what is still to come."""
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while not done(got):
        deadline.check(f"{what} (read {len(got)} so far)")
        wanted = max(1, min(1000, expected(got)))
        for message in consumer.consume(num_messages=wanted, timeout=0.5):
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                on_end(message.partition())
                continue
            assert error is None, f"consumer error: {error}"
            got.append(to_got(message))
    return got


def read_all(consumer: Consumer, topic: str, counts: dict[int, int]) -> list[Got]:
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(counts)])
    total = sum(counts.values())
    got = poll_until(
        consumer,
        lambda got: len(got) >= total,
        f"{total} records of {topic}",
        expected=lambda got: total - len(got),
    )
    assert len(got) == total
    return got


# -- the adapter


class ConfluentKafka(ClientAdapter):
    name = "confluent-kafka"
    capabilities = frozenset(Capability)  # every one
    cross_codec = "snappy"
    # librdkafka sends a batch uncompressed when the codec's output would be larger.
    compresses_every_batch = False
    missing_topic_error = r"UNKNOWN_TOPIC"
    finds_timestamps = False  # offsets_for_times gives offsets only

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[tuple[int, int]]:
        config: dict[str, Any] = {"acks": acks}
        if idempotent is not None:
            config["enable.idempotence"] = idempotent
        return produce(bootstrap, topic, samples, codec, **config)

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        with consumer_for(
            bootstrap, **{"enable.partition.eof": True, "fetch.wait.max.ms": 100}
        ) as consumer:
            offsets = {
                p: self._offset(consumer, topic, p, (starts or {}).get(p, Edge.EARLIEST))
                for p in sorted(counts)
            }
            # Leaders known before the assignment: librdkafka asks a partition's offsets only
            # once it knows its leader, and otherwise retries on a timer.
            consumer.list_topics(topic, timeout=TIMEOUT_S)
            consumer.assign([TopicPartition(topic, p, o) for p, o in offsets.items()])
            at_end: set[int] = set()
            read_of = dict.fromkeys(counts, 0)

            def done(got: list[Got]) -> bool:
                for g in got[sum(read_of.values()) :]:
                    read_of[g.partition] += 1
                return all(p in at_end if n is None else read_of[p] >= n for p, n in counts.items())

            def expected(got: list[Got]) -> int:
                """Records still to come, and an end-of-partition event for each UNTIL_END."""
                return sum(
                    (0 if p in at_end else 1) if n is None else max(0, n - read_of[p])
                    for p, n in counts.items()
                )

            return poll_until(
                consumer, done, f"{dict(counts)} records of {topic}", at_end.add, expected
            )

    @staticmethod
    def _offset(consumer: Consumer, topic: str, partition: int, start: Start) -> int:
        if start == Edge.EARLIEST:
            return OFFSET_BEGINNING
        if start == Edge.LATEST:
            return OFFSET_END
        if isinstance(start, Offset):
            return start.offset
        assert isinstance(start, AtTime)
        (found,) = consumer.offsets_for_times(
            [TopicPartition(topic, partition, start.timestamp_ms)], timeout=TIMEOUT_S
        )
        assert found.error is None, found.error
        return OFFSET_END if found.offset < 0 else found.offset

    def topics(self, bootstrap: str) -> set[str]:
        with consumer_for(bootstrap) as consumer:
            return set(consumer.list_topics(timeout=TIMEOUT_S).topics)

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        with consumer_for(bootstrap) as consumer:
            metadata = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        if metadata.error is not None:
            assert metadata.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART, metadata.error
            return None
        return {p: m.leader for p, m in metadata.partitions.items()}

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "topic.metadata.propagation.max.ms": 2000,
                "message.timeout.ms": 10_000,
                "log_level": 3,
            }
        )
        errors: list[KafkaError | None] = []
        producer.produce(topic, b"value", on_delivery=lambda error, message: errors.append(error))
        assert producer.flush(TIMEOUT_S) == 0
        (error,) = errors
        assert error is not None, f"a record produced to {topic} was acknowledged"
        return f"{error.name()}: {error.str()}"

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        (future,) = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1)]
        ).values()
        try:
            assert future.result(TIMEOUT_S) is None
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicAlreadyExists(str(exc)) from exc
            raise

    def watermarks(
        self, bootstrap: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[int, int]]:
        with consumer_for(bootstrap) as consumer:
            return {
                p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)
                for p in partitions
            }

    def offsets_for_times(
        self, bootstrap: str, topic: str, times: Mapping[int, int]
    ) -> dict[int, tuple[int, int | None] | None]:
        with consumer_for(bootstrap) as consumer:
            found = consumer.offsets_for_times(
                [TopicPartition(topic, p, t) for p, t in times.items()], timeout=TIMEOUT_S
            )
        assert all(tp.error is None for tp in found), found
        return {tp.partition: None if tp.offset < 0 else (tp.offset, None) for tp in found}

    def committed(
        self, bootstrap: str, group: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, int | None]:
        with consumer_for(bootstrap, **{"group.id": group}) as consumer:
            found = consumer.committed(
                [TopicPartition(topic, p) for p in partitions], timeout=TIMEOUT_S
            )
        return {tp.partition: None if tp.offset < 0 else tp.offset for tp in found}

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> MemberEvents:
        return start_python_member(
            name, config.driver_config(name, self), __name__, log_dir=log_dir, client=self.name
        )


ADAPTER = ConfluentKafka()


# -- the group member (child side of interop_tests/group_driver.py)


def run_member(config: dict, commands: queue.Queue) -> None:
    topic = config["topic"]
    owned = Owned(config)
    options: dict[str, Any] = {
        "bootstrap.servers": config["bootstrap"],
        "group.id": config["group"],
        "client.id": config["name"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": config["session_timeout_ms"],
        "heartbeat.interval.ms": config["heartbeat_interval_ms"],
        "max.poll.interval.ms": config["max_poll_interval_ms"],
        "partition.assignment.strategy": config["assignment"],
        "log_level": 3,
    }
    if config.get("group_instance_id"):
        options["group.instance.id"] = config["group_instance_id"]

    # What this member returned and has not committed yet (the position after it, by
    # partition): committed after each poll, and before its partitions are taken away; a
    # commit refused by a rebalance is tried again.
    pending: dict[int, int] = {}
    batch = config["commit"] == "batch"

    def commit(offsets: dict[int, int], *, quiet_if_nothing: bool = False) -> None:
        if not offsets:
            return
        try:
            consumer.commit(
                offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )
            emit({"type": "committed", "offsets": offsets})
            for p, o in offsets.items():
                if pending.get(p) == o:
                    del pending[p]
        except KafkaException as exc:
            if not (quiet_if_nothing and exc.args[0].code() == KafkaError._NO_OFFSET):
                emit({"type": "commit_error", "error": repr(exc)})

    def on_assign(consumer, partitions):
        owned.change("assigned", [tp.partition for tp in partitions])

    def on_revoke(consumer, partitions):
        revoked = {tp.partition for tp in partitions}
        if batch:
            commit({p: o for p, o in pending.items() if p in revoked}, quiet_if_nothing=True)
        for p in revoked:
            pending.pop(p, None)
        owned.change("revoked", sorted(revoked))

    def on_lost(consumer, partitions):
        for tp in partitions:
            pending.pop(tp.partition, None)
        owned.change("lost", [tp.partition for tp in partitions])

    consumer = Consumer(options)

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit({"type": "started"})
    try:
        while True:
            name, offsets = next_command(commands)
            if name == "close":
                break
            if name == "commit":
                commit(offsets)
            messages = consumer.consume(num_messages=MAX_POLL_RECORDS, timeout=POLL_S)
            records = []
            for m in messages:
                if m.error() is not None:
                    emit({"type": "client_error", "error": str(m.error())})
                    continue
                records.append([m.partition(), m.offset(), key_text(m.key())])
                pending[m.partition()] = m.offset() + 1
            if records:
                emit({"type": "records", "records": records})
            if batch:
                commit(dict(pending), quiet_if_nothing=True)
    finally:
        consumer.close()
    emit({"type": "closed"})
