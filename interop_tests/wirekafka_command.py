"""The ``wirekafka`` command run as a subprocess, as a user runs it.

It runs this checkout's package (a worktree's too: the same ``PYTHONPATH`` as
the broker subprocesses) with the interpreter running the tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

from interop_tests.broker import PYTHONPATH

COMMAND_TIMEOUT_S = 120.0


def wirekafka_command(
    *args: str, input: str | bytes | None = None, timeout: float = COMMAND_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """Run ``wirekafka ARGS``; its stdout and stderr as text, its exit code unchecked."""
    data = input.decode() if isinstance(input, bytes) else input
    return subprocess.run(
        [sys.executable, "-m", "wirekafka", *args],
        input=data,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        check=False,
    )
