"""Waiting, bounded, for something a broker does in the background."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(
    condition: Callable[[], bool], what: str, timeout_s: float = 30.0, every_s: float = 0.05
) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(every_s)
