"""The ``wirekafka`` tools against Apache Kafka 4.3 itself, as subprocesses.

One Apache Kafka for the module (tools/apache_kafka.py, KRaft, jar set
``kafka``), with ``auto.create.topics.enable=false`` so that a topic the
tools are told about and Kafka does not have is an error, not a new topic.
Each subcommand runs as a user runs it (``wirekafka_command``) with the
helpers of the tests that run it against wirekafka (test_cli_topics.py,
test_cli_produce_consume.py, test_cli_groups.py, test_cli_perf.py); where
Kafka answers otherwise than wirekafka, these tests hold what Kafka answers:
its node id is 1 (wirekafka's 0), every topic reports ``min.insync.replicas``
as a cluster default, and a group left Empty keeps its protocol type
``consumer`` in ListGroups (wirekafka answers ``""``).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer

from interop_tests.conftest import HEAVY
from interop_tests.polling import wait_for
from interop_tests.test_cli_groups import (
    BASE_MS,
    PARTITIONS,
    RECORDS,
    RECORDS_PER_PARTITION,
    TIMEOUT_S,
    committed,
    groups,
    groups_json,
    iso,
    member,
    produce_records,
)
from interop_tests.test_cli_groups import describe as describe_group
from interop_tests.test_cli_perf import records_in
from interop_tests.test_cli_produce_consume import (
    IDLE_S,
    QUIET_S,
    command,
    consume_json,
    produce,
    without_timestamps,
)
from interop_tests.test_cli_topics import described, listed, ok, topics
from interop_tests.wirekafka_command import wirekafka_command
from tools.apache_kafka import ApacheKafka

# Apache Kafka's JVM: with the other heavy tests (interop_tests/conftest.py, HEAVY)
pytestmark = [HEAVY, pytest.mark.slow]

CONSUMED = 25  # of the 30 records: more than two partitions hold, so some of each
UNKNOWN_TOPIC = "UNKNOWN_TOPIC_OR_PART (error code 3)"
# Kafka 4 sets min.insync.replicas for the cluster when it formats its storage
# (eligible leader replicas need it): every topic reports it as a broker default
CLUSTER_DEFAULTS = {
    "min.insync.replicas": {"value": "1", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"}
}


@pytest.fixture(scope="module")
def kafka() -> Iterator[ApacheKafka]:
    with ApacheKafka({"auto.create.topics.enable": "false"}) as started:
        yield started


def failed(result: subprocess.CompletedProcess[str], *names: str) -> None:
    """The run exited 1 without a traceback, naming each of ``names`` on stderr."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for name in names:
        assert name in result.stderr, (name, result.stderr)


def test_topics_create_list_describe_alter_delete(
    kafka: ApacheKafka, topic_name: Callable[..., str]
) -> None:
    name = topic_name()
    created = topics(
        kafka, "create", name, "--partitions", "2", "--replication-factor", "1",
        "--config", "retention.ms=3600000", "--config", "max.message.bytes=500000",
    )  # fmt: skip
    assert ok(created).stdout == f"Created topic {name}.\n"
    assert listed(kafka)[name] == {
        "name": name,
        "partitions": 2,
        "replication_factor": 1,
        "internal": False,
    }
    view = described(kafka, name)[name]
    assert view["partitions"] == [
        {"partition": p, "leader": 1, "replicas": [1], "isr": [1]} for p in (0, 1)
    ]
    assert (view["replication_factor"], view["internal"]) == (1, False)
    assert view["configs"] == {
        "max.message.bytes": {"value": "500000", "source": "DYNAMIC_TOPIC_CONFIG"},
        "retention.ms": {"value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"},
        **CLUSTER_DEFAULTS,
    }
    table = ok(topics(kafka, "describe", name)).stdout
    assert f"{name}: 2 partitions, replication factor 1" in table
    [row] = [line for line in table.splitlines() if "retention.ms" in line]
    assert "3600000" in row and "DYNAMIC_TOPIC_CONFIG" in row

    again = topics(kafka, "create", name, "--partitions", "1")
    failed(again, "TOPIC_ALREADY_EXISTS (error code 36)", f"'{name}'", kafka.bootstrap)
    kept = ok(topics(kafka, "create", name, "--partitions", "3", "--if-not-exists"))
    assert kept.stdout == f"Topic {name} already exists.\n"

    altered = topics(
        kafka, "alter", name, "--partitions", "4",
        "--config", "cleanup.policy=compact", "--delete-config", "retention.ms",
    )  # fmt: skip
    assert ok(altered).stdout == (
        f"Topic {name} now has 4 partitions.\nAltered the configs of topic {name}.\n"
    )
    view = described(kafka, name)[name]
    assert [p["partition"] for p in view["partitions"]] == [0, 1, 2, 3]
    assert view["configs"] == {
        "cleanup.policy": {"value": "compact", "source": "DYNAMIC_TOPIC_CONFIG"},
        "max.message.bytes": {"value": "500000", "source": "DYNAMIC_TOPIC_CONFIG"},
        **CLUSTER_DEFAULTS,
    }
    failed(topics(kafka, "alter", name, "--partitions", "3"), "INVALID_PARTITIONS (error code 37)")
    failed(
        topics(kafka, "alter", name, "--config", "no.such.key=1"), "INVALID_CONFIG", "no.such.key"
    )
    assert listed(kafka)[name]["partitions"] == 4

    assert ok(topics(kafka, "delete", name)).stdout == f"Deleted topic {name}.\n"
    wait_for(lambda: name not in listed(kafka), f"{name} to leave the topic list")
    failed(topics(kafka, "describe", name), UNKNOWN_TOPIC, f"'{name}'")
    failed(topics(kafka, "delete", name), UNKNOWN_TOPIC, f"'{name}'")
    assert ok(topics(kafka, "delete", name, "--if-exists")).stdout == ""


