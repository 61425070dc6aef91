"""The pytest plugin wirekafka ships, used as a project using Kafka would use it.

Each test writes a small test project into a temp dir and runs ``pytest`` on it
in a subprocess with this checkout's wirekafka (``PYTHONPATH``); pytest loads
the plugin by the ``pytest11`` entry point of the installed wirekafka, as it
would in that project (no ``-p``), so the installed metadata must have it
(``pip install -e .`` after the entry point was added).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from interop_tests.readme import readme_examples
from wirekafka.testing.process import PYTHONPATH

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 300.0
PLUGIN_MODULE = "wirekafka.testing.plugin"
SUMMARY_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed)")

PYTEST_INI = """\
[pytest]
{options}
"""

# The project's tests: the helpers, the fixtures and the in-process broker. Each test
# that uses kafka_broker writes its address to bootstraps.txt, so the runs below can
# tell a shared broker from one per test.
APP_TESTS = """
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from wirekafka.testing import create_topic, in_process_broker, read_topic

BOOTSTRAPS = Path(__file__).with_name("bootstraps.txt")


def produce(bootstrap, topic, values, key=None):
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value, key=key, on_delivery=lambda e, m: errors.append(e))
    producer.flush(30)
    assert errors == [None] * len(values)


def note(broker):
    with BOOTSTRAPS.open("a") as notes:
        notes.write(broker.bootstrap + "\\n")


def partitions(bootstrap, topic):
    return len(AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
               .topics[topic].partitions)


def test_create_produce_read(kafka_broker):
    note(kafka_broker)
    create_topic(kafka_broker.bootstrap, "orders", partitions=3,
                 config={"cleanup.policy": "compact"})
    assert partitions(kafka_broker.bootstrap, "orders") == 3
    produce(kafka_broker.bootstrap, "orders", [b"a", b"b", b"c", b"d"], key=b"k")
    records = read_topic(kafka_broker.bootstrap, "orders", count=4, timeout=20)
    assert [r.value() for r in records] == [b"a", b"b", b"c", b"d"]
    assert {r.partition() for r in records} == {records[0].partition()}


def test_auto_created_topic(kafka_broker):
    note(kafka_broker)
    produce(kafka_broker.bootstrap, "auto", [b"x"])
    assert partitions(kafka_broker.bootstrap, "auto") == 1
    assert read_topic(kafka_broker.bootstrap, "auto", count=1, timeout=20)[0].value() == b"x"


def test_factory_with_settings(kafka_broker_factory):
    broker = kafka_broker_factory({"num.partitions": 4})
    strict = kafka_broker_factory(auto_create_topics_enable=False)
    assert broker.bootstrap != strict.bootstrap
    produce(broker.bootstrap, "wide", [b"w"])
    assert partitions(broker.bootstrap, "wide") == 4
    topics = AdminClient({"bootstrap.servers": strict.bootstrap}).list_topics("none", timeout=10)
    assert topics.topics["none"].error is not None  # UNKNOWN_TOPIC_OR_PART: not created


def test_in_process_broker(tmp_path):
    with in_process_broker({"num.partitions": 2}, data_dir=tmp_path) as bootstrap:
        create_topic(bootstrap, "local")
        produce(bootstrap, "local", [b"one", b"two"])
        values = [r.value() for r in read_topic(bootstrap, "local", count=2, timeout=20)]
        assert values == [b"one", b"two"]
        produce(bootstrap, "two-partitions", [b"p"])
        assert partitions(bootstrap, "two-partitions") == 2
    # stopped cleanly: Kafka's clean-shutdown marker is in the data dir
    assert (tmp_path / ".kafka_cleanshutdown").exists()
"""

CLUSTER_TESTS = """
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from wirekafka.testing import create_topic, read_topic


