"""``wirekafka produce`` and ``wirekafka consume`` as subprocesses against a broker."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from interop_tests.broker import PYTHONPATH, Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.readme import readme_examples
from interop_tests.sh_example import run_sh_example
from interop_tests.wirekafka_command import Bootstrapped, wirekafka_command

IDLE_S = "5"  # --idle-timeout of consumes that must see every record before they end
QUIET_S = "1.5"  # --idle-timeout of consumes that must see nothing
UNREACHABLE_TIMEOUT_S = 2.0


def command(
    broker: Bootstrapped, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return wirekafka_command(*args, "--bootstrap-server", broker.bootstrap, input=input)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def create(broker: Bootstrapped, topic: str, partitions: int = 1, *configs: str) -> None:
    config_args = [arg for config in configs for arg in ("--config", config)]
    ok(command(broker, "topics", "create", topic, "--partitions", str(partitions), *config_args))


def produce(broker: Bootstrapped, topic: str, lines: list[str], *args: str) -> dict[str, Any]:
    """Send ``lines``; the --json summary."""
    text = "".join(f"{line}\n" for line in lines)
    result = ok(command(broker, "produce", "--topic", topic, "--json", *args, input=text))
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def consume_json(broker: Bootstrapped, topic: str, *args: str) -> list[dict[str, Any]]:
    result = ok(command(broker, "consume", "--topic", topic, "--format", "json", *args))
    return [json.loads(line) for line in result.stdout.splitlines()]


def without_timestamps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for record in records:
        assert record["timestamp_type"] == "CreateTime"
        assert isinstance(record["timestamp"], int)
    return [
        {k: v for k, v in record.items() if k not in ("timestamp", "timestamp_type")}
        for record in records
    ]


def test_keys_values_and_headers_come_back_exactly(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    topic = topic_name()
    create(broker, topic, 3)
    lines = [f"key-{i}:value {i}" for i in range(20)] + [":empty key", "k:a:b", "no-value:"]
    summary = produce(
        broker,
        topic,
        lines,
        "--key-separator",
        ":",
        "--partition",
        "1",
        "--header",
        "source=test",
        "--header",
        "trace=",
        "--header",
        "source=again",
    )
    assert summary == {"topic": topic, "records_sent": 23, "records_failed": 0, "errors": {}}
    records = consume_json(
        broker, topic, "--from", "earliest", "--max-messages", "23", "--idle-timeout", IDLE_S
    )
    headers = [
        {"key": "source", "value": "test"},
        {"key": "trace", "value": ""},
        {"key": "source", "value": "again"},
    ]
    expected = [
        {
            "topic": topic,
            "partition": 1,
            "offset": offset,
            "key": line.split(":", 1)[0],
            "value": line.split(":", 1)[1],
            "headers": headers,
        }
        for offset, line in enumerate(lines)
    ]
    assert without_timestamps(records) == expected


def test_per_line_headers_as_kafkas_console_producer_reads_them(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    topic = topic_name()
    create(broker, topic, 1)
    lines = [
        "app:web,trace:t1\tuser-1\tclicked",
        "app:cli\tNULL\tscrolled",  # a null key
        "NULL\tuser-2\tNULL",  # no headers, a null value (a tombstone)
        "app:NULL,app:x:y\tuser-3\tread",  # a null header value; a repeated key
    ]
    properties = ["parse.headers=true", "parse.key=true", "null.marker=NULL"]
    property_args = [arg for p in properties for arg in ("--property", p)]
    summary = produce(broker, topic, lines, *property_args, "--header", "source=test")
    assert summary["records_sent"] == 4
    records = consume_json(
        broker, topic, "--from", "earliest", "--max-messages", "4", "--idle-timeout", IDLE_S
    )
    source = {"key": "source", "value": "test"}  # --header comes first
    assert [(r["key"], r["value"], r["headers"]) for r in records] == [
        ("user-1", "clicked", [source, {"key": "app", "value": "web"}, {"key": "trace", "value": "t1"}]),
        (None, "scrolled", [source, {"key": "app", "value": "cli"}]),
        ("user-2", None, [source]),
        ("user-3", "read", [source, {"key": "app", "value": None}, {"key": "app", "value": "x:y"}]),
    ]  # fmt: skip

    other = ["parse.headers=true", "headers.delimiter=|", "headers.separator=;",
             "headers.key.separator=="]  # fmt: skip
    other_args = [arg for p in other for arg in ("--property", p)]
    produce(broker, topic, ["a=1;b=2|value|with|bars"], *other_args)
    [last] = consume_json(
        broker, topic, "--from", "4", "--max-messages", "1", "--idle-timeout", IDLE_S
    )
    assert (last["key"], last["value"], last["headers"]) == (
        None, "value|with|bars", [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}],
    )  # fmt: skip

    bad = command(broker, "produce", "--topic", topic, *property_args, input="a:1\tk\tv\nb\tk\tv\n")
    assert bad.returncode == 2
    assert "line 2: header 'b' has no header key separator ':'" in bad.stderr
    assert "1 records sent" in bad.stderr  # the lines before it are sent
    clash = command(broker, "produce", "--topic", topic, "--property", "headers.separator=\t",
                    "--property", "parse.headers=true", input="x\n")  # fmt: skip
    assert clash.returncode == 2
    assert "headers.delimiter and headers.separator may not be equal" in clash.stderr


def test_keyed_records_spread_over_partitions_by_key(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    topic = topic_name()
    create(broker, topic, 3)
    lines = [f"user-{i % 7}\tevent {i}" for i in range(60)]
    assert produce(broker, topic, lines, "--key-separator", "\t")["records_sent"] == 60
    records = consume_json(
        broker, topic, "--from", "earliest", "--max-messages", "60", "--idle-timeout", IDLE_S
    )
    assert sorted(r["value"] for r in records) == sorted(line.split("\t")[1] for line in lines)
    partition_of: dict[str, int] = {}
    for partition in range(3):
        mine = [r for r in records if r["partition"] == partition]
        assert [r["offset"] for r in mine] == list(range(len(mine)))
        # a partition holds its records in the order they were sent
        assert mine == sorted(mine, key=lambda r: int(r["value"].split()[1]))
        for record in mine:
            assert partition_of.setdefault(record["key"], partition) == partition
    assert len(set(partition_of.values())) > 1
    assert all(r["headers"] == [] for r in records)


def test_from_offset_and_timestamp(broker: Broker, topic_name: Callable[..., str]) -> None:
    topic = topic_name()
    create(broker, topic, 2)
    produce(broker, topic, [f"early {i}" for i in range(5)], "--partition", "0")
    time.sleep(0.05)
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)
    produce(broker, topic, [f"late {i}" for i in range(5)], "--partition", "0")
    produce(broker, topic, ["other"], "--partition", "1")

    from_offset = consume_json(
        broker,
        topic,
        "--from",
        "3",
        "--partition",
        "0",
        "--idle-timeout",
        IDLE_S,
        "--max-messages",
        "7",
    )
    assert [(r["offset"], r["value"]) for r in from_offset] == [
        (3, "early 3"),
        (4, "early 4"),
        *((5 + i, f"late {i}") for i in range(5)),
    ]

    from_ms = consume_json(
        broker, topic, "--from", f"@{boundary_ms}", "--idle-timeout", IDLE_S, "--max-messages", "6"
    )
    # partition 1's only record came after the boundary too
    assert sorted((r["partition"], r["offset"], r["value"]) for r in from_ms) == [
        *((0, 5 + i, f"late {i}") for i in range(5)),
        (1, 0, "other"),
    ]
    assert all(r["timestamp"] >= boundary_ms for r in from_ms)

    iso = datetime.fromtimestamp(boundary_ms / 1000, UTC).isoformat(timespec="milliseconds")
    from_iso = consume_json(
        broker,
        topic,
        "--from",
        f"@{iso}",
        "--partition",
        "0",
        "--idle-timeout",
        IDLE_S,
        "--max-messages",
        "5",
    )
    assert [r["value"] for r in from_iso] == [f"late {i}" for i in range(5)]

    later_ms = int(time.time() * 1000) + 3_600_000
    assert consume_json(broker, topic, "--from", f"@{later_ms}", "--idle-timeout", QUIET_S) == []
    assert consume_json(broker, topic, "--from", "latest", "--idle-timeout", QUIET_S) == []
    everything = consume_json(
        broker, topic, "--from", "earliest", "--idle-timeout", IDLE_S, "--max-messages", "11"
    )
    assert sorted((r["partition"], r["offset"]) for r in everything) == [
        *((0, i) for i in range(10)),
        (1, 0),
    ]


def test_group_commits_what_it_printed(broker: Broker, topic_name: Callable[..., str]) -> None:
    topic, group = topic_name(), topic_name("group")
    create(broker, topic, 2)
    produce(broker, topic, [f"first {i}" for i in range(4)])

    def group_values(*args: str) -> list[str]:
        records = consume_json(broker, topic, "--group", group, "--from", "earliest", *args)
        return [r["value"] for r in records]

    assert len(group_values("--max-messages", "3")) == 3
    rest = group_values("--idle-timeout", IDLE_S)
    assert len(rest) == 1  # the one record the first run did not print
    assert group_values("--idle-timeout", QUIET_S) == []  # nothing new
    produce(broker, topic, ["second 0", "second 1"])
    assert sorted(group_values("--idle-timeout", IDLE_S)) == ["second 0", "second 1"]
    # without a group nothing is committed: every run starts from --from again
    for _ in range(2):
        assert (
            len(
                consume_json(
                    broker,
                    topic,
                    "--from",
                    "earliest",
                    "--idle-timeout",
                    IDLE_S,
                    "--max-messages",
                    "6",
                )
            )
            == 6
        )


CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # a batch's attributes & 7


def _stored_batches(broker: Broker, topic: str) -> list[tuple[int, int]]:
    """``(size in bytes, compression codec)`` of each record batch in the
    partition's log files (which are preallocated: zeros follow the last batch)."""
    batches = []
    for path in sorted((broker.data_dir / f"{topic}-0").glob("*.log")):
        data = path.read_bytes()
        position = 0
        while position + 23 <= len(data):
            length = int.from_bytes(data[position + 8 : position + 12], "big")
            if length == 0:
                break
            attributes = int.from_bytes(data[position + 21 : position + 23], "big")
            batches.append((12 + length, attributes & 7))
            position += 12 + length
    return batches


