"""Log lines a broker might write in a flood (refused connections, clients'
questions), kept to a number per interval."""

from __future__ import annotations

import math
from collections.abc import Callable

import trio


class LogLimiter:
    """At most ``lines`` log lines per ``interval_s`` of ``clock`` (trio's, unless
    given); counts the lines left out."""

    __slots__ = ("_clock", "_lines_left", "_window_ends_at", "interval_s", "left_out", "lines")

    def __init__(
        self,
        interval_s: float,
        *,
        lines: int = 1,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.interval_s = interval_s
        self.lines = lines
        self.left_out = 0
        self._clock = clock
        self._window_ends_at = -math.inf
        self._lines_left = 0

    def allow(self) -> int | None:
        """None: leave this line out. Otherwise log it, with the count returned,
        of lines left out since the last one."""
        now = self._clock()
        if now >= self._window_ends_at:
            self._window_ends_at = now + self.interval_s
            self._lines_left = self.lines
        if not self._lines_left:
            self.left_out += 1
            return None
        self._lines_left -= 1
        left_out, self.left_out = self.left_out, 0
        return left_out


def since_last(left_out: int) -> str:
    """What to add to a line that :meth:`LogLimiter.allow` let through."""
    return f" (and {left_out} more since the last report)" if left_out else ""
