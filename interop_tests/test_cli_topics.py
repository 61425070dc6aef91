"""``wirekafka topics``: each subcommand run as a subprocess against a broker."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

from interop_tests.broker import Broker
from interop_tests.readme import readme_examples
from interop_tests.sh_example import run_sh_example
from interop_tests.wirekafka_command import Bootstrapped, wirekafka_command

UNREACHABLE_TIMEOUT_S = 2.0


def topics(broker: Bootstrapped, *args: str) -> subprocess.CompletedProcess[str]:
    return wirekafka_command("topics", *args, "--bootstrap-server", broker.bootstrap)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def listed(broker: Bootstrapped, *args: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(ok(topics(broker, "list", "--json", *args)).stdout)
    return {row["name"]: row for row in rows}


def described(broker: Bootstrapped, *names: str) -> dict[str, dict[str, Any]]:
    views = json.loads(ok(topics(broker, "describe", "--json", *names)).stdout)
    return {view["name"]: view for view in views}


def test_create_list_describe_alter_delete(broker: Broker, topic_name: Callable[..., str]) -> None:
    name = topic_name()
    created = ok(
        topics(
            broker,
            "create",
            name,
            "--partitions",
            "2",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=3600000",
            "--config",
            "max.message.bytes=500000",
        )
    )
    assert created.stdout == f"Created topic {name}.\n"

    assert listed(broker)[name] == {
        "name": name,
        "partitions": 2,
        "replication_factor": 1,
        "internal": False,
    }
    view = described(broker, name)[name]
    assert [p["partition"] for p in view["partitions"]] == [0, 1]
    for partition in view["partitions"]:
        assert partition["leader"] is not None
        assert partition["replicas"] == [partition["leader"]]
        assert partition["isr"] == [partition["leader"]]
    assert view["replication_factor"] == 1
    assert view["internal"] is False
    assert view["configs"]["retention.ms"] == {"value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}
    assert view["configs"]["max.message.bytes"] == {
        "value": "500000",
        "source": "DYNAMIC_TOPIC_CONFIG",
    }

    altered = ok(
        topics(
            broker,
            "alter",
            name,
            "--partitions",
            "5",
            "--config",
            "cleanup.policy=compact",
            "--delete-config",
            "retention.ms",
        )
    )
    assert f"Topic {name} now has 5 partitions." in altered.stdout
    view = described(broker, name)[name]
    assert [p["partition"] for p in view["partitions"]] == [0, 1, 2, 3, 4]
    own = {
        k: c["value"] for k, c in view["configs"].items() if c["source"] == "DYNAMIC_TOPIC_CONFIG"
    }
    assert own == {"cleanup.policy": "compact", "max.message.bytes": "500000"}
    assert listed(broker)[name]["partitions"] == 5

    assert ok(topics(broker, "delete", name)).stdout == f"Deleted topic {name}.\n"
    assert name not in listed(broker)
    gone = topics(broker, "describe", name, "--json")
    assert gone.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PART" in gone.stderr and name in gone.stderr
    again = topics(broker, "delete", name)
    assert again.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PART" in again.stderr
    assert ok(topics(broker, "delete", name, "--if-exists")).stdout == ""


def test_describe_without_names_describes_every_topic(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    names = [topic_name("a"), topic_name("b")]
    for name in names:
        ok(topics(broker, "create", name, "--partitions", "1"))
    views = described(broker)
    assert set(names) <= set(views)
    assert all(not view["internal"] for view in views.values())


def test_tables(broker: Broker, topic_name: Callable[..., str]) -> None:
    name = topic_name()
    ok(topics(broker, "create", name, "--partitions", "4", "--config", "retention.ms=123456"))
    table = ok(topics(broker, "list")).stdout
    assert "REPLICATION FACTOR" in table
    [row] = [line for line in table.splitlines() if name in line]
    assert row.split()[2:] == ["4", "│", "1"]  # name │ partitions │ replication factor
    description = ok(topics(broker, "describe", name)).stdout
    assert f"{name}: 4 partitions, replication factor 1" in description
    [config_row] = [line for line in description.splitlines() if "retention.ms" in line]
    assert "123456" in config_row and "DYNAMIC_TOPIC_CONFIG" in config_row


def test_create_alter_delete_with_json_say_what_was_done(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    name, other = topic_name("a"), topic_name("b")
    created = json.loads(ok(topics(broker, "create", name, "--partitions", "2", "--config",
                                   "retention.ms=3600000", "--json")).stdout)  # fmt: skip
    assert created == {
        "topic": name, "created": True, "partitions": 2, "replication_factor": None,
        "configs": {"retention.ms": "3600000"},
    }  # fmt: skip
    kept = json.loads(ok(topics(broker, "create", name, "--if-not-exists", "--json")).stdout)
    assert (kept["topic"], kept["created"]) == (name, False)
    assert listed(broker)[name]["partitions"] == 2

    altered = json.loads(ok(topics(broker, "alter", name, "--partitions", "4", "--config",
                                   "cleanup.policy=compact", "--delete-config", "retention.ms",
                                   "--json")).stdout)  # fmt: skip
    assert altered == {
        "topic": name, "partitions": 4, "set_configs": {"cleanup.policy": "compact"},
        "deleted_configs": ["retention.ms"],
    }  # fmt: skip
    view = described(broker, name)[name]
    assert len(view["partitions"]) == 4 and "retention.ms" not in view["configs"]
    assert view["configs"]["cleanup.policy"]["value"] == "compact"

    ok(topics(broker, "create", other, "--partitions", "1"))
    deleted = json.loads(ok(topics(broker, "delete", name, other, "never-made", "--if-exists",
                                   "--json")).stdout)  # fmt: skip
    assert deleted == {"deleted": [name, other], "not_found": ["never-made"], "failed": []}
    failed = topics(broker, "delete", "never-made", "--json")
    assert failed.returncode == 1 and "UNKNOWN_TOPIC_OR_PART" in failed.stderr
    assert json.loads(failed.stdout) == {
        "deleted": [], "not_found": [],
        "failed": [{"topic": "never-made", "error": "UNKNOWN_TOPIC_OR_PART", "error_code": 3}],
    }  # fmt: skip


def test_creating_an_existing_topic_names_the_error(
    broker: Broker, topic_name: Callable[..., str]
) -> None:
    name = topic_name()
    ok(topics(broker, "create", name, "--partitions", "1"))
    again = topics(broker, "create", name, "--partitions", "1")
    assert again.returncode == 1
    assert again.stderr.startswith("wirekafka topics create: create topic")
    assert "TOPIC_ALREADY_EXISTS" in again.stderr
    assert name in again.stderr and broker.bootstrap in again.stderr
    assert "Traceback" not in again.stderr
    kept = ok(topics(broker, "create", name, "--partitions", "3", "--if-not-exists"))
    assert kept.stdout == f"Topic {name} already exists.\n"
    assert listed(broker)[name]["partitions"] == 1


def test_alter_errors(broker: Broker, topic_name: Callable[..., str]) -> None:
    name = topic_name()
    ok(topics(broker, "create", name, "--partitions", "3"))
    fewer = topics(broker, "alter", name, "--partitions", "2")
    assert fewer.returncode == 1
    assert "INVALID_PARTITIONS" in fewer.stderr and name in fewer.stderr
    unknown_key = topics(broker, "alter", name, "--config", "no.such.key=1")
    assert unknown_key.returncode == 1
    assert "INVALID_CONFIG" in unknown_key.stderr
    nothing = topics(broker, "alter", name)
    assert nothing.returncode == 2
    assert "--partitions" in nothing.stderr
    bad_pair = topics(broker, "alter", name, "--config", "retention.ms")
    assert bad_pair.returncode == 2
    assert "KEY=VALUE" in bad_pair.stderr
    missing = topics(broker, "alter", topic_name("missing"), "--partitions", "4")
    assert missing.returncode == 1
    assert "UNKNOWN_TOPIC_OR_PART" in missing.stderr
    assert listed(broker)[name]["partitions"] == 3


def test_internal_topics_only_with_internal(broker: Broker, topic_name: Callable[..., str]) -> None:
    name = topic_name()
    ok(
        wirekafka_command(
            "produce", "--topic", name, "--bootstrap-server", broker.bootstrap, input="x\n"
        )
    )
    # a group's commit makes the broker create __consumer_offsets
    consumed = wirekafka_command(
        "consume",
        "--topic",
        name,
        "--group",
        topic_name("group"),
        "--from",
        "earliest",
        "--max-messages",
        "1",
        "--bootstrap-server",
        broker.bootstrap,
    )
    assert ok(consumed).stdout == "x\n"
    assert "__consumer_offsets" not in listed(broker)
    internal = listed(broker, "--internal")["__consumer_offsets"]
    assert internal["internal"] is True
    assert internal["partitions"] >= 1
    assert "__consumer_offsets" not in described(broker)
    assert described(broker, "__consumer_offsets")["__consumer_offsets"]["internal"] is True


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_an_unreachable_broker_exits_3_within_the_timeout() -> None:
    address = f"127.0.0.1:{_unused_port()}"
    for args in (["list"], ["describe", "t"], ["create", "t", "--partitions", "1"]):
        began = time.monotonic()
        result = wirekafka_command(
            "topics",
            *args,
            "--bootstrap-server",
            address,
            "--timeout",
            str(UNREACHABLE_TIMEOUT_S),
        )
        took = time.monotonic() - began
        assert result.returncode == 3, result.stderr
        assert address in result.stderr
        assert took < UNREACHABLE_TIMEOUT_S + 10, took
        assert "Traceback" not in result.stderr


def test_readme_example(broker: Broker) -> None:
    [example] = readme_examples("Topics")
    result = run_sh_example(example, broker.bootstrap)
    assert result.returncode == 0, result.stdout + result.stderr
    [view] = json.loads(result.stdout[result.stdout.index("\n[") + 1 :])
    assert view["name"] == "orders"
    assert len(view["partitions"]) == 6
    assert view["configs"]["retention.ms"]["value"] == "604800000"
    assert view["configs"]["cleanup.policy"]["value"] == "compact"