def test_compression(broker: Broker, topic_name: Callable[..., str]) -> None:
    lines = [f"{i:04d} " + "compressible " * 80 for i in range(100)]
    size = sum(len(line) for line in lines)
    stored = {}
    for codec, codec_id in CODECS.items():
        topic = topic_name(codec)
        create(broker, topic)
        summary = produce(broker, topic, lines, "--compression", codec, "--acks", "all")
        assert summary["records_sent"] == 100
        records = consume_json(
            broker, topic, "--from", "earliest", "--max-messages", "100", "--idle-timeout", IDLE_S
        )
        assert [r["value"] for r in records] == lines
        batches = _stored_batches(broker, topic)
        assert {batch_codec for _, batch_codec in batches} == {codec_id}
        stored[codec] = sum(batch_size for batch_size, _ in batches)
    assert stored["none"] > size
    for codec in CODECS.keys() - {"none"}:
        assert stored[codec] < size / 4, stored


def test_bytes_that_are_not_utf8(
    broker: Broker, topic_name: Callable[..., str], tmp_path: Path
) -> None:
    topic = topic_name()
    create(broker, topic)
    records_file = tmp_path / "records"
    records_file.write_bytes(b"\xff\xfe:\x80value\r\ntext key:caf\xc3\xa9\n")
    ok(
        command(
            broker, "produce", "--topic", topic, "--file", str(records_file), "--key-separator", ":"
        )
    )
    records = without_timestamps(
        consume_json(
            broker, topic, "--from", "earliest", "--max-messages", "2", "--idle-timeout", IDLE_S
        )
    )
    assert records[0]["key"] == base64.b64encode(b"\xff\xfe").decode()
    assert records[0]["key_encoding"] == "base64"
    assert base64.b64decode(records[0]["value"]) == b"\x80value"
    assert records[0]["value_encoding"] == "base64"
    assert records[1] == {
        "topic": topic,
        "partition": 0,
        "offset": 1,
        "key": "text key",
        "value": "café",
        "headers": [],
    }
    raw = ok(
        command(
            broker,
            "consume",
            "--topic",
            topic,
            "--from",
            "1",
            "--print-key",
            "--key-separator",
            " => ",
            "--max-messages",
            "1",
            "--idle-timeout",
            IDLE_S,
        )
    )
    assert raw.stdout == "text key => café\n"
    assert raw.stderr == "wirekafka consume: 1 records\n"