def test_two_brokers_replicate(kafka_cluster):
    cluster = kafka_cluster(brokers=2)
    assert len(cluster.brokers) == 2
    assert len(cluster.bootstrap.split(",")) == 2
    create_topic(cluster.bootstrap, "replicated", partitions=2, replication_factor=2,
                 timeout_s=60)
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10)
    assert len(metadata.brokers) == 2
    for partition in metadata.topics["replicated"].partitions.values():
        assert sorted(partition.replicas) == [0, 1]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for value in (b"1", b"2", b"3", b"4"):
        producer.produce("replicated", value)
    assert producer.flush(30) == 0
    records = read_topic(cluster.bootstrap, "replicated", count=4, timeout=30)
    assert sorted(r.value() for r in records) == [b"1", b"2", b"3", b"4"]
"""

# What goes wrong is reported, not skipped: a broker that died fails its teardown,
# kafka_cluster without ZooKeeper names the package to install, read_topic says how
# many records arrived.
FAILING_CONFTEST = """
from pathlib import Path

from wirekafka.testing import zookeeper

zookeeper.ZOOKEEPER_JAR = Path("/nonexistent/zookeeper.jar")  # as if not installed
"""

FAILING_TESTS = """
from wirekafka.testing import create_topic, read_topic


def test_broker_dies(kafka_broker):
    kafka_broker.kill()


def test_cluster_without_zookeeper(kafka_cluster):
    raise AssertionError("not reached: the fixture fails first")


def test_too_few_records(kafka_broker_factory):
    broker = kafka_broker_factory()
    create_topic(broker.bootstrap, "empty")
    read_topic(broker.bootstrap, "empty", count=1, timeout=1)


def test_no_such_topic(kafka_broker):
    read_topic(kafka_broker.bootstrap, "missing", count=1, timeout=5)