def test_produce_then_consume_from_earliest_an_offset_and_a_timestamp(
    kafka: ApacheKafka, topic_name: Callable[..., str]
) -> None:
    topic = topic_name()
    ok(topics(kafka, "create", topic, "--partitions", "2"))
    early = ["k0:v0", "k1:a:b", ":empty key"]
    summary = produce(
        kafka, topic, early, "--key-separator", ":", "--partition", "0",
        "--header", "source=test", "--header", "trace=",
    )  # fmt: skip
    assert summary == {"topic": topic, "records_sent": 3, "records_failed": 0, "errors": {}}
    time.sleep(0.05)
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)
    produce(kafka, topic, ["late 0", "late 1"], "--partition", "0", "--compression", "zstd")
    produce(kafka, topic, ["other"], "--partition", "1", "--acks", "all")

    records = consume_json(
        kafka, topic, "--from", "earliest", "--partition", "0", "--max-messages", "5",
        "--idle-timeout", IDLE_S,
    )  # fmt: skip
    headers = [{"key": "source", "value": "test"}, {"key": "trace", "value": ""}]
    assert without_timestamps(records) == [
        {"topic": topic, "partition": 0, "offset": 0, "key": "k0", "value": "v0", "headers": headers},
        {"topic": topic, "partition": 0, "offset": 1, "key": "k1", "value": "a:b", "headers": headers},
        {"topic": topic, "partition": 0, "offset": 2, "key": "", "value": "empty key", "headers": headers},
        {"topic": topic, "partition": 0, "offset": 3, "key": None, "value": "late 0", "headers": []},
        {"topic": topic, "partition": 0, "offset": 4, "key": None, "value": "late 1", "headers": []},
    ]  # fmt: skip
    assert all(r["timestamp"] < boundary_ms for r in records[:3])

    from_offset = consume_json(
        kafka, topic, "--from", "2", "--partition", "0", "--max-messages", "3",
        "--idle-timeout", IDLE_S,
    )  # fmt: skip
    assert [(r["offset"], r["value"]) for r in from_offset] == [
        (2, "empty key"), (3, "late 0"), (4, "late 1"),
    ]  # fmt: skip
    from_time = consume_json(
        kafka, topic, "--from", f"@{boundary_ms}", "--max-messages", "3", "--idle-timeout", IDLE_S
    )
    assert sorted((r["partition"], r["offset"], r["value"]) for r in from_time) == [
        (0, 3, "late 0"), (0, 4, "late 1"), (1, 0, "other"),
    ]  # fmt: skip
    later = f"@{int(time.time() * 1000) + 3_600_000}"
    assert consume_json(kafka, topic, "--from", later, "--idle-timeout", QUIET_S) == []

    raw = ok(
        command(
            kafka, "consume", "--topic", topic, "--from", "earliest", "--partition", "1",
            "--print-key", "--max-messages", "1", "--idle-timeout", IDLE_S,
        )
    )  # fmt: skip
    assert (raw.stdout, raw.stderr) == ("null\tother\n", "wirekafka consume: 1 records\n")


