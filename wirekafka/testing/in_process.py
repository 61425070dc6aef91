"""A wirekafka broker on trio in a background thread of this process.

``with in_process_broker() as bootstrap:`` starts a broker on port 0 of
127.0.0.1 with a temporary data dir (or ``data_dir``), yields its
``host:port`` once it listens, and on exit asks it to stop, waits for a clean
shutdown and removes the temporary dir. No subprocess: the broker shares this
interpreter (and its GIL) with the test, which is what makes it quick to start.
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import trio

from wirekafka.config import broker_config_from_properties
from wirekafka.server.broker import Broker
from wirekafka.testing.process import BASE_OVERRIDES, BrokerError, kafka_settings

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class _Running:
    """The broker's trio run, as the starting thread sees it."""

    def __init__(self, server: Broker) -> None:
        self.server = server
        self.token: trio.lowlevel.TrioToken | None = None
        self.bootstrap = ""
        self.started: queue.Queue[BaseException | None] = queue.Queue()
        self.failure: BaseException | None = None

    async def main(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            endpoint = await nursery.start(self.server.serve)
            self.bootstrap = f"{endpoint.host}:{endpoint.port}"
            self.started.put(None)

    def run(self) -> None:
        try:
            trio.run(self.main)
        except BaseException as exc:  # handed to the thread that started the broker
            self.failure = exc
            self.started.put(exc)


@contextlib.contextmanager
def in_process_broker(
    settings: Mapping[str, object] | None = None,
    *,
    data_dir: Path | None = None,
    **keywords: object,
) -> Iterator[str]:
    """Run a broker in a background thread; yield its ``host:port``.

    ``settings`` are Kafka's keys (``{"num.partitions": 3}``), ``keywords`` the same
    with underscores (``auto_create_topics_enable=False``); a bad one raises
    :class:`~wirekafka.storage.config.ConfigError`. A broker that cannot start, fails
    while running or does not stop within 30 s raises
    :class:`~wirekafka.testing.process.BrokerError`.
    """
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wirekafka-")))
        properties = {
            **BASE_OVERRIDES,
            "log.dirs": str(data_dir),
            **kafka_settings(settings, **keywords),
        }
        running = _Running(Broker(broker_config_from_properties(properties)))
        thread = threading.Thread(target=running.run, name="wirekafka-broker", daemon=True)
        thread.start()
        try:
            failure = running.started.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            raise BrokerError(f"the broker did not listen within {START_TIMEOUT_S} s") from None
        if failure is not None:
            thread.join()
            raise BrokerError(f"the broker did not start: {_first_leaf(failure)}") from failure
        try:
            yield running.bootstrap
        finally:
            assert running.token is not None
            # a broker that has stopped already raises its failure below
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(running.server.request_stop, trio_token=running.token)
            thread.join(STOP_TIMEOUT_S)
            if thread.is_alive():
                raise BrokerError(f"the broker did not stop within {STOP_TIMEOUT_S} s")
            if running.failure is not None:
                raise BrokerError("the broker failed while running") from running.failure


def _first_leaf(error: BaseException) -> BaseException:
    """The first error an exception group holds (the nursery's wrap a task's)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
