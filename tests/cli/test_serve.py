"""The broker's entry point: what it sets up before the event loop starts."""

from __future__ import annotations

import argparse
import gc
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from wirekafka.cli import serve


@pytest.fixture
def switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("switch_interval")
def test_the_broker_runs_its_loop_with_a_short_switch_interval(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A thread running Python keeps the GIL from the event loop for up to the
    switch interval: the broker's loop starts with 1 ms, not the default 5."""
    seen: list[float] = []
    monkeypatch.setattr(serve, "configure_logging", lambda *args: None)
    monkeypatch.setattr(serve.trio, "run", lambda *args: seen.append(sys.getswitchinterval()))
    args = argparse.Namespace(
        log_level="WARNING", log_format=None, config=None, override=[f"log.dirs={tmp_path}"]
    )
    assert sys.getswitchinterval() == pytest.approx(0.005)
    assert serve.run(args) == 0
    assert seen == [pytest.approx(serve.SWITCH_INTERVAL_S)] and serve.SWITCH_INTERVAL_S <= 0.001


class _Cycle:
    """An object that refers to itself: only the cycle collector frees it."""

    def __init__(self) -> None:
        self.me = self


def _cycle() -> weakref.ref[_Cycle]:
    return weakref.ref(_Cycle())


@pytest.fixture
def unfrozen() -> Iterator[None]:
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_settling_the_heap_collects_first_then_leaves_the_rest_out_of_collections() -> None:
    before = _cycle()
    live = _Cycle()
    serve.settle_heap()
    assert before() is None  # garbage is collected, not frozen
    assert gc.get_freeze_count() > 0
    kept = weakref.ref(live)
    del live
    gc.collect()
    assert kept() is not None  # frozen: a full collection no longer looks at it
    after = _cycle()
    gc.collect()
    assert after() is None  # what is made later is collected as usual


class _StartsThenFails:
    """A broker that reports it serves, then fails (so that ``_serve`` returns)."""

    listen_urls = ("PLAINTEXT://127.0.0.1:1",)
    metrics_url = None

    def __init__(self, config: Any) -> None:
        self.config = config

    async def serve(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started(SimpleNamespace(node_id=0, host="127.0.0.1", port=1))
        await trio.lowlevel.checkpoint()
        raise RuntimeError("stopped by the test")

    def request_stop(self) -> None:
        pass


def test_the_broker_settles_its_heap_once_it_serves(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    events: list[str] = []
    monkeypatch.setattr(serve, "Broker", _StartsThenFails)
    monkeypatch.setattr(serve, "settle_heap", lambda: events.append("settled"))
    config = serve.load_config(None, [f"log.dirs={tmp_path}"])
    with pytest.raises(BaseExceptionGroup) as raised:
        trio.run(serve._serve, config)
    assert raised.group_contains(RuntimeError, match="stopped by the test")
    assert events == ["settled"]
