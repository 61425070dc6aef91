"""The example pipeline's command, run as a user runs it: a process of its own."""

from __future__ import annotations

import subprocess
import sys

from interop_tests.broker import Broker


def test_page_views_command_end_to_end(broker: Broker) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "wirekafka.examples.page_views",
            "--bootstrap-servers",
            broker.bootstrap,
            "--events",
            "3000",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "produced 3000 page views" in done.stdout
    assert "all 80 window counts match the 3000 views produced" in done.stdout
