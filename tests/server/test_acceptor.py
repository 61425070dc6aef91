"""The acceptor: refusals beyond the limits, rate-limited logs, and EMFILE as back-pressure.

Fake listeners and streams stand in for sockets; trio's MockClock jumps
through the waits.
"""

from __future__ import annotations

import errno
import logging
from collections import deque
from typing import Any

import pytest
import trio
import trio.testing

from wirekafka.server.acceptor import REFUSAL_LOG_INTERVAL_S, Acceptor
from wirekafka.server.connection_quotas import ConnectionQuotas


class FakeSocket:
    def __init__(self, host: str, port: int) -> None:
        self.address = (host, port)
        self.closed = False

    def getpeername(self) -> tuple[str, int]:
        return self.address


class FakeStream:
    def __init__(self, host: str, port: int = 40000) -> None:
        self.socket = FakeSocket(host, port)

    async def aclose(self) -> None:
        self.socket.closed = True
        await trio.lowlevel.checkpoint()


class FakeListener:
    """Hands out what it is given: a stream, an OSError to raise, or a function
    returning either; then waits forever."""

    def __init__(self, *script: Any) -> None:
        self.script: deque[Any] = deque(script)
        self.accepted_at: list[float] = []

    async def accept(self) -> Any:
        await trio.lowlevel.checkpoint()
        while self.script:
            item = self.script[0]
            if callable(item):
                item = item()
                if item is None:  # nothing yet: the same entry again
                    raise OSError(errno.EMFILE, "Too many open files")
            self.script.popleft()
            if isinstance(item, OSError):
                raise item
            self.accepted_at.append(trio.current_time())
            return item
        await trio.sleep_forever()


class Served:
    """The connections the acceptor runs; each stays open until released."""

    def __init__(self) -> None:
        self.streams: list[FakeStream] = []
        self.release = trio.Event()

    async def __call__(self, stream: Any) -> None:
        self.streams.append(stream)
        await self.release.wait()


def run(main: Any) -> None:
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_connections_beyond_the_limits_are_closed_at_once_and_counts_come_back() -> None:
    quotas = ConnectionQuotas(max_connections=3, max_connections_per_ip=2)
    served = Served()
    streams = [FakeStream(h) for h in ("10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2", "::1")]

    async def main() -> None:
        acceptor = Acceptor(quotas, served)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(acceptor.accept_from, FakeListener(*streams), nursery)
            await trio.testing.wait_all_tasks_blocked()
            assert [s.socket.closed for s in streams] == [False, False, True, False, True]
            assert served.streams == [streams[0], streams[1], streams[3]]
            assert quotas.total == 3
            assert not acceptor.no_connections.is_set()
            served.release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert quotas.total == 0
            assert all(s.socket.closed for s in streams)
            assert acceptor.no_connections.is_set()
            nursery.cancel_scope.cancel()

    run(main)


def test_refusals_are_logged_once_an_interval_with_the_count_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quotas = ConnectionQuotas(max_connections=1, max_connections_per_ip=1)
    served = Served()

    async def main() -> None:
        acceptor = Acceptor(quotas, served)
        async with trio.open_nursery() as nursery:
            burst = [FakeStream("10.0.0.1", port) for port in range(1000, 2001)]
            nursery.start_soon(acceptor.accept_from, FakeListener(*burst), nursery)
            await trio.testing.wait_all_tasks_blocked()
            assert len(served.streams) == 1
            await trio.sleep(REFUSAL_LOG_INTERVAL_S)
            nursery.start_soon(
                acceptor.accept_from, FakeListener(FakeStream("10.0.0.2", 7)), nursery
            )
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.INFO, logger="wirekafka.server"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert lines == [
        "refused a connection from 10.0.0.1:1001: max.connections=1 reached",
        "refused a connection from 10.0.0.2:7: max.connections=1 reached "
        "(and 999 more since the last report)",
    ]


def test_running_out_of_descriptors_waits_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quotas = ConnectionQuotas(max_connections=10, max_connections_per_ip=10)
    served = Served()
    later = FakeStream("10.0.0.1")
    emfile = [OSError(errno.EMFILE, "Too many open files") for _ in range(50)]

    async def main() -> None:
        acceptor = Acceptor(quotas, served)
        async with trio.open_nursery() as nursery:
            listener = FakeListener(*emfile, later)
            nursery.start_soon(acceptor.accept_from, listener, nursery)
            await trio.sleep(3600)
            assert served.streams == [later]
            # it waited between tries, longer each time up to a second: 50 took over 40 s
            assert listener.accepted_at[0] > 40
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.INFO, logger="wirekafka.server"):
        run(main)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert messages[0].startswith("cannot accept connections: EMFILE (Too many open files)")
    assert messages[1].startswith("accepting connections again after ")


def test_a_connection_closing_ends_the_wait_for_a_descriptor_at_once() -> None:
    quotas = ConnectionQuotas(max_connections=10, max_connections_per_ip=10)
    served = Served()
    first, second = FakeStream("10.0.0.1"), FakeStream("10.0.0.2")
    free = False
    listener = FakeListener(first, lambda: second if free else None)
    closed_at = 0.0

    async def main() -> None:
        nonlocal free, closed_at
        acceptor = Acceptor(quotas, served)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(acceptor.accept_from, listener, nursery)
            await trio.sleep(4.95)  # the acceptor's waits have grown to a second by now
            free = True
            closed_at = trio.current_time()
            served.release.set()  # the first connection closes, giving back its descriptor
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()

    run(main)
    assert listener.accepted_at == [0.0, closed_at]
