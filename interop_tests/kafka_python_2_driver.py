"""Drive kafka-python 2.0.2 for the interop tests; runs in its own venv.

kafka-python 2 and 3 share the import name ``kafka``, so 2.0.2 lives in a venv
of its own (see ``KAFKA_PYTHON_2_VENV`` in ``test_kafka_python_2.py``) and the
tests run this script there: one JSON command on stdin, one JSON answer on
stdout. Bytes travel as base64 (see ``support.py``, imported from this
directory: stdlib only).

Commands (``op``): ``produce``, ``consume``, ``offsets``, ``create_topic``,
``produce_unknown``, ``version``.
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, KafkaTimeoutError
from support import Got, got_from_record, got_to_json, sample_from_json

TIMEOUT_S = 60.0


def produce(command: dict) -> dict:
    samples = [sample_from_json(s) for s in command["records"]]
    producer = KafkaProducer(
        bootstrap_servers=command["bootstrap"],
        compression_type=command.get("compression"),
        acks=command.get("acks", "all"),
        linger_ms=5,
        max_in_flight_requests_per_connection=1,  # keeps per-partition order through retries
        retries=5,
    )
    try:
        futures = [
            producer.send(
                command["topic"],
                key=s.key,
                value=s.value,
                headers=list(s.headers),
                partition=s.partition,
                timestamp_ms=s.timestamp,
            )
            for s in samples
        ]
        producer.flush(timeout=TIMEOUT_S)
        metadata = [future.get(timeout=TIMEOUT_S) for future in futures]
    finally:
        producer.close(timeout=10)
    return {"acks": [[m.partition, m.offset] for m in metadata]}


def new_consumer(bootstrap: str) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )


def consume(command: dict) -> dict:
    """From ``start`` (offset, or "beginning"/"end" per partition) until ``counts`` records each."""
    topic = command["topic"]
    counts = {int(p): n for p, n in command["counts"].items()}
    start = command.get("start", "beginning")
    consumer = new_consumer(command["bootstrap"])
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(counts)]
        consumer.assign(partitions)
        if start == "beginning":
            consumer.seek_to_beginning(*partitions)
        elif start == "end":
            consumer.seek_to_end(*partitions)
        else:
            for tp in partitions:
                consumer.seek(tp, int(start[str(tp.partition)]))
        positions = {tp.partition: consumer.position(tp) for tp in partitions}
        got: list[Got] = []
        deadline = time.monotonic() + TIMEOUT_S
        total = sum(counts.values())
        while len(got) < total:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(got)} of {total} records of {topic}")
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(got_from_record(r) for r in records)
        extra = consumer.poll(timeout_ms=200)
        got.extend(got_from_record(r) for records in extra.values() for r in records)
    finally:
        consumer.close()
    return {"positions": positions, "records": [got_to_json(g) for g in got]}


def offsets(command: dict) -> dict:
    """Beginning and end offsets, and offsets_for_times of ``times`` ({partition: ts})."""
    topic = command["topic"]
    consumer = new_consumer(command["bootstrap"])
    try:
        partitions = [TopicPartition(topic, int(p)) for p in command["partitions"]]
        beginning = consumer.beginning_offsets(partitions)
        end = consumer.end_offsets(partitions)
        found = consumer.offsets_for_times(
            {TopicPartition(topic, int(p)): ts for p, ts in command.get("times", {}).items()}
        )
        known = consumer.partitions_for_topic(topic)
    finally:
        consumer.close()
    return {
        "beginning": {tp.partition: o for tp, o in beginning.items()},
        "end": {tp.partition: o for tp, o in end.items()},
        "times": {
            tp.partition: None if ot is None else [ot.offset, ot.timestamp]
            for tp, ot in found.items()
        },
        "partitions": None if known is None else sorted(known),
    }


def create_topic(command: dict) -> dict:
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=command["bootstrap"])
    try:
        results = []
        for _ in range(command.get("times", 1)):
            try:
                admin.create_topics(
                    [NewTopic(command["topic"], command["partitions"], 1)], timeout_ms=10_000
                )
                results.append(None)
            except KafkaError as exc:
                results.append(type(exc).__name__)
        topics = admin.list_topics()
    finally:
        admin.close()
    return {"results": results, "listed": command["topic"] in topics}


def produce_unknown(command: dict) -> dict:
    producer = KafkaProducer(bootstrap_servers=command["bootstrap"], max_block_ms=3000)
    try:
        producer.send(command["topic"], b"value").get(timeout=10)
        error = None
    except (KafkaTimeoutError, KafkaError) as exc:
        error = [type(exc).__name__, str(exc)]
    finally:
        producer.close(timeout=5)
    consumer = new_consumer(command["bootstrap"])
    try:
        known = consumer.partitions_for_topic(command["topic"])
    finally:
        consumer.close()
    return {"error": error, "partitions": None if known is None else sorted(known)}


def version(command: dict) -> dict:
    return {"version": kafka.__version__, "python": sys.version}


OPERATIONS = {
    "produce": produce,
    "consume": consume,
    "offsets": offsets,
    "create_topic": create_topic,
    "produce_unknown": produce_unknown,
    "version": version,
}


def main() -> None:
    command = json.load(sys.stdin)
    answer = OPERATIONS[command["op"]](command)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
