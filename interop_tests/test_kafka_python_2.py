"""kafka-python 2.0.2 against wirekafka, driven in a venv of its own.

kafka-python 2.0.2 uses fixed request versions whatever the broker advertises
(Metadata v1, Produce up to v7, Fetch v4, ListOffsets v1) and no idempotence.
It shares the import name ``kafka`` with kafka-python 3, so it runs in a
separate venv, by default ``.venv/kafka-python-2`` at the top of the repo
(inside the gitignored dev venv), or the interpreter named by
``WIREKAFKA_KAFKA_PYTHON_2``; each test sends one JSON command to
``kafka_python_2_driver.py`` there.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.support import (
    CODECS,
    PARTITIONS,
    RECORDS,
    Got,
    Sample,
    assert_acknowledged_in_order,
    assert_same_records,
    by_partition,
    codec_id,
    counts_of,
    got_from_json,
    make_samples,
    sample_to_json,
)

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "kafka_python_2_driver.py"
VENV = ROOT / ".venv" / "kafka-python-2"
INSTALL = (
    f"python3 -m venv {VENV.relative_to(ROOT)} && "
    f"{VENV.relative_to(ROOT)}/bin/pip install kafka-python==2.0.2 python-snappy lz4 zstandard xxhash"
)
TIMEOUT_S = 180


def interpreter() -> Path:
    configured = os.environ.get("WIREKAFKA_KAFKA_PYTHON_2")
    return Path(configured) if configured else VENV / "bin" / "python"


def drive(command: dict) -> dict:
    python = interpreter()
    if not python.exists():
        pytest.fail(f"kafka-python 2.0.2's venv is missing ({python}); create it with:\n{INSTALL}")
    result = subprocess.run(
        [str(python), str(DRIVER)],
        input=json.dumps(command).encode(),
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
        cwd=ROOT,
    )
    if result.returncode != 0:
        pytest.fail(
            f"kafka-python 2 driver failed on {command['op']} (exit {result.returncode}):\n"
            + result.stderr.decode(errors="replace")[-6000:]
        )
    return json.loads(result.stdout)


@pytest.fixture(scope="module", autouse=True)
def kafka_python_2() -> str:
    version = drive({"op": "version"})["version"]
    assert version == "2.0.2", f"{interpreter()} has kafka-python {version}; expected 2.0.2"
    return version


def produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], codec: str | None = None
) -> list[tuple[int, int]]:
    answer = drive(
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": topic,
            "compression": codec,
            "records": [sample_to_json(s) for s in samples],
        }
    )
    return [(p, o) for p, o in answer["acks"]]


def consume(
    bootstrap: str, topic: str, counts: dict[int, int], start: object = "beginning"
) -> tuple[dict[int, int], list[Got]]:
    answer = drive(
        {"op": "consume", "bootstrap": bootstrap, "topic": topic, "counts": counts, "start": start}
    )
    positions = {int(p): o for p, o in answer["positions"].items()}
    return positions, [got_from_json(g) for g in answer["records"]]


@pytest.mark.parametrize("codec", CODECS, ids=codec_id)
def test_produce_read_back_and_seek(
    broker: Broker, topic_name: Callable[[str], str], codec: str | None
) -> None:
    topic = topic_name(codec_id(codec))  # auto-created (Metadata v1 asks for it)
    samples = make_samples(RECORDS, f"kp2-{codec_id(codec)}")
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples, codec))
    counts = counts_of(samples)

    positions, got = consume(broker.bootstrap, topic, counts)
    assert positions == dict.fromkeys(range(PARTITIONS), 0)
    assert_same_records(samples, got, timestamps=True, what=f"kafka-python 2.0.2, {codec}")

    t0 = samples[0].timestamp
    assert t0 is not None
    answer = drive(
        {
            "op": "offsets",
            "bootstrap": broker.bootstrap,
            "topic": topic,
            "partitions": list(range(PARTITIONS)),
            "times": {0: t0 + 3 * 3210, 1: t0 + 3 * 7 + 2, 2: t0 + 3 * 9000},
        }
    )
    assert answer["partitions"] == list(range(PARTITIONS))
    assert {int(p): o for p, o in answer["beginning"].items()} == dict.fromkeys(
        range(PARTITIONS), 0
    )
    assert {int(p): o for p, o in answer["end"].items()} == counts
    times = {int(p): v for p, v in answer["times"].items()}
    assert times == {0: [3210, t0 + 3 * 3210], 1: [8, t0 + 3 * 8 + 1], 2: None}

    # Seek to the end: only what comes after; seek to an offset found by time.
    extra = [
        Sample(p, f"extra-{p}".encode(), b"after the end", (("h", b"v"),), None) for p in (0, 2)
    ]
    assert produce(broker.bootstrap, topic, extra, codec) == [(0, counts[0]), (2, counts[2])]
    positions, after_end = consume(broker.bootstrap, topic, {0: 0, 1: 0, 2: 0}, "end")
    assert positions == {0: counts[0] + 1, 1: counts[1], 2: counts[2] + 1}
    assert after_end == []
    positions, from_time = consume(broker.bootstrap, topic, {0: counts[0] + 1 - 3210}, {"0": 3210})
    assert positions == {0: 3210}
    partition_0 = by_partition(samples)[0]
    assert [(g.offset, g.key, g.value) for g in from_time] == [
        (3210 + i, s.key, s.value) for i, s in enumerate(partition_0[3210:])
    ] + [(counts[0], b"extra-0", b"after the end")]


def test_admin_created_topic(broker: Broker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name()
    answer = drive(
        {
            "op": "create_topic",
            "bootstrap": broker.bootstrap,
            "topic": topic,
            "partitions": 4,
            "times": 2,
        }
    )
    assert answer == {"results": [None, "TopicAlreadyExistsError"], "listed": True}
    samples = make_samples(800, "kp2-admin", partitions=4)
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples, "gzip"))
    _, got = consume(broker.bootstrap, topic, counts_of(samples, 4))
    assert_same_records(samples, got, timestamps=True)


def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name()
    samples = make_samples(30, "kp2-auto")
    assert_acknowledged_in_order(samples, produce(broker.bootstrap, topic, samples))
    answer = drive(
        {"op": "offsets", "bootstrap": broker.bootstrap, "topic": topic, "partitions": [0]}
    )
    assert answer["partitions"] == list(range(PARTITIONS))
    _, got = consume(broker.bootstrap, topic, counts_of(samples))
    assert_same_records(samples, got, timestamps=True)


def test_unknown_topic_without_auto_create(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    topic = topic_name()
    answer = drive({"op": "produce_unknown", "bootstrap": broker.bootstrap, "topic": topic})
    assert answer["error"] is not None, "kafka-python 2 produced to a topic that does not exist"
    name, message = answer["error"]
    assert name == "KafkaTimeoutError", answer
    assert "Failed to update metadata" in message
    assert answer["partitions"] is None
