"""kafka-python: its adapter, its group member, and the driver that runs both under 2.0.2.

The adapter drives the kafka-python of the interpreter that imports this module:
3.x in the tests' venv. Its producer keeps kafka-python 3's defaults
(idempotent, acks=all: InitProducerId and sequence numbers); readers assign
partitions and have no group (``group_id=None``).

The same code drives kafka-python 2.0.2 (which shares the import name ``kafka``,
so it lives in a venv of its own): ``python -m interop_tests.clients.kafka_python``
in that venv reads one JSON job (``{"op": <method>, ...}``) on stdin and prints
the method's answer as JSON (see ``kafka_python_2.py``); kafka-python 2.0.2 uses
fixed request versions whatever the broker advertises (Metadata v1, Produce up
to v7, Fetch v4, ListOffsets v1) and has no idempotence.

``produce``, ``consumer_for`` and ``read_all`` are also what other interop tests
use to put records in and read them back.
"""

from __future__ import annotations

import json
import queue
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError

from interop_tests import support
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
    start_from_json,
    start_to_json,
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
from interop_tests.support import (
    Deadline,
    Got,
    Sample,
    got_from_json,
    got_from_record,
    got_to_json,
    sample_from_json,
    sample_to_json,
)

TIMEOUT_S = 60.0
VERSION_2 = kafka.__version__.startswith("2.")


# -- producing and reading, as other interop tests use them


def produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], compression: str | None = None, **config
) -> list:
    """Send every sample to its partition; the RecordMetadata of each, in order."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=compression,
        linger_ms=5,
        request_timeout_ms=30_000,
        **config,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=s.key,
                value=s.value,
                headers=list(s.headers),
                partition=s.partition,
                timestamp_ms=s.timestamp,
            )
            for s in samples
        ]
        producer.flush(timeout=TIMEOUT_S)
        return [future.get(timeout=TIMEOUT_S) for future in futures]
    finally:
        producer.close(timeout=10)


def assert_acknowledged_in_order(samples: Sequence[Sample], metadata: Sequence) -> None:
    """Per partition, the acknowledged offsets (RecordMetadata) are 0, 1, 2... in send order."""
    support.assert_acknowledged_in_order(samples, [(m.partition, m.offset) for m in metadata])


@contextmanager
def consumer_for(bootstrap: str, **config) -> Iterator[KafkaConsumer]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **config,
    )
    try:
        yield consumer
    finally:
        consumer.close()


def poll_until(consumer: KafkaConsumer, done: Callable[[list[Got]], bool], what: str) -> list[Got]:
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while not done(got):
        deadline.check(f"{what} (read {len(got)} so far)")
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(got_from_record(r) for r in records)
    return got


def read_all(consumer: KafkaConsumer, topic: str, counts: dict[int, int]) -> list[Got]:
    """From the beginning of each partition until ``counts[p]`` records each."""
    partitions = [TopicPartition(topic, p) for p in sorted(counts)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()

    def done(got: list[Got]) -> bool:
        return all(consumer.position(tp) >= counts[tp.partition] for tp in partitions) and len(
            got
        ) >= sum(counts.values())

    got = poll_until(consumer, done, f"{sum(counts.values())} records of {topic}")
    assert len(got) == sum(counts.values())
    return got


# -- the adapter


class KafkaPython(ClientAdapter):
    name = "kafka-python-3"
    capabilities = frozenset(Capability)  # every one
    cross_codec = "gzip"
    idempotent_by_default = True
    missing_topic_error = r"KafkaTimeoutError: .*Failed to update metadata"

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
        config: dict[str, Any] = {"acks": acks if acks == "all" else int(acks)}
        if VERSION_2:
            assert not idempotent, "kafka-python 2.0.2 has no idempotent producer"
            config.update(max_in_flight_requests_per_connection=1, retries=5)
        elif idempotent is not None:
            config["enable_idempotence"] = idempotent
        metadata = produce(bootstrap, topic, samples, None if codec == "none" else codec, **config)
        return [(m.partition, m.offset) for m in metadata]

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        with consumer_for(bootstrap) as consumer:
            partitions = [TopicPartition(topic, p) for p in sorted(counts)]
            consumer.assign(partitions)
            for tp in partitions:
                seek(consumer, tp, (starts or {}).get(tp.partition, Edge.EARLIEST))
            ends = consumer.end_offsets(partitions) if None in counts.values() else {}
            read_of = dict.fromkeys(counts, 0)

            def done(got: list[Got]) -> bool:
                for g in got[sum(read_of.values()) :]:
                    read_of[g.partition] += 1
                return all(
                    consumer.position(tp) >= ends[tp]
                    if counts[tp.partition] is None
                    else read_of[tp.partition] >= counts[tp.partition]  # type: ignore[operator]
                    for tp in partitions
                )

            return poll_until(consumer, done, f"{dict(counts)} records of {topic}")

    def topics(self, bootstrap: str) -> set[str]:
        with admin_for(bootstrap) as admin:
            return set(admin.list_topics())

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        with admin_for(bootstrap) as admin:
            (description,) = admin.describe_topics([topic])
        if description["error_code"] == 3:  # UNKNOWN_TOPIC_OR_PARTITION
            return None
        assert description["error_code"] == 0, description
        # kafka-python 3 names the fields as the protocol does, 2.0.2 had names of its own.
        return {
            p.get("partition_index", p.get("partition")): p.get("leader_id", p.get("leader"))
            for p in description["partitions"]
        }

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        producer = KafkaProducer(bootstrap_servers=bootstrap, max_block_ms=3000)
        try:
            producer.send(topic, b"value").get(timeout=10)
        except KafkaError as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            producer.close(timeout=5)
        raise AssertionError(
            f"a record produced to {topic}, which does not exist, was acknowledged"
        )

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        with admin_for(bootstrap) as admin:
            try:
                admin.create_topics([NewTopic(topic, partitions, 1)], timeout_ms=30_000)
            except TopicAlreadyExistsError as exc:
                raise TopicAlreadyExists(str(exc)) from exc

    def watermarks(
        self, bootstrap: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[int, int]]:
        tps = [TopicPartition(topic, p) for p in partitions]
        with consumer_for(bootstrap) as consumer:
            first, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return {tp.partition: (first[tp], end[tp]) for tp in tps}

    def offsets_for_times(
        self, bootstrap: str, topic: str, times: Mapping[int, int]
    ) -> dict[int, tuple[int, int | None] | None]:
        with consumer_for(bootstrap) as consumer:
            found = consumer.offsets_for_times(
                {TopicPartition(topic, p): t for p, t in times.items()}
            )
        return {
            tp.partition: None if ot is None else (ot.offset, ot.timestamp)
            for tp, ot in found.items()
        }

    def committed(
        self, bootstrap: str, group: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, int | None]:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )
        try:
            return {p: consumer.committed(TopicPartition(topic, p)) for p in partitions}
        finally:
            consumer.close()

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> MemberEvents:
        return start_python_member(
            name, config.driver_config(name, self), __name__, log_dir=log_dir, client=self.name
        )


ADAPTER = KafkaPython()


@contextmanager
def admin_for(bootstrap: str) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        yield admin
    finally:
        admin.close()


def seek(consumer: KafkaConsumer, tp: TopicPartition, start: Start) -> None:
    if start == Edge.EARLIEST:
        consumer.seek_to_beginning(tp)
    elif start == Edge.LATEST:
        consumer.seek_to_end(tp)
    elif isinstance(start, Offset):
        consumer.seek(tp, start.offset)
    elif isinstance(start, AtTime):
        found = consumer.offsets_for_times({tp: start.timestamp_ms})[tp]
        if found is None:  # nothing at or after the time: the end
            consumer.seek_to_end(tp)
        else:
            consumer.seek(tp, found.offset)


# -- the group member (child side of interop_tests/group_driver.py)


def run_member(config: dict, commands: queue.Queue) -> None:
    from kafka import ConsumerRebalanceListener, OffsetAndMetadata

    topic = config["topic"]
    owned = Owned(config)
    options: dict[str, Any] = {
        "bootstrap_servers": config["bootstrap"],
        "group_id": config["group"],
        "client_id": config["name"],
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": config["session_timeout_ms"],
        "heartbeat_interval_ms": config["heartbeat_interval_ms"],
        "max_poll_interval_ms": config["max_poll_interval_ms"],
        "max_poll_records": MAX_POLL_RECORDS,
    }
    strategy = config["assignment"]
    if strategy == "range":
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        options["partition_assignment_strategy"] = [RangePartitionAssignor]
    elif strategy == "roundrobin":
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        options["partition_assignment_strategy"] = [RoundRobinPartitionAssignor]
    elif strategy == "cooperative-sticky":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

        options["partition_assignment_strategy"] = [CooperativeStickyAssignor]
    else:
        raise ValueError(f"unknown assignment {strategy!r}")
    if config.get("group_instance_id"):
        options["group_instance_id"] = config["group_instance_id"]

    # What this member returned and has not committed yet (the position after it, by
    # partition): committed after each poll, and before its partitions are taken away; a
    # commit refused by a rebalance is tried again.
    pending: dict[int, int] = {}
    batch = config["commit"] == "batch"

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            partitions = {tp.partition for tp in revoked}
            if batch:
                commit({p: o for p, o in pending.items() if p in partitions})
            for p in partitions:
                pending.pop(p, None)
            owned.change("revoked", sorted(partitions))

        def on_partitions_assigned(self, assigned):
            owned.change("assigned", [tp.partition for tp in assigned])

        def on_partitions_lost(self, lost):
            for tp in lost:
                pending.pop(tp.partition, None)
            owned.change("lost", [tp.partition for tp in lost])

    def offset_and_metadata(offset: int) -> OffsetAndMetadata:
        if len(OffsetAndMetadata._fields) == 3:  # kafka-python 3: leader_epoch
            return OffsetAndMetadata(offset, "", -1)
        return OffsetAndMetadata(offset, "")

    consumer = KafkaConsumer(**options)

    def commit(offsets: dict[int, int]) -> None:
        if not offsets:
            return
        try:
            consumer.commit(
                {TopicPartition(topic, p): offset_and_metadata(o) for p, o in offsets.items()}
            )
            emit({"type": "committed", "offsets": offsets})
            for p, o in offsets.items():
                if pending.get(p) == o:
                    del pending[p]
        except Exception as exc:
            emit({"type": "commit_error", "error": repr(exc)})

    # A leader rejoins when the metadata it assigned with differs from its latest, and
    # kafka-python 3.0.12 rebuilds that snapshot only when a metadata response arrives
    # after subscribe(); a first join that beats the response assigns from an empty one,
    # so the leader rejoins at once. That rejoin can strand it: if a poll() times out
    # while its SyncGroup is in flight, need_rejoin() turns False once it has assigned,
    # the finished join is never applied, and its heartbeats stay off (the coordinator
    # drops it after the session timeout while it goes on reading its partitions).
    # A blocking metadata refresh after subscribe() builds the snapshot before the join.
    consumer.subscribe([topic], listener=Listener())
    consumer.topics()
    emit({"type": "started"})
    try:
        while True:
            name, offsets = next_command(commands)
            if name == "close":
                break
            if name == "commit":
                commit(offsets)
            polled = consumer.poll(timeout_ms=int(POLL_S * 1000))
            records = [
                [r.partition, r.offset, key_text(r.key)] for rs in polled.values() for r in rs
            ]
            if records:
                emit({"type": "records", "records": records})
                pending.update({tp.partition: rs[-1].offset + 1 for tp, rs in polled.items() if rs})
            if batch:
                commit(dict(pending))
    finally:
        consumer.close()
    emit({"type": "closed"})


# -- the driver of another interpreter's kafka-python (kafka_python_2.py): JSON in, JSON out


def encode_call(op: str, **arguments: Any) -> dict:
    """A job for :func:`main`: the method's name and its arguments, as JSON."""
    job: dict[str, Any] = {"op": op, **arguments}
    if "samples" in job:
        job["samples"] = [sample_to_json(s) for s in job["samples"]]
    for key in ("counts", "starts", "times"):
        if job.get(key) is not None:
            job[key] = {str(p): v for p, v in job[key].items()}
    if job.get("starts") is not None:
        job["starts"] = {p: start_to_json(s) for p, s in job["starts"].items()}
    return job


