"""``wirekafka perf produce|consume`` as a user runs them, against a broker subprocess.

The JSON summaries are checked against what a confluent-kafka client sees of the
topic afterwards; the progress line is checked in a real terminal (tmux).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from interop_tests.broker import PYTHONPATH
from interop_tests.readme import example_commands, readme_examples
from interop_tests.wirekafka_command import wirekafka_command

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


def _perf_json(*args: str) -> dict:
    result = wirekafka_command("perf", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def records_in(bootstrap: str, topic: str) -> int:
    """The records in the topic, from its partitions' offsets as a consumer reads them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "perf-test-watermarks"})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        total = 0
        for partition in metadata.topics[topic].partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def test_produce_then_consume_report_every_record(broker, topic_name):
    topic = topic_name()
    produced = _perf_json(
        "produce",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--num-records",
        "3000",
        "--record-size",
        "100",
    )
    assert produced["records_sent"] == 3000
    assert produced["records_failed"] == 0 and produced["errors"] == []
    assert records_in(broker.bootstrap, topic) == 3000
    assert produced["records_per_s"] > 0
    assert produced["mb_per_s"] == round(produced["records_per_s"] * 100 / MB, 6)
    latencies = [produced[f"latency_{name}_ms"] for name in ("p50", "p95", "p99", "p99_9", "max")]
    assert latencies == sorted(latencies) and latencies[0] > 0
    assert 0 < produced["latency_avg_ms"] <= produced["latency_max_ms"]

    consumed = _perf_json(
        "consume", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "3000"
    )
    assert consumed["records_consumed"] == 3000
    assert consumed["bytes_consumed"] == 300_000
    assert consumed["data_consumed_mb"] == round(300_000 / MB, 6)
    assert consumed["topic"] == topic and consumed["group"].startswith("perf-consumer-")
    assert 0 < consumed["rebalance_time_ms"] <= consumed["first_record_time_ms"]
    assert consumed["records_per_s"] > 0 and consumed["fetch_records_per_s"] > 0
    assert consumed["start_time"] < consumed["end_time"]


def test_acks_compression_and_producer_properties(broker, topic_name):
    for acks, compression in (("0", "zstd"), ("all", "gzip"), ("1", "none")):
        topic = topic_name(f"acks{acks}")
        produced = _perf_json(
            "produce",
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            "--num-records",
            "500",
            "--record-size",
            "1000",
            "--acks",
            acks,
            "--compression",
            compression,
            "--producer-property",
            "linger.ms=20",
            "--producer-props",
            "batch.num.messages=50",
            "client.id=perf-test",
        )
        assert produced["records_sent"] == 500, (acks, compression)
        assert records_in(broker.bootstrap, topic) == 500


def test_throughput_limits_the_rate(broker, topic_name):
    produced = _perf_json(
        "produce",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic_name(),
        "--num-records",
        "200",
        "--record-size",
        "10",
        "--throughput",
        "100",
    )
    assert produced["records_sent"] == 200
    # the 200th record's turn comes at 1.99 s
    assert 1.9 <= produced["elapsed_s"] < 6.0
    assert produced["records_per_s"] <= 106


def test_failed_deliveries_are_counted_and_exit_1(broker_factory, topic_name):
    small = broker_factory(settings={"message.max.bytes": "1000"})
    topic = topic_name()
    args = ("--bootstrap-server", small.bootstrap, "--topic", topic, "--num-records", "20")
    result = wirekafka_command("perf", "produce", *args, "--record-size", "2000", "--json")
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert summary["records_sent"] == 0 and summary["records_failed"] == 20
    assert summary["errors"] == [{"error": "MSG_SIZE_TOO_LARGE", "error_code": 10, "records": 20}]
    assert summary["latency_p99_ms"] is None
    assert "20 of 20 records failed" in result.stderr
    assert "MSG_SIZE_TOO_LARGE (error code 10)" in result.stderr
    assert "Traceback" not in result.stderr

    text = wirekafka_command("perf", "produce", *args, "--record-size", "2000")
    assert text.returncode == 1
    assert "0 records sent" in text.stdout
    assert "20 records failed: MSG_SIZE_TOO_LARGE (error code 10)" in text.stdout

    # records that fit go through on the same broker, in batches that fit
    one_per_batch = ("--producer-property", "batch.num.messages=1")
    assert (
        _perf_json("produce", *args, "--record-size", "100", *one_per_batch)["records_sent"] == 20
    )


