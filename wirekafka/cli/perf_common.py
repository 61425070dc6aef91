"""What the perf tools share: their progress line (rich), their units and their
clients' log level.

MB are Kafka's perf tools' MB, 1024 * 1024 bytes. The progress line is drawn
only on a terminal and redrawn at most a few times a second; the caller asks
:meth:`ProgressLine.due` before building the line, so a run without one (not a
terminal, ``--json``) builds none.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.text import Text

from wirekafka.cli.output import stdout_console

BYTES_PER_MB = 1024 * 1024
REFRESH_INTERVAL_S = 0.25


def per_second(amount: float, elapsed_s: float) -> float:
    """``amount`` per second over ``elapsed_s`` (0 when no time has passed)."""
    return amount / elapsed_s if elapsed_s > 0 else 0.0


class ProgressLine:
    """One line redrawn in place on ``console`` while the run goes; ``None`` draws nothing."""

    def __init__(self, console: Console | None, *, interval_s: float = REFRESH_INTERVAL_S) -> None:
        self._live = (
            Live(console=console, auto_refresh=False, transient=False)
            if console is not None
            else None
        )
        self._interval_s = interval_s
        self._next_s = 0.0

    def __enter__(self) -> ProgressLine:
        if self._live is not None:
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.stop()

    @property
    def enabled(self) -> bool:
        return self._live is not None

    def due(self) -> bool:
        """Whether the line should be redrawn now (never when there is no line)."""
        if self._live is None:
            return False
        return time.monotonic() >= self._next_s

    def show(self, line: str) -> None:
        """Redraw the line with ``line``."""
        if self._live is None:
            return
        self._live.update(Text(line), refresh=True)
        self._next_s = time.monotonic() + self._interval_s


def progress_console(json_output: bool) -> Console | None:
    """The console the progress line goes to: stdout when it is a terminal and the
    summary is not JSON; otherwise none."""
    if json_output or not sys.stdout.isatty():
        return None
    return stdout_console()
