"""The ``wirekafka`` command run as a subprocess, as a user runs it.

It runs this checkout's package (a worktree's too: the same ``PYTHONPATH`` as
the broker subprocesses) with the interpreter running the tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Protocol

from interop_tests.broker import PYTHONPATH

COMMAND_TIMEOUT_S = 120.0


class Bootstrapped(Protocol):
    """What the command is pointed at: a wirekafka broker subprocess or Apache Kafka."""

    @property
    def bootstrap(self) -> str: ...


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