def test_groups_lag_reset_and_delete(kafka: ApacheKafka, topic_name: Callable[..., str]) -> None:
    """30 records over 3 partitions; ``consume --group`` prints and commits 25 of
    them; the group's lag, its rewind and a consumer that resumes from 0."""
    topic = topic_name()
    group = f"group-{topic}"
    ok(topics(kafka, "create", topic, "--partitions", str(PARTITIONS)))
    produce_records(kafka.bootstrap, topic)

    printed = consume_json(
        kafka, topic, "--group", group, "--from", "earliest", "--max-messages", str(CONSUMED)
    )
    assert len(printed) == CONSUMED
    expected_commits = dict.fromkeys(range(PARTITIONS), 0)  # what was printed, per partition
    for record in printed:
        assert record["offset"] == expected_commits[record["partition"]]  # in order from 0
        expected_commits[record["partition"]] += 1
    assert min(expected_commits.values()) > 0  # 25 records: some of every partition

    report = describe_group(kafka, group)
    assert (report["state"], report["members"]) == ("Empty", [])
    assert report["coordinator"] == {"id": 1, "host": "127.0.0.1", "port": kafka.port}
    assert report["partitions"] == [
        {
            "topic": topic,
            "partition": p,
            "committed_offset": offset,
            "log_end_offset": RECORDS_PER_PARTITION,
            "lag": RECORDS_PER_PARTITION - offset,
            "member_id": None,
            "client_id": None,
            "host": None,
        }
        for p, offset in sorted(expected_commits.items())
    ]
    assert report["total_lag"] == RECORDS - CONSUMED
    table = ok(groups(kafka, "describe", group)).stdout
    assert f"Group {group}: Empty" in table and f"total lag {report['total_lag']}" in table
    listing = {g["group_id"]: g for g in groups_json(kafka, "list")}
    assert listing[group] == {"group_id": group, "state": "Empty", "protocol_type": "consumer"}
    assert group in {g["group_id"] for g in groups_json(kafka, "list", "--state", "Empty")}
    assert group not in {g["group_id"] for g in groups_json(kafka, "list", "--state", "Stable")}

    # plans: --all-topics is the partitions the group committed for, --topic all of the topic's
    shifted = groups_json(kafka, "reset-offsets", group, "--all-topics", "--shift-by", "-1")
    assert {p["partition"]: p["new_offset"] for p in shifted["partitions"]} == {
        p: offset - 1 for p, offset in expected_commits.items()
    }
    # the first records at or after BASE_MS + 16 s: record 18 (offset 6 of partition 0),
    # records 16 and 17 (offset 5 of partitions 1 and 2)
    by_time = groups_json(
        kafka, "reset-offsets", group, "--topic", topic, "--to-datetime", iso(BASE_MS + 16_000)
    )
    assert {p["partition"]: p["new_offset"] for p in by_time["partitions"]} == {0: 6, 1: 5, 2: 5}
    planned = [
        {
            "topic": topic,
            "partition": p,
            "committed_offset": expected_commits[p],
            "new_offset": 0,
        }
        for p in range(PARTITIONS)
    ]
    dry = groups_json(kafka, "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert dry == {"group_id": group, "executed": False, "partitions": planned}
    assert committed(describe_group(kafka, group)) == expected_commits
    done = groups_json(
        kafka, "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute"
    )
    assert done == {"group_id": group, "executed": True, "partitions": planned}
    assert committed(describe_group(kafka, group)) == dict.fromkeys(range(PARTITIONS), 0)

    # a member of the group starts at the committed offsets (--from is for partitions without)
    resumed = consume_json(
        kafka, topic, "--group", group, "--from", "latest", "--max-messages", str(RECORDS)
    )
    assert sorted((r["partition"], r["offset"]) for r in resumed) == [
        (p, o) for p in range(PARTITIONS) for o in range(RECORDS_PER_PARTITION)
    ]
    assert describe_group(kafka, group)["total_lag"] == 0
    internal = listed(kafka, "--internal")["__consumer_offsets"]
    assert internal["internal"] is True and "__consumer_offsets" not in listed(kafka)

    _a_member_keeps_the_group(kafka, topic, group)

    deleted = ok(groups(kafka, "delete", group))
    assert deleted.stdout == f"Deleted consumer group {group!r}.\n"
    assert group not in {g["group_id"] for g in groups_json(kafka, "list")}
    again = groups(kafka, "delete", group)
    failed(again, f"group {group!r}", kafka.bootstrap, "GROUP_ID_NOT_FOUND (error code 69)")
    assert again.stderr.startswith("wirekafka groups delete: ")
    gone = groups(kafka, "describe", group)
    failed(gone, f"consumer group {group!r} does not exist on {kafka.bootstrap}")


def _a_member_keeps_the_group(kafka: ApacheKafka, topic: str, group: str) -> None:
    """While a consumer is in the group: described with it, neither reset nor deleted."""
    consumer: Consumer = member(kafka.bootstrap, group, **{"client.id": "cli-test-member"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the member got no partitions"
            consumer.poll(0.2)
        report = describe_group(kafka, group)
        assert report["state"] == "Stable"
        [joined] = report["members"]
        assert joined["client_id"] == "cli-test-member"
        assert joined["assignment"] == [{"topic": topic, "partition": p} for p in range(PARTITIONS)]
        assert report["partition_assignor"] == "range"
        refused = groups(
            kafka, "reset-offsets", group, "--all-topics", "--to-earliest", "--execute"
        )
        failed(refused, f"group {group!r}", "is Stable")
        not_deleted = groups(kafka, "delete", group)
        failed(not_deleted, f"group {group!r}", "NON_EMPTY_GROUP (error code 68)")
    finally:
        consumer.close()


def perf_json(kafka: ApacheKafka, *args: str) -> dict[str, Any]:
    done = wirekafka_command("perf", *args, "--bootstrap-server", kafka.bootstrap, "--json")
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def test_perf_produce_and_consume(kafka: ApacheKafka, topic_name: Callable[..., str]) -> None:
    topic = topic_name()
    ok(topics(kafka, "create", topic, "--partitions", "2"))
    produced = perf_json(
        kafka, "produce", "--topic", topic, "--num-records", "2000", "--record-size", "100",
        "--acks", "all", "--compression", "lz4",
    )  # fmt: skip
    assert (produced["records_sent"], produced["records_failed"], produced["errors"]) == (
        2000, 0, [],
    )  # fmt: skip
    assert records_in(kafka.bootstrap, topic) == 2000
    latencies = [produced[f"latency_{q}_ms"] for q in ("p50", "p95", "p99", "p99_9", "max")]
    assert latencies == sorted(latencies) and latencies[0] > 0

    consumed = perf_json(kafka, "consume", "--topic", topic, "--messages", "2000")
    assert (consumed["records_consumed"], consumed["bytes_consumed"]) == (2000, 200_000)
    assert consumed["topic"] == topic and consumed["group"].startswith("perf-consumer-")
    assert 0 < consumed["rebalance_time_ms"] <= consumed["first_record_time_ms"]


def test_a_missing_topic_is_named_with_kafkas_error_code(
    kafka: ApacheKafka, topic_name: Callable[..., str]
) -> None:
    missing = topic_name("missing")
    named = (f"'{missing}'", kafka.bootstrap, UNKNOWN_TOPIC)
    failed(command(kafka, "produce", "--topic", missing, input="x\n"), *named)
    for group in ([], ["--group", f"group-{missing}"]):
        consumed = command(kafka, "consume", "--topic", missing, *group, "--idle-timeout", QUIET_S)
        failed(consumed, *named)
    failed(topics(kafka, "describe", missing), *named)
    failed(topics(kafka, "alter", missing, "--partitions", "2"), *named)
    failed(topics(kafka, "alter", missing, "--config", "retention.ms=1000"), *named)
    failed(topics(kafka, "delete", missing), *named)
    failed(
        groups(kafka, "reset-offsets", "some-group", "--topic", missing, "--to-earliest"), *named
    )
    for perf in (
        ["produce", "--num-records", "5", "--record-size", "10"],
        ["consume", "--messages", "5", "--timeout", "5"],
    ):
        run = wirekafka_command(
            "perf", *perf, "--topic", missing, "--bootstrap-server", kafka.bootstrap
        )
        failed(run, *named)
    assert missing not in listed(kafka)  # nothing above made it