def _decode_call(job: dict) -> tuple[str, dict[str, Any]]:
    arguments = {k: v for k, v in job.items() if k != "op"}
    if "samples" in arguments:
        arguments["samples"] = [sample_from_json(s) for s in arguments["samples"]]
    for key in ("counts", "starts", "times"):
        if arguments.get(key) is not None:
            arguments[key] = {int(p): v for p, v in arguments[key].items()}
    if arguments.get("starts") is not None:
        arguments["starts"] = {p: start_from_json(s) for p, s in arguments["starts"].items()}
    return job["op"], arguments


def _encode_answer(op: str, answer: Any) -> Any:
    if op == "read":
        return [got_to_json(g) for g in answer]
    if op == "topics":
        return sorted(answer)
    if isinstance(answer, dict):
        return [[p, v] for p, v in answer.items()]
    return answer


def decode_answer(op: str, answer: Any) -> Any:
    """What :func:`main` printed for ``op``, as the adapter's method returns it."""
    if op == "read":
        return [got_from_json(g) for g in answer]
    if op == "topics":
        return set(answer)
    if op == "produce":
        return [(p, o) for p, o in answer]
    if op in ("describe_topic", "committed"):
        return None if answer is None else {p: v for p, v in answer}
    if op in ("watermarks", "offsets_for_times"):
        return {p: None if v is None else tuple(v) for p, v in answer}
    return answer


def main() -> None:
    """One job on stdin, its answer on stdout: ``{"answer": ...}``, or ``{"error": ...}``
    with the exception's class name and text."""
    op, arguments = _decode_call(json.load(sys.stdin))
    try:
        if op == "version":
            answer: Any = kafka.__version__
        else:
            answer = _encode_answer(op, getattr(ADAPTER, op)(**arguments))
    except TopicAlreadyExists as exc:
        json.dump({"error": ["TopicAlreadyExists", str(exc)]}, sys.stdout)
        return
    json.dump({"answer": answer}, sys.stdout)


if __name__ == "__main__":
    main()
