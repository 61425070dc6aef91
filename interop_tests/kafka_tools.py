"""Apache Kafka's own command-line tools, run against a broker from the interop tests.

Each tool is a main class of the jar set ``kafka`` (``interop_tests/jvm/jars/kafka``),
started as ``java -cp '<jars>/*' <MainClass> --bootstrap-server <broker> ...``, as
Kafka's ``bin/kafka-*.sh`` scripts start it. Its logging goes through
``jvm/tools-log4j2.properties`` (warnings and errors on stderr), so stdout holds
only what the tool prints for its user. A run that does not end within its
timeout is killed and fails the test with whatever the tool had printed; so
does a run that succeeds but logged a warning or an error (a tool logs, and
carries on past, answers it did not expect).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from interop_tests.jvm_jars import JARS_DIR, JVM_DIR, KAFKA, jars, java

LOG4J2_CONFIG = JVM_DIR / "tools-log4j2.properties"
# A line the log config writes at WARN or ERROR: "[2026-11-24 08:41:52,378] WARN ..."
LOGGED_PROBLEM = re.compile(r"^\[[^\]]+\] (WARN|ERROR) ", re.MULTILINE)
TIMEOUT_S = 180.0

# The bin/ script names of Kafka 4.3 and the main classes they start.
MAIN_CLASSES = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
}

# A tool starts, runs one command and exits: the JIT's first tier and the serial
# collector start quickest and take the least CPU from a loaded machine.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m")


class ToolFailed(AssertionError):
    """A tool exited with an unexpected status, or did not exit in time."""


@dataclass(frozen=True, slots=True)
class ToolRun:
    tool: str
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def logged_problems(self) -> list[str]:
        """The lines the tool logged at WARN or ERROR."""
        return [
            m.group(0) + self.stderr[m.end() :].split("\n", 1)[0]
            for m in LOGGED_PROBLEM.finditer(self.stderr)
        ]

    @property
    def lines(self) -> list[str]:
        """stdout's lines that are not blank."""
        return [line for line in self.stdout.splitlines() if line.strip()]

    def report(self) -> str:
        return (
            f"{self.tool} {' '.join(self.args)}\nexit status {self.returncode}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
        )


def command(tool: str, args: Sequence[str]) -> list[str]:
    jars(KAFKA)  # fails with how to fetch them when they are missing
    return [
        java(),
        *JVM_OPTIONS,
        f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
        "-cp",
        str(JARS_DIR / KAFKA / "*"),
        MAIN_CLASSES[tool],
        *args,
    ]


def run_tool(
    tool: str,
    *args: str,
    stdin: str = "",
    expect_status: int | None = 0,
    timeout_s: float = TIMEOUT_S,
) -> ToolRun:
    """Run ``tool`` (a bin/ script's name) with ``args``, ``stdin`` as its input.

    Fails unless it exits with ``expect_status`` (None: any status), and, when that
    is 0, if it logged a warning or an error.
    """
    try:
        done = subprocess.run(
            command(tool, args),
            input=stdin.encode(),
            capture_output=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        stdout = (exc.stdout or b"").decode(errors="replace")
        stderr = (exc.stderr or b"").decode(errors="replace")
        raise ToolFailed(
            f"{tool} {' '.join(args)} did not exit within {timeout_s} s\n"
            f"--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ) from None
    run = ToolRun(
        tool=tool,
        args=tuple(args),
        returncode=done.returncode,
        stdout=done.stdout.decode(errors="replace"),
        stderr=done.stderr.decode(errors="replace"),
    )
    if expect_status is not None and run.returncode != expect_status:
        raise ToolFailed(f"expected exit status {expect_status}\n{run.report()}")
    if expect_status == 0 and run.logged_problems:
        raise ToolFailed(f"it logged {run.logged_problems}\n{run.report()}")
    return run


class KafkaTools:
    """The tools pointed at one broker: ``tools.topics("--list")``."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def run(self, tool: str, *args: str, **kwargs) -> ToolRun:
        return run_tool(tool, "--bootstrap-server", self.bootstrap, *args, **kwargs)

    def topics(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-topics", *args, **kwargs)

    def console_producer(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-console-producer", *args, **kwargs)

    def console_consumer(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-console-consumer", *args, **kwargs)

    def consumer_groups(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-consumer-groups", *args, **kwargs)

    def configs(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-configs", *args, **kwargs)

    def acls(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-acls", *args, **kwargs)

    def get_offsets(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-get-offsets", *args, **kwargs)

    def producer_perf_test(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-producer-perf-test", *args, **kwargs)

    def consumer_perf_test(self, *args: str, **kwargs) -> ToolRun:
        return self.run("kafka-consumer-perf-test", *args, **kwargs)


def table(lines: Sequence[str], first_column: str) -> list[dict[str, str]]:
    """The rows of the tables the tools print: a header line starting with
    ``first_column``, then one row a line, columns separated by white space (no
    cell holds any). Lines before the first header (warnings) are left out, and
    the header repeated before each further table (one per group) is skipped."""
    found: list[dict[str, str]] = []
    names: list[str] | None = None
    for line in lines:
        cells = line.split()
        if cells and cells[0] == first_column:
            names = cells
        elif names is not None and cells:
            assert len(cells) == len(names), f"row {line!r} does not fit columns {names}"
            found.append(dict(zip(names, cells, strict=True)))
    assert names is not None, f"no table with a {first_column} column in {list(lines)}"
    return found
