"""``wirekafka dump-log`` on a running broker's files: what a client produced is there."""

from __future__ import annotations

import json
import re
import struct

from confluent_kafka import Producer

from interop_tests.kafka_tools import run_tool
from interop_tests.readme import example_commands, readme_examples
from interop_tests.wirekafka_command import wirekafka_command
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog

SEGMENT = "00000000000000000000"


def produce(bootstrap: str, topic: str, keys: list[str], **config: str) -> None:
    """Each key with value ``value-of-<key>`` and a header, to partition 0."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for key in keys:
        producer.produce(
            topic, key=key, value=f"value-of-{key}", partition=0, headers=[("source", b"test")]
        )
    assert producer.flush(30) == 0


def test_dump_log_reads_what_a_client_produced(broker, topic_name):
    topic = topic_name("dump")
    keys = [f"key-{i}" for i in range(200)]
    produce(broker.bootstrap, topic, keys[:100], **{"compression.type": "lz4"})
    produce(broker.bootstrap, topic, keys[100:])
    partition_dir = broker.data_dir / f"{topic}-0"

    result = wirekafka_command("dump-log", "--print-data", "--json", str(partition_dir))

    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["problem_count"] == 0
    log, index, time_index = doc["files"]
    assert (log["path"], index["kind"], time_index["kind"]) == (
        str(partition_dir / f"{SEGMENT}.log"),
        "index",
        "timeindex",
    )
    batches = log["batches"]
    assert sum(batch["record_count"] for batch in batches) == 200
    assert {batch["compression"] for batch in batches} == {"lz4", "none"}
    assert all(batch["crc_valid"] and batch["magic"] == 2 for batch in batches)
    records = [record for batch in batches for record in batch["records"]]
    assert [record["offset"] for record in records] == list(range(200))
    assert [record["key"] for record in records] == keys
    assert [record["value"] for record in records] == [f"value-of-{key}" for key in keys]
    assert records[0]["headers"] == [
        {"key": "source", "value_size": 4, "value": "test", "value_encoding": "utf-8"}
    ]
    assert log["valid_bytes"] == sum(batch["size_bytes"] for batch in batches)
    assert log["zero_bytes"] == log["size_bytes"] - log["valid_bytes"]  # the active segment


def test_the_readme_example(broker, tmp_path, monkeypatch):
    produce(broker.bootstrap, "orders", ["order-1", "order-2"])
    (tmp_path / "wirekafka-data").symlink_to(broker.data_dir)
    monkeypatch.chdir(tmp_path)  # the example names the default data dir, ./wirekafka-data
    [example] = readme_examples("Reading log files: dump-log")
    [args] = example_commands(example, broker.bootstrap)
    assert args[0] == "wirekafka"

    result = wirekafka_command(*args[1:])

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Dumping wirekafka-data/orders-0/{SEGMENT}.log"
    records = [line for line in lines if line.startswith("| offset: ")]
    assert [line.split()[2] for line in records] == ["0", "1"]
    assert records[0].endswith("key: order-1 payload: value-of-order-1 headers: [source=test]")
    assert records[1].endswith("key: order-2 payload: value-of-order-2 headers: [source=test]")


_FIELD = re.compile(r"(\w+): (\S+)")


def fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def test_the_batch_and_record_lines_agree_with_kafkas_dump_log(tmp_path):
    """Apache Kafka's kafka-dump-log and wirekafka's read the same closed segment alike."""
    log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(), lambda: 1_700_000_000_000)
    for i, codec in enumerate(CompressionType):
        records = [
            Record(
                j, 1_700_000_000_000 + 10 * i + j, b"k%d" % j, b"v" * j, [("h", b"x"), ("g", None)]
            )
            for j in range(3)
        ]
        log.append(bytearray(encode_batch(records, compression=codec, partition_leader_epoch=2)))
    marker = encode_batch(
        [Record(15, 1_700_000_000_100, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 7))],
        producer_id=9,
        producer_epoch=1,
        is_transactional=True,
        is_control=True,
    )
    log.append_as_follower(marker)
    log.close()
    path = str(tmp_path / "t-0" / f"{SEGMENT}.log")

    kafka = run_tool("kafka-dump-log", "--files", path, "--deep-iteration").lines
    ours = wirekafka_command("dump-log", "--deep", path)

    assert ours.returncode == 0, ours.stdout + ours.stderr
    ours_lines = [line for line in ours.stdout.splitlines() if line.startswith(("|", "base"))]
    kafka_lines = [line for line in kafka if line.startswith(("|", "base"))]
    assert len(ours_lines) == len(kafka_lines) == 6 + 5 * 3 + 1
    for mine, theirs in zip(ours_lines, kafka_lines, strict=True):
        mine_fields, their_fields = fields(mine), fields(theirs)
        common = mine_fields.keys() & their_fields.keys()
        assert len(common) >= 6, (mine, theirs)
        assert {k: mine_fields[k] for k in common} == {k: their_fields[k] for k in common}
    assert "endTxnMarker: COMMIT coordinatorEpoch: 7" in ours_lines[-1]
    assert "endTxnMarker: COMMIT coordinatorEpoch: 7" in kafka_lines[-1]
