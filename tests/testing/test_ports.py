"""Listeners given fixed ports for brokers that restart (no sockets: the chooser is given)."""

from __future__ import annotations

import itertools

from wirekafka.testing.ports import with_fixed_ports


def test_each_port_zero_gets_a_port_of_its_own_host() -> None:
    ports = itertools.count(20_000)
    asked: list[str] = []

    def choose(host: str) -> int:
        asked.append(host)
        return next(ports)

    listeners = "PLAINTEXT://127.0.0.1:0,SASL_SSL://localhost:0"
    assert with_fixed_ports(listeners, choose) == (
        "PLAINTEXT://127.0.0.1:20000,SASL_SSL://localhost:20001"
    )
    assert asked == ["127.0.0.1", "localhost"]


def test_ports_that_are_not_zero_are_kept() -> None:
    def choose(host: str) -> int:
        raise AssertionError(f"asked for a port of {host}")

    for listeners in ("PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:10,SSL://h:0900"):
        assert with_fixed_ports(listeners, choose) == listeners


def test_only_the_zero_ports_of_a_mixed_list_change() -> None:
    listeners = "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:0"
    assert with_fixed_ports(listeners, lambda host: 23_456) == (
        "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:23456"
    )
