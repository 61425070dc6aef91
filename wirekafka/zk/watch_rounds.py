"""Rounds of ZooKeeper reads that keep a cache on the event loop fresh.

A round runs (its reads in a worker thread) at once, again whenever a watch
fires — :meth:`WatchRounds.ask`, from kazoo's thread or any other — and every
``refresh_s`` should a watch have been missed. A round that fails is logged
and tried again after ``retry_s``: the watches it would have set are gone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

import trio

log = logging.getLogger("wirekafka.zk")

REFRESH_SECONDS = 10.0  # a round though no watch fired: should one have been missed
RETRY_SECONDS = 0.3  # the next round after one that failed


class WatchRounds:
    """When the next round runs. ``token``: the event loop the rounds run on (set by
    :meth:`run` when not given); without one, :meth:`ask` does nothing."""

    def __init__(
        self,
        token: trio.lowlevel.TrioToken | None = None,
        *,
        refresh_s: float = REFRESH_SECONDS,
        retry_s: float = RETRY_SECONDS,
    ) -> None:
        self.token = token
        self.refresh_s = refresh_s
        self.retry_s = retry_s
        self._wake: trio.Event | None = None  # set on the event loop: a round now

    def ask(self, _event: object = None) -> None:
        """From any thread (a kazoo watch): the next round, at once."""
        token = self.token
        if token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(self.ask_on_loop)

    def ask_on_loop(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(
        self,
        one_round: Callable[[], Awaitable[bool]],
        failures: tuple[type[BaseException], ...],
        failed: str,
    ) -> None:
        """Run ``one_round`` until cancelled; it returns False to run again at once (a
        change of this broker's landed while it read). An exception of ``failures`` is
        logged as ``failed: <exception>``."""
        if self.token is None:
            self.token = trio.lowlevel.current_trio_token()
        self._wake = trio.Event()
        self._wake.set()
        wait_s = self.refresh_s
        while True:
            with trio.move_on_after(wait_s):
                await self._wake.wait()
            self._wake = trio.Event()  # a watch firing from here on asks for the next round
            try:
                done = await one_round()
            except failures as exc:
                log.warning("%s: %s", failed, exc)
                wait_s = self.retry_s
                continue
            wait_s = self.refresh_s
            if not done:
                self._wake.set()
