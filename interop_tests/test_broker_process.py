"""The test harness's broker process keeps a port that no client connection can take."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from interop_tests.conftest import BrokerFactory
from wirekafka.testing import process
from wirekafka.testing.ports import ephemeral_range, free_port, with_fixed_ports


def test_a_broker_listens_below_the_ephemeral_range_and_restarts_on_that_port(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory()
    port = broker.port
    assert port is not None
    assert port < ephemeral_range()[0]
    broker.restart(crash=True)
    assert broker.port == port
    with socket.create_connection(broker.address, timeout=5.0):
        pass


def test_a_first_start_whose_port_was_taken_starts_on_another(
    broker_factory: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = taken.getsockname()[1]
        offered: Iterator[Callable[[str], int]] = iter([lambda host: taken_port])

        def fixed(listeners: str) -> str:
            return with_fixed_ports(listeners, next(offered, free_port))

        monkeypatch.setattr(process, "with_fixed_ports", fixed)
        broker = broker_factory()
        assert broker.port not in (None, taken_port)
        assert broker.starts == 2  # the first start could not listen