def test_raw_format_prints_values(broker: Broker, topic_name: Callable[..., str]) -> None:
    topic = topic_name()
    create(broker, topic)
    produce(broker, topic, ["one", "", "three"])
    raw = ok(
        command(
            broker,
            "consume",
            "--topic",
            topic,
            "--from",
            "earliest",
            "--max-messages",
            "3",
            "--idle-timeout",
            IDLE_S,
        )
    )
    assert raw.stdout == "one\n\nthree\n"
    keyed = ok(
        command(
            broker,
            "consume",
            "--topic",
            topic,
            "--from",
            "earliest",
            "--print-key",
            "--max-messages",
            "1",
            "--idle-timeout",
            IDLE_S,
        )
    )
    assert keyed.stdout == "null\tone\n"


def test_ctrl_c_closes_the_consumer_and_commits(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    topic, group = topic_name(), topic_name("group")
    create(broker, topic)
    produce(broker, topic, ["a", "b", "c"])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wirekafka",
            "consume",
            "--topic",
            topic,
            "--group",
            group,
            "--from",
            "earliest",
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    try:
        assert process.stdout is not None
        printed = [process.stdout.readline() for _ in range(3)]
        assert printed == ["a\n", "b\n", "c\n"]
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert out == ""
    assert err == "wirekafka consume: 3 records\n"
    second = consume_json(
        broker, topic, "--group", group, "--from", "earliest", "--idle-timeout", QUIET_S
    )
    assert second == []


def test_a_line_without_the_key_separator(broker: Broker, topic_name: Callable[..., str]) -> None:
    topic = topic_name()
    create(broker, topic)
    result = command(
        broker,
        "produce",
        "--topic",
        topic,
        "--key-separator",
        "=",
        "--json",
        input="a=1\nb=2\nthree\nd=4\n",
    )
    assert result.returncode == 2
    assert "line 3 has no key separator '='" in result.stderr
    assert json.loads(result.stdout)["records_sent"] == 2
    records = consume_json(
        broker, topic, "--from", "earliest", "--max-messages", "2", "--idle-timeout", IDLE_S
    )
    assert [(r["key"], r["value"]) for r in records] == [("a", "1"), ("b", "2")]


def test_a_failed_delivery_exits_1_naming_the_error(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    topic = topic_name()
    create(broker, topic, 1, "max.message.bytes=2000")
    lines = ["small", "x" * 5000, "small too"]
    result = command(
        broker,
        "produce",
        "--topic",
        topic,
        "--json",
        "--property",
        "linger.ms=0",
        "--property",
        "batch.num.messages=1",
        input="\n".join(lines),
    )
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert summary["records_sent"] == 2
    assert summary["records_failed"] == 1
    assert list(summary["errors"]) == ["MSG_SIZE_TOO_LARGE"]
    assert "MSG_SIZE_TOO_LARGE" in result.stderr and topic in result.stderr


def test_unknown_topic_with_auto_create_off(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    produced = command(broker, "produce", "--topic", "nowhere", input="x\n")
    assert produced.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PART" in produced.stderr and "'nowhere'" in produced.stderr
    consumed = command(broker, "consume", "--topic", "nowhere", "--idle-timeout", QUIET_S)
    assert consumed.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PART" in consumed.stderr
    assert command(broker, "topics", "list", "--json").stdout.strip() == "[]"


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_an_unreachable_broker_exits_3() -> None:
    address = f"127.0.0.1:{_unused_port()}"
    for args, stdin in (
        (["produce", "--topic", "t"], "x\n"),
        (["consume", "--topic", "t", "--idle-timeout", "60"], None),
    ):
        began = time.monotonic()
        result = wirekafka_command(
            *args,
            "--bootstrap-server",
            address,
            "--timeout",
            str(UNREACHABLE_TIMEOUT_S),
            input=stdin,
        )
        assert result.returncode == 3, result.stderr
        assert address in result.stderr and "Traceback" not in result.stderr
        assert time.monotonic() - began < UNREACHABLE_TIMEOUT_S + 10


def test_readme_example(broker: Broker) -> None:
    [example] = readme_examples("Producing and consuming")
    result = run_sh_example(example, broker.bootstrap)
    assert result.returncode == 0, result.stdout + result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted((r["key"], r["value"]) for r in records) == [
        ("alice", "clicked"),
        ("bob", "scrolled"),
    ]
    assert all(r["headers"] == [{"key": "source", "value": "web"}] for r in records)
