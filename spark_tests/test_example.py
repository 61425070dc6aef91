"""The example pipeline's command, run as a user runs it: a process of its own.

With ``--source-format kafka`` it runs on Spark's own connector, given the jars
``interop_tests/jvm/fetch`` brought, as the README shows.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from interop_tests.conftest import BrokerFactory
from interop_tests.jvm_jars import SPARK_KAFKA, jars


@pytest.mark.slow
@pytest.mark.parametrize("source_format", ["wirekafka", "kafka"])
def test_page_views_command_end_to_end(broker_factory: BrokerFactory, source_format: str) -> None:
    # A broker of the test's own, not the module's: each command starts a Spark of its
    # own for a minute or more, and under xdist the two run on two workers at once.
    broker = broker_factory()
    command = [
        sys.executable,
        "-m",
        "wirekafka.examples.page_views",
        "--bootstrap-servers",
        broker.bootstrap,
        "--events",
        "3000",
        "--source-format",
        source_format,
    ]
    if source_format == "kafka":
        command += ["--jars", ",".join(str(jar) for jar in jars(SPARK_KAFKA))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "produced 3000 page views" in done.stdout
    assert "all 80 window counts match the 3000 views produced" in done.stdout


def test_kafka_source_format_without_jars_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wirekafka.examples.page_views", "--source-format", "kafka"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--source-format kafka needs Spark's Kafka connector" in done.stderr
