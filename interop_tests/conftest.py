"""Fixtures: wirekafka brokers in subprocesses, made by :mod:`wirekafka.testing`
(the machinery of the pytest plugin wirekafka ships) with the interop tests'
defaults (:class:`interop_tests.broker.Broker`).

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

from interop_tests.broker import Broker, Brokers
from wirekafka.testing.plugin import started_broker

BrokerFactory = Callable[..., Broker]

# The tests that push a broker to a resource's edge: decompression bombs inflating past
# 200 MiB, 3,000 connections and 60 MiB requests, 100,000 partitions at a descriptor
# limit, a disk (tmpfs) filled up, Apache Kafka's JVM. Under xdist they run one after
# another on one worker, so their peaks of memory and CPU never add up on a small
# machine, and the bomb tests' count of answers to a second client while a bomb is
# handled measures the broker, not a neighbour.
HEAVY = pytest.mark.xdist_group("heavy")


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Start brokers with Kafka settings: ``broker_factory(settings={"num.partitions": "1"})``."""
    with Brokers(tmp_path) as brokers:
        yield brokers


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One broker for the whole module, with the defaults (auto-create on, 3 partitions).
    Every test of the module ran against this process: at the end it must not have
    died, and it must still stop cleanly."""
    yield from started_broker(Brokers(tmp_path_factory.mktemp("broker")))


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