"""


@dataclass(frozen=True)
class Run:
    counts: dict[str, int]
    output: str


def run_pytest(project: Path, *args: str, command: list[str] | None = None) -> Run:
    """``python -m pytest ARGS`` (or ``command``) in ``project``, with this checkout's
    wirekafka; the counts of its summary line (``{"passed": 3, "failed": 1}``)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "COV_CORE_"))
    }
    env["PYTHONPATH"] = PYTHONPATH
    argv = command or [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    result = subprocess.run(
        argv,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    if "fixture 'kafka_broker" in output and "not found" in output:
        raise AssertionError(
            "pytest did not load the wirekafka plugin: the installed wirekafka has no pytest11 "
            f"entry point yet (reinstall it: pip install -e {ROOT})\n{output}"
        )
    lines = [line for line in output.splitlines() if line.startswith("=") and " in " in line]
    assert lines, f"no summary line in pytest's output\n{output}"
    counts: dict[str, int] = {}
    for number, what in SUMMARY_COUNT.findall(lines[-1]):
        counts["errors" if what == "error" else what] = int(number)
    return Run(counts, output)


def make_project(root: Path, tests: str, *, ini: str = "", conftest: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text(PYTEST_INI.format(options=ini))
    (root / "test_app.py").write_text(textwrap.dedent(tests))
    if conftest:
        (root / "conftest.py").write_text(conftest)
    return root


def bootstraps(project: Path) -> list[str]:
    return (project / "bootstraps.txt").read_text().split()


def test_pyproject_declares_the_entry_point() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["pytest11"] == {"wirekafka": PLUGIN_MODULE}


def test_session_broker_helpers_factory_and_in_process(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", APP_TESTS)
    run = run_pytest(project)
    assert run.counts == {"passed": 4}, run.output
    first, second = bootstraps(project)
    assert first == second  # one broker for the session


def test_function_scope_from_the_command_line(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", APP_TESTS)
    run = run_pytest(project, "--wirekafka-scope=function")
    assert run.counts == {"passed": 4}, run.output
    first, second = bootstraps(project)
    assert first != second  # a broker of each test's own


def test_function_scope_from_the_ini_file(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", APP_TESTS, ini="wirekafka_scope = function")
    run = run_pytest(project, "-k", "create")  # the two tests using kafka_broker
    assert run.counts == {"passed": 2, "deselected": 2}, run.output
    first, second = bootstraps(project)
    assert first != second


def test_bad_scope_is_a_usage_error(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", APP_TESTS, ini="wirekafka_scope = forever")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert result.returncode != 0
    assert "wirekafka_scope = 'forever'" in result.stdout + result.stderr


def test_cluster_on_zookeeper(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", CLUSTER_TESTS)
    run = run_pytest(project)
    assert run.counts == {"passed": 1}, run.output


def test_failures_are_reported(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "project",
        FAILING_TESTS,
        ini="wirekafka_scope = function",
        conftest=FAILING_CONFTEST,
    )
    run = run_pytest(project, "-rA")
    # test_broker_dies passes and errors at teardown; the cluster test errors at setup
    assert run.counts == {"passed": 1, "failed": 2, "errors": 2}, run.output
    assert "ERROR at teardown of test_broker_dies" in run.output
    assert "the broker is not running" in run.output
    assert "ERROR at setup of test_cluster_without_zookeeper" in run.output
    assert "kafka_cluster needs ZooKeeper" in run.output
    assert "apt-get install -y zookeeper" in run.output
    assert "read 0 of 1 records of topic 'empty'" in run.output
    assert "cannot read topic 'missing'" in run.output
    assert "UNKNOWN_TOPIC_OR_PART" in run.output


def test_plugin_registered_once(tmp_path: Path) -> None:
    """By its entry point, in a project of its own and in this one (whose conftest
    uses the plugin's machinery without registering it a second time)."""
    project = make_project(tmp_path / "project", "def test_nothing():\n    pass\n")
    for cwd, args in [
        (project, []),
        (ROOT, ["-o", "addopts=", "--collect-only", "interop_tests/test_pytest_plugin.py"]),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--trace-config", *args],
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": PYTHONPATH},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, output
        registered = re.findall(rf"PLUGIN registered: <module '{re.escape(PLUGIN_MODULE)}'", output)
        assert len(registered) == 1, output
        assert re.search(r"^plugins: .*\bwirekafka-", output, re.MULTILINE), output


def test_readme_example(tmp_path: Path) -> None:
    heading = "Testing your code with wirekafka"
    (test_file,) = readme_examples(heading, language="python")
    (command,) = readme_examples(heading)
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "pytest"], command
    project = tmp_path / "project"
    project.mkdir()
    (project / argv[-1]).write_text(test_file)
    run = run_pytest(project, command=[sys.executable, *argv[1:], "-p", "no:cacheprovider"])
    assert run.counts == {"passed": 2}, run.output


SECURE_TESTS = """
from confluent_kafka import Consumer, Producer, TopicPartition


def test_clients_log_in_over_sasl_ssl(kafka_sasl_ssl_broker):
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        config = kafka_sasl_ssl_broker.client_config(mechanism)
        producer = Producer(config)
        producer.produce("secured", mechanism.encode(), partition=0)
        assert producer.flush(30) == 0
    consumer = Consumer({**kafka_sasl_ssl_broker.client_config(), "group.id": "g"})
    consumer.assign([TopicPartition("secured", 0, 0)])
    values = []
    for _ in range(60):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
        if len(values) == 3:
            break
    consumer.close()
    assert values == [b"PLAIN", b"SCRAM-SHA-256", b"SCRAM-SHA-512"]


def test_a_wrong_password_is_refused(kafka_sasl_ssl_broker):
    errors = []
    config = {**kafka_sasl_ssl_broker.client_config(), "sasl.password": "wrong",
              "error_cb": lambda e: errors.append(e.str()), "message.timeout.ms": 3000}
    producer = Producer(config)
    producer.produce("secured", b"no")
    producer.flush(6)
    assert any("Authentication failed" in e for e in errors), errors
"""


def test_a_sasl_ssl_broker_with_certificates_made_for_the_test(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", SECURE_TESTS)
    run = run_pytest(project)
    assert run.counts == {"passed": 2}, run.output
