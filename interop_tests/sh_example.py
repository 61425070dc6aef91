"""A README ``sh`` example run as a user runs it, against a test broker.

``wirekafka`` in the script is this checkout's command (the interpreter running
the tests, the worktree's package); ``localhost:9092`` becomes the broker's
address.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from interop_tests.broker import PYTHONPATH

EXAMPLE_TIMEOUT_S = 120.0


def run_sh_example(script: str, bootstrap: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with bash (``set -eo pipefail``); its output as text, its exit code unchecked."""
    prelude = (
        f'set -eo pipefail\nwirekafka() {{ {shlex.quote(sys.executable)} -m wirekafka "$@"; }}\n'
    )
    return subprocess.run(
        ["bash", "-c", prelude + script.replace("localhost:9092", bootstrap)],
        capture_output=True,
        text=True,
        timeout=EXAMPLE_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        check=False,
    )