def test_text_summaries_without_a_terminal(broker, topic_name):
    topic = topic_name()
    common = ("--bootstrap-server", broker.bootstrap, "--topic", topic)
    produced = wirekafka_command(
        "perf", "produce", *common, "--num-records", "1000", "--record-size", "50"
    )
    assert produced.returncode == 0, produced.stderr
    line = produced.stdout.strip()
    assert "\n" not in line  # the summary only: no progress line when stdout is a pipe
    assert re.fullmatch(
        r"1000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
        r"[\d.]+ ms max latency, [\d.]+ ms 50th, [\d.]+ ms 95th, [\d.]+ ms 99th, "
        r"[\d.]+ ms 99\.9th\.",
        line,
    ), line

    consumed = wirekafka_command("perf", "consume", *common, "--messages", "1000")
    assert consumed.returncode == 0, consumed.stderr
    header, values = consumed.stdout.strip().split("\n")
    columns = header.split(", ")
    assert columns[:10] == [
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
    ]
    row = dict(zip(columns, values.split(", "), strict=True))
    assert row["data.consumed.in.nMsg"] == "1000"
    assert row["data.consumed.in.MB"] == f"{50_000 / MB:.4f}"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}", row["start.time"])
    assert int(row["first.record.time.ms"]) >= int(row["rebalance.time.ms"])


def test_consume_times_out_when_records_never_come(broker, topic_name):
    topic = topic_name()
    common = ("--bootstrap-server", broker.bootstrap, "--topic", topic)
    _perf_json("produce", *common, "--num-records", "10", "--record-size", "10")
    # from the end of the log: the 10 records are behind it, and nothing more comes
    started = time.monotonic()
    latest = wirekafka_command(
        "perf", "consume", *common, "--messages", "10", "--from", "latest", "--timeout", "4"
    )
    assert latest.returncode == 1, latest.stderr
    assert time.monotonic() - started < 30
    assert "read 0 of 10 records" in latest.stderr
    assert "no record came in 4 s (--timeout)" in latest.stderr

    # more than there are: the 10 come, then the wait for the 11th runs out
    more = wirekafka_command("perf", "consume", *common, "--messages", "11", "--timeout", "8")
    assert more.returncode == 1, more.stderr
    assert "read 10 of 11 records" in more.stderr and "the next record" in more.stderr

    # a group that has read them starts after them; a new one from the start
    group = f"perf-{uuid.uuid4().hex}"
    assert _perf_json("consume", *common, "--messages", "10", "--group", group)["group"] == group
    assert _perf_json("consume", *common, "--messages", "10")["records_consumed"] == 10


def test_bad_usage_and_unreachable_broker(broker, topic_name):
    common = ("--bootstrap-server", broker.bootstrap, "--topic", topic_name())
    sizes = ("--num-records", "10", "--record-size", "10")
    cases = [
        (("produce", *common, *sizes, "--producer-property", "linger.ms"), 2, "expected KEY=VALUE"),
        (("produce", *common, *sizes, "--producer-property", "no.such=1"), 2, "no.such"),
        (("produce", *common, "--num-records", "0", "--record-size", "1"), 2, "positive"),
        (("produce", *common, *sizes, "--throughput", "0"), 2, "-1 for no limit"),
        (("produce", *common, *sizes, "--acks", "2"), 2, "invalid choice"),
        (("consume", *common, "--messages", "1", "--from", "middle"), 2, "invalid choice"),
        (("consume", *common, "--messages", "1", "--consumer-property", "x"), 2, "KEY=VALUE"),
        (
            (
                "produce",
                "--bootstrap-server",
                "127.0.0.1:1",
                "--topic",
                "t",
                *sizes,
                "--timeout",
                "2",
            ),
            3,
            "_TRANSPORT",
        ),
        (
            (
                "consume",
                "--bootstrap-server",
                "127.0.0.1:1",
                "--topic",
                "t",
                "--messages",
                "1",
                "--timeout",
                "2",
            ),
            3,
            "127.0.0.1:1",
        ),
    ]
    for args, exit_code, message in cases:
        result = wirekafka_command("perf", *args)
        assert result.returncode == exit_code, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_consume_of_a_missing_topic_names_the_error(broker, topic_name):
    result = wirekafka_command(
        "perf",
        "consume",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic_name("none"),
        "--messages",
        "5",
    )
    assert result.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PART (error code 3)" in result.stderr


