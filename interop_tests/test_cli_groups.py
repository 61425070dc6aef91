"""``wirekafka groups``, run as a subprocess against a broker, on consumer
groups made by confluent-kafka consumers in the test.

Each group starts the same way: 30 records over 3 partitions (10 each, record
``i`` on partition ``i % 3`` with the timestamp ``BASE_MS + i`` seconds), then
a subscribed consumer of the group returns and commits 4, 3 and 3 of them and
closes, so the group is Empty with committed offsets 4, 3, 3 and a lag of 20.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from interop_tests.broker import Broker
from interop_tests.readme import example_commands, readme_examples
from interop_tests.wirekafka_command import Bootstrapped, wirekafka_command

RECORDS = 30
PARTITIONS = 3
RECORDS_PER_PARTITION = RECORDS // PARTITIONS
COMMITTED = {0: 4, 1: 3, 2: 3}
BASE_MS = (int(time.time()) - 3600) * 1000  # an hour ago: well inside the retention
TIMEOUT_S = 60.0


def produce_records(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(
            topic, value=str(i).encode(), partition=i % PARTITIONS, timestamp=BASE_MS + i * 1000
        )
    assert producer.flush(TIMEOUT_S) == 0


def member(bootstrap: str, group: str, **settings: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **settings,
        }
    )


def consume_and_commit(bootstrap: str, topic: str, group: str, counts: dict[int, int]) -> None:
    """A member of ``group`` returns ``counts[p]`` records of each partition, commits
    what it returned and closes."""
    consumer = member(bootstrap, group, **{"auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    returned = dict.fromkeys(counts, 0)
    deadline = time.monotonic() + TIMEOUT_S
    while returned != counts:
        assert time.monotonic() < deadline, f"returned {returned} of {counts} in {TIMEOUT_S} s"
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        partition = message.partition()
        if returned[partition] < counts[partition]:
            assert message.offset() == returned[partition]
            returned[partition] += 1
            consumer.store_offsets(message)
    consumer.commit(asynchronous=False)
    consumer.close()


def read_all(bootstrap: str, topic: str, group: str) -> list[tuple[int, int, int]]:
    """A member of ``group`` (starting at the log end when nothing is committed)
    reads until it has 30 records; (partition, offset, value) of each."""
    consumer = member(bootstrap, group, **{"auto.offset.reset": "latest"})
    consumer.subscribe([topic])
    records = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(records) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                records.append((message.partition(), message.offset(), int(message.value())))
    finally:
        consumer.close()
    return records


def groups(broker: Bootstrapped, *args: str) -> subprocess.CompletedProcess[str]:
    return wirekafka_command(
        "groups", *args, "--bootstrap-server", broker.bootstrap, "--timeout", "20"
    )


def groups_json(broker: Bootstrapped, *args: str) -> Any:
    done = groups(broker, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def describe(broker: Bootstrapped, group: str) -> dict[str, Any]:
    [report] = groups_json(broker, "describe", group)
    assert report["group_id"] == group
    return report


def committed(report: dict[str, Any]) -> dict[int, int | None]:
    return {p["partition"]: p["committed_offset"] for p in report["partitions"]}


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


@pytest.fixture
def consumed_group(broker: Broker, topic_name: Callable[[str], str]) -> tuple[str, str]:
    """(topic, group): 30 records, the group Empty with committed offsets 4, 3, 3."""
    topic = topic_name("records")
    group = f"group-{topic}"
    produce_records(broker.bootstrap, topic)
    consume_and_commit(broker.bootstrap, topic, group, COMMITTED)
    return topic, group


def test_describe_shows_committed_offsets_log_end_and_lag(broker, consumed_group):
    topic, group = consumed_group
    report = describe(broker, group)
    assert report["state"] == "Empty"
    assert report["members"] == []
    assert report["coordinator"]["port"] == broker.address[1]
    assert report["partitions"] == [
        {
            "topic": topic,
            "partition": partition,
            "committed_offset": offset,
            "log_end_offset": RECORDS_PER_PARTITION,
            "lag": RECORDS_PER_PARTITION - offset,
            "member_id": None,
            "client_id": None,
            "host": None,
        }
        for partition, offset in COMMITTED.items()
    ]
    assert report["total_lag"] == 20

    table = groups(broker, "describe", group)
    assert table.returncode == 0, table.stderr
    assert f"Group {group}: Empty" in table.stdout and "total lag 20" in table.stdout
    cells = [[cell.strip() for cell in line.split("│")] for line in table.stdout.splitlines()]
    rows = [row[1:5] for row in cells if len(row) > 4 and row[1].isdigit()]
    assert rows == [["0", "4", "10", "6"], ["1", "3", "10", "7"], ["2", "3", "10", "7"]]


def test_list_includes_the_group(broker, consumed_group):
    _, group = consumed_group
    listed = {g["group_id"]: g for g in groups_json(broker, "list")}
    # its consumer closed; the Empty group keeps the protocol type, as Kafka's does
    assert listed[group] == {"group_id": group, "state": "Empty", "protocol_type": "consumer"}
    assert group in {g["group_id"] for g in groups_json(broker, "list", "--state", "Empty")}
    assert group not in {g["group_id"] for g in groups_json(broker, "list", "--state", "Stable")}


def test_describe_of_a_missing_group_fails_naming_it(broker, consumed_group):
    _, group = consumed_group
    done = groups(broker, "describe", group, "no-such-group")
    assert done.returncode == 1
    assert "'no-such-group' does not exist" in done.stderr
    assert f"Group {group}: Empty" in done.stdout  # the group that exists is still described


def test_reset_to_earliest_dry_run_changes_nothing_and_execute_rewinds_the_group(
    broker, consumed_group
):
    topic, group = consumed_group
    planned = [
        {"topic": topic, "partition": p, "committed_offset": offset, "new_offset": 0}
        for p, offset in COMMITTED.items()
    ]
    dry = groups_json(broker, "reset-offsets", group, "--all-topics", "--to-earliest")
    assert dry == {"group_id": group, "executed": False, "partitions": planned}
    table = groups(broker, "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert table.returncode == 0 and "Dry run: nothing changed" in table.stdout
    assert committed(describe(broker, group)) == COMMITTED

    done = groups_json(broker, "reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
    assert done == {"group_id": group, "executed": True, "partitions": planned}
    assert committed(describe(broker, group)) == dict.fromkeys(COMMITTED, 0)
    records = read_all(broker.bootstrap, topic, group)
    assert sorted(value for _, _, value in records) == list(range(RECORDS))
    first = {}
    for partition, offset, _ in records:
        first.setdefault(partition, offset)
    assert first == dict.fromkeys(range(PARTITIONS), 0)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (["--shift-by", "-2"], {0: 2, 1: 1, 2: 1}),
        (["--shift-by", "-5"], {0: 0, 1: 0, 2: 0}),  # before the log start: to the start
        (["--shift-by", "4"], {0: 8, 1: 7, 2: 7}),
        (["--to-offset", "7"], {0: 7, 1: 7, 2: 7}),
        (["--to-offset", "99"], {0: 10, 1: 10, 2: 10}),  # past the log end: to the end
        (["--to-latest"], {0: 10, 1: 10, 2: 10}),
        # the first record at or after BASE_MS + 16 s: record 18 (offset 6) on partition 0,
        # records 16 and 17 (offset 5) on partitions 1 and 2; without a zone, the same (UTC)
        (["--to-datetime", iso(BASE_MS + 16_000)], {0: 6, 1: 5, 2: 5}),
        (["--to-datetime", iso(BASE_MS + 16_000).removesuffix("+00:00")], {0: 6, 1: 5, 2: 5}),
        (["--to-datetime", iso(BASE_MS - 3_600_000)], {0: 0, 1: 0, 2: 0}),
        (["--to-datetime", iso(BASE_MS + 3_600_000)], {0: 10, 1: 10, 2: 10}),  # no record so new
        (["--to-current"], COMMITTED),
        # the records are an hour old: 2 hours ago is before them all, 30 minutes after
        (["--by-duration", "PT2H"], {0: 0, 1: 0, 2: 0}),
        (["--by-duration", "PT30M"], {0: 10, 1: 10, 2: 10}),
    ],
)
def test_reset_gives_the_planned_offsets(broker, consumed_group, strategy, expected):
    topic, group = consumed_group
    dry = groups_json(broker, "reset-offsets", group, "--topic", topic, *strategy)
    assert {p["partition"]: p["new_offset"] for p in dry["partitions"]} == expected
    assert {p["partition"]: p["committed_offset"] for p in dry["partitions"]} == COMMITTED
    assert committed(describe(broker, group)) == COMMITTED

    done = groups_json(broker, "reset-offsets", group, "--topic", topic, *strategy, "--execute")
    assert done["executed"] and done["partitions"] == dry["partitions"]
    report = describe(broker, group)
    assert committed(report) == expected
    assert report["total_lag"] == sum(RECORDS_PER_PARTITION - o for o in expected.values())


def test_reset_of_chosen_partitions_leaves_the_others(broker, consumed_group):
    topic, group = consumed_group
    done = groups_json(
        broker, "reset-offsets", group, "--topic", f"{topic}:0,2", "--to-offset", "8", "--execute"
    )
    assert [p["partition"] for p in done["partitions"]] == [0, 2]
    assert committed(describe(broker, group)) == {0: 8, 1: 3, 2: 8}


def test_a_group_without_offsets_gets_them_and_its_name_prints_as_it_is(broker, consumed_group):
    topic, _ = consumed_group
    group = "[bold]fresh"  # not rich markup in a table
    done = groups(broker, "reset-offsets", group, "--topic", f"{topic}:1", "--to-offset", "2")
    assert done.returncode == 0, done.stderr
    assert group in done.stdout and "Dry run" in done.stdout
    assert groups(broker, "describe", group).returncode == 1  # the dry run made nothing
    executed = groups(broker, "reset-offsets", group, "--topic", f"{topic}:1", "--to-offset", "2",
                      "--execute")  # fmt: skip
    assert executed.returncode == 0, executed.stderr
    assert committed(describe(broker, group)) == {1: 2}
    table = groups(broker, "describe", group)
    assert f"Group {group}: Empty" in table.stdout


def test_to_current_gives_a_partition_without_a_committed_offset_the_log_end(
    broker, consumed_group
):
    topic, _ = consumed_group
    dry = groups_json(broker, "reset-offsets", "new-group", "--topic", topic, "--to-current")
    assert {p["partition"]: p["new_offset"] for p in dry["partitions"]} == dict.fromkeys(
        range(PARTITIONS), RECORDS_PER_PARTITION
    )


def test_export_writes_the_plan_as_csv_and_from_file_reads_it_back(
    broker, consumed_group, tmp_path
):
    topic, group = consumed_group
    exported = groups(
        broker, "reset-offsets", group, "--topic", topic, "--shift-by", "2", "--export"
    )
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"{topic},0,6\n{topic},1,5\n{topic},2,5\n"
    assert committed(describe(broker, group)) == COMMITTED  # a dry run

    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout.replace(f"{topic},2,5", f"{topic},2,99"))  # past the end
    dry = groups_json(broker, "reset-offsets", group, "--from-file", str(plan))
    assert {p["partition"]: p["new_offset"] for p in dry["partitions"]} == {0: 6, 1: 5, 2: 10}
    assert committed(describe(broker, group)) == COMMITTED
    done = groups(broker, "reset-offsets", group, "--from-file", str(plan), "--execute")
    assert done.returncode == 0 and "New offsets committed" in done.stdout
    assert committed(describe(broker, group)) == {0: 6, 1: 5, 2: 10}


def test_from_file_refuses_bad_files_and_scopes(broker, consumed_group, tmp_path):
    topic, group = consumed_group
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{topic},0,6\n{topic},one,5\n")
    refused = groups(broker, "reset-offsets", group, "--from-file", str(bad))
    assert refused.returncode == 2 and "line 2: partition and offset must be numbers" in (
        refused.stderr
    )
    missing = groups(broker, "reset-offsets", group, "--from-file", str(tmp_path / "none.csv"))
    assert missing.returncode == 2 and "none.csv" in missing.stderr
    other = tmp_path / "other.csv"
    other.write_text(f"another-group,{topic},0,1\n")
    no_rows = groups(broker, "reset-offsets", group, "--from-file", str(other))
    assert no_rows.returncode == 1 and f"no offsets for group {group!r}" in no_rows.stderr
    scoped = groups(broker, "reset-offsets", group, "--from-file", str(bad), "--all-topics")
    assert scoped.returncode == 2 and "leave out --topic and --all-topics" in scoped.stderr
    both = groups(broker, "reset-offsets", group, "--all-topics", "--to-earliest", "--export",
                  "--json")  # fmt: skip
    assert both.returncode == 2 and "--export" in both.stderr
    duration = groups(broker, "reset-offsets", group, "--all-topics", "--by-duration", "1h")
    assert duration.returncode == 2 and "--by-duration '1h' is not an ISO-8601 duration" in (
        duration.stderr
    )
    assert committed(describe(broker, group)) == COMMITTED


def test_all_groups_resets_every_inactive_group_and_names_the_active_one(
    broker_factory, topic_name, tmp_path
):
    own = broker_factory()  # its groups are exactly this test's
    topic = topic_name("all-groups")
    produce_records(own.bootstrap, topic)
    consume_and_commit(own.bootstrap, topic, "first", COMMITTED)
    consume_and_commit(own.bootstrap, topic, "second", {0: 1, 1: 2, 2: 3})
    consume_and_commit(own.bootstrap, topic, "busy", {0: 5, 1: 5, 2: 5})
    active = member(own.bootstrap, "busy")
    active.subscribe([topic])
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not active.assignment():
            assert time.monotonic() < deadline, "the member got no partitions"
            active.poll(0.2)
        described = groups_json(own, "describe", "--all-groups")
        assert [(g["group_id"], g["state"]) for g in described] == [
            ("busy", "Stable"), ("first", "Empty"), ("second", "Empty"),
        ]  # fmt: skip

        exported = groups(own, "reset-offsets", "--all-groups", "--all-topics", "--to-latest",
                          "--export")  # fmt: skip
        assert exported.returncode == 1
        assert "group 'busy'" in exported.stderr and "is Stable" in exported.stderr
        assert exported.stdout == "".join(
            f"{group},{topic},{p},{RECORDS_PER_PARTITION}\n"
            for group in ("first", "second")
            for p in range(PARTITIONS)
        )
        plan = tmp_path / "plan.csv"
        plan.write_text(exported.stdout.replace(f"second,{topic},1,10", f"second,{topic},1,4"))
        done = groups(own, "reset-offsets", "--all-groups", "--from-file", str(plan), "--execute",
                      "--json")  # fmt: skip
        assert done.returncode == 1 and "group 'busy'" in done.stderr
        assert [(g["group_id"], g["executed"]) for g in json.loads(done.stdout)] == [
            ("first", True), ("second", True),
        ]  # fmt: skip
        after = {g["group_id"]: committed(g) for g in groups_json(own, "describe", "--all-groups")}
        assert after == {
            "busy": {0: 5, 1: 5, 2: 5},
            "first": dict.fromkeys(range(PARTITIONS), 10),
            "second": {0: 10, 1: 4, 2: 10},
        }
    finally:
        active.close()
    both = groups(own, "describe", "first", "--all-groups")
    assert both.returncode == 2 and "--all-groups" in both.stderr


def test_reset_refuses_bad_arguments(broker, consumed_group):
    topic, group = consumed_group
    missing = groups(broker, "reset-offsets", group, "--topic", "no-such-topic", "--to-earliest")
    assert missing.returncode == 1
    assert "'no-such-topic'" in missing.stderr and "UNKNOWN_TOPIC_OR_PART" in missing.stderr
    no_partition = groups(broker, "reset-offsets", group, "--topic", f"{topic}:7", "--to-earliest")
    assert no_partition.returncode == 1 and "has no partition 7" in no_partition.stderr
    bad_time = groups(broker, "reset-offsets", group, "--all-topics", "--to-datetime", "noon")
    assert bad_time.returncode == 2 and "--to-datetime 'noon'" in bad_time.stderr
    no_scope = groups(broker, "reset-offsets", group, "--to-earliest")
    assert no_scope.returncode == 2 and "--topic" in no_scope.stderr
    assert committed(describe(broker, group)) == COMMITTED


def test_an_active_group_is_described_with_its_member_and_not_reset_or_deleted(
    broker, consumed_group
):
    topic, group = consumed_group
    consumer = member(broker.bootstrap, group, **{"client.id": "groups-test-member"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the member got no partitions"
            consumer.poll(0.2)
        report = describe(broker, group)
        assert report["state"] == "Stable"
        [joined] = report["members"]
        assert joined["client_id"] == "groups-test-member"
        assert joined["assignment"] == [{"topic": topic, "partition": p} for p in range(PARTITIONS)]
        assert {p["partition"]: p["member_id"] for p in report["partitions"]} == dict.fromkeys(
            range(PARTITIONS), joined["member_id"]
        )
        assert committed(report) == COMMITTED and report["total_lag"] == 20
        listed = {g["group_id"]: g for g in groups_json(broker, "list")}
        assert listed[group] == {"group_id": group, "state": "Stable", "protocol_type": "consumer"}

        for execute in ([], ["--execute"]):
            refused = groups(
                broker, "reset-offsets", group, "--all-topics", "--to-earliest", *execute
            )
            assert refused.returncode == 1
            assert f"group {group!r}" in refused.stderr and "is Stable" in refused.stderr
        not_deleted = groups(broker, "delete", group)
        assert not_deleted.returncode == 1
        assert f"group {group!r}" in not_deleted.stderr
        assert "NON_EMPTY_GROUP" in not_deleted.stderr
    finally:
        consumer.close()
    assert committed(describe(broker, group)) == COMMITTED


def test_delete_removes_the_group_and_a_missing_group_fails_with_its_code(broker, consumed_group):
    _, group = consumed_group
    done = groups(broker, "delete", group)
    assert done.returncode == 0, done.stderr
    assert f"Deleted consumer group {group!r}." in done.stdout
    assert group not in {g["group_id"] for g in groups_json(broker, "list")}
    again = groups(broker, "delete", group)
    assert again.returncode == 1
    assert f"group {group!r}" in again.stderr and broker.bootstrap in again.stderr
    assert "GROUP_ID_NOT_FOUND (error code 69)" in again.stderr
    assert again.stderr.startswith("wirekafka groups delete: ")
    assert groups(broker, "describe", group).returncode == 1


def test_no_broker_answering_exits_3():
    done = wirekafka_command(
        "groups", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2"
    )
    assert done.returncode == 3
    assert "127.0.0.1:1" in done.stderr and "list consumer groups" in done.stderr
    # the tool's own error only: librdkafka's log (its "%3|..." lines) is off
    assert done.stderr.count("\n") == 1 and "%" not in done.stderr, done.stderr
    debugged = wirekafka_command(
        "groups", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2",
        "--debug", "broker",
    )  # fmt: skip
    assert debugged.returncode == 3
    assert "%7|" in debugged.stderr and "BROKER" in debugged.stderr  # librdkafka's debug lines


def test_readme_example(broker, topic_name):
    topic = topic_name("readme")
    produce_records(broker.bootstrap, topic)
    consume_and_commit(broker.bootstrap, topic, "my-app", COMMITTED)
    [example] = readme_examples("Consumer groups")
    outputs = []
    for program, *args in example_commands(example, broker.bootstrap):
        assert program == "wirekafka"
        done = wirekafka_command(*args)
        assert done.returncode == 0, (args, done.stderr)
        outputs.append(done.stdout)
    described, dry_run, executed = outputs
    assert "Group my-app: Empty" in described and "total lag 20" in described
    assert "Dry run: nothing changed" in dry_run and "New offsets committed" in executed
    assert committed(describe(broker, "my-app")) == dict.fromkeys(COMMITTED, 0)
