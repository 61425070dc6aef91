"""Fixtures: wirekafka brokers in subprocesses.

* ``broker``: one broker per test module (auto-create on, 3 partitions per
  auto-created topic); tests use distinct topic names. At the end of the
  module it must still be running, and it must stop cleanly.
* ``broker_factory``: ``broker_factory(**overrides)`` starts a broker of the
  test's own (a data dir under ``tmp_path``), for settings such as
  ``auto.create.topics.enable=false`` or for tests that stop, kill and restart
  it; ``fd_limit=N`` starts it with ``RLIMIT_NOFILE`` N (soft and hard).
  Whatever is left running is killed at teardown.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from interop_tests.broker import Broker

BrokerFactory = Callable[..., Broker]

# The tests that push a broker to a resource's edge: decompression bombs inflating past
# 200 MiB, 3,000 connections and 60 MiB requests, 100,000 partitions at a descriptor
# limit, a disk (tmpfs) filled up, Apache Kafka's JVM. Under xdist they run one after
# another on one worker, so their peaks of memory and CPU never add up on a small
# machine, and the bomb tests' count of answers to a second client while a bomb is
# handled measures the broker, not a neighbour.
HEAVY = pytest.mark.xdist_group("heavy")

_names = itertools.count()


def _overrides(kwargs: dict[str, object]) -> dict[str, str]:
    """``auto_create_topics_enable=False`` style keywords, or a ``settings`` dict of Kafka keys."""
    settings = {str(k): _kafka_value(v) for k, v in dict(kwargs.pop("settings", {}) or {}).items()}
    for key, value in kwargs.items():
        settings[key.replace("_", ".")] = _kafka_value(value)
    return settings


def _kafka_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Brokers:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Broker] = []

    def __call__(self, *, fd_limit: int | None = None, **kwargs: object) -> Broker:
        data_dir = self.root / f"broker-{next(_names)}" / "data"
        broker = Broker(data_dir, _overrides(kwargs), fd_limit=fd_limit)
        self.started.append(broker)
        return broker.start()

    def close_all(self) -> None:
        for broker in self.started:
            broker.close()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Start brokers with Kafka settings: ``broker_factory(settings={"num.partitions": "1"})``."""
    brokers = _Brokers(tmp_path)
    try:
        yield brokers
    finally:
        brokers.close_all()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One broker for the whole module, with the defaults (auto-create on, 3 partitions)."""
    brokers = _Brokers(tmp_path_factory.mktemp("broker"))
    try:
        started = brokers()
        yield started
        # Every test of the module ran against this process: it must not have died, and it
        # must still stop cleanly.
        started.assert_running()
        started.stop()
    finally:
        brokers.close_all()


_topic_counter = itertools.count()


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Topic names unique within the session, made from the test's name."""
    base = "".join(c if c.isalnum() or c in "._-" else "-" for c in request.node.name)[:150]

    def make(suffix: str = "") -> str:
        name = (
            f"{base}-{suffix}-{next(_topic_counter)}"
            if suffix
            else f"{base}-{next(_topic_counter)}"
        )
        return name[:249]

    return make