def test_help():
    for command in ("produce", "consume"):
        result = wirekafka_command("perf", command, "--help")
        assert result.returncode == 0
        assert "--topic" in result.stdout and "--bootstrap-server" in result.stdout
    assert "--throughput" in wirekafka_command("perf", "produce", "--help").stdout
    assert "--from" in wirekafka_command("perf", "consume", "--help").stdout


_PROGRESS = re.compile(
    r"^(\d+)/300 records sent, [\d,.]+ msg/s, [\d.]+ MB/s(, p50 [\d.]+ ms, p99 [\d.]+ ms)?$",
    re.MULTILINE,
)


def test_progress_line_in_a_terminal(broker, topic_name):
    topic = topic_name()
    session = "perf"
    command = shlex.join(
        [
            "env",
            "-u",
            "COLUMNS",  # the terminal's own width, not the test runner's
            "-u",
            "LINES",
            f"PYTHONPATH={PYTHONPATH}",
            sys.executable,
            "-m",
            "wirekafka",
            "perf",
            "produce",
            "--bootstrap-server",
            broker.bootstrap,
            "--topic",
            topic,
            "--num-records",
            "300",
            "--record-size",
            "100",
            "--throughput",
            "100",
        ]
    )
    # a server of the test's own, its socket in a short-lived directory
    socket_dir = Path(tempfile.mkdtemp(prefix="wirekafka-tmux-"))
    tmux = ["tmux", "-S", str(socket_dir / "socket")]
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "160",
            "-y",
            "40",
            f"{command}; sleep 30",
        ],
        check=True,
        cwd=ROOT,
    )
    try:
        progress: list[tuple[int, str]] = []  # (records sent, the whole line), as captured
        screen = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", session],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            progress += [(int(m.group(1)), m.group(0)) for m in _PROGRESS.finditer(screen)]
            if "300 records sent," in screen and "ms 99.9th." in screen:
                break
            time.sleep(0.3)
        assert "ms 99.9th." in screen, screen
        assert re.search(r"^300 records sent, [\d.]+ records/sec", screen, re.MULTILINE), screen
        # the line was on screen while the run went, and its figures moved
        during = {line for sent, line in progress if sent < 300}
        assert len(during) >= 3, (progress, screen)
        counts = [sent for sent, _ in progress]
        assert counts == sorted(counts) and counts[0] < 200, counts
        assert any(" p99 " in line for line in during)  # latency figures once records came
        # at the end it stays, with every record
        last = _PROGRESS.search(screen)
        assert last is not None and last.group(1) == "300", screen
        assert screen.count("records sent") == 2  # one progress line, one summary
    finally:
        subprocess.run([*tmux, "kill-session", "-t", session], check=False, capture_output=True)
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
        shutil.rmtree(socket_dir, ignore_errors=True)


def test_readme_example(broker):
    (example,) = readme_examples("Load tests: perf")
    commands = example_commands(example, broker.bootstrap)
    assert [argv[:3] for argv in commands] == [
        ["wirekafka", "perf", "produce"],
        ["wirekafka", "perf", "consume"],
    ]
    produced = wirekafka_command(*commands[0][1:])
    assert produced.returncode == 0, produced.stderr
    assert produced.stdout.startswith("50000 records sent, "), produced.stdout
    consumed = wirekafka_command(*commands[1][1:])
    assert consumed.returncode == 0, consumed.stderr
    header, values = consumed.stdout.strip().split("\n")
    row = dict(zip(header.split(", "), values.split(", "), strict=True))
    assert row["data.consumed.in.nMsg"] == "50000"
    assert row["data.consumed.in.MB"] == f"{50000 * 100 / MB:.4f}"
