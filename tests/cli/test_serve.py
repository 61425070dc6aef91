"""The broker's entry point: what it sets up before the event loop starts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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
