"""max.connections, max.connections.per.ip and its overrides, counted per address."""

from __future__ import annotations

import ipaddress

import pytest

from wirekafka.server.connection_quotas import ConnectionQuotas, peer_key, resolve_overrides

ONE = ipaddress.ip_address("10.0.0.1")
TWO = ipaddress.ip_address("10.0.0.2")
THREE = ipaddress.ip_address("10.0.0.3")


def test_the_total_limit_refuses_naming_the_key() -> None:
    quotas = ConnectionQuotas(max_connections=2, max_connections_per_ip=2)
    assert quotas.try_inc(ONE) is None
    assert quotas.try_inc(TWO) is None
    assert quotas.try_inc(THREE) == "max.connections=2 reached"
    assert quotas.total == 2
    quotas.dec(ONE)
    assert quotas.try_inc(THREE) is None


def test_the_per_ip_limit_counts_each_address_apart() -> None:
    quotas = ConnectionQuotas(max_connections=100, max_connections_per_ip=2)
    assert [quotas.try_inc(ONE) for _ in range(3)] == [
        None,
        None,
        "max.connections.per.ip gives 10.0.0.1 at most 2, reached",
    ]
    assert quotas.try_inc(TWO) is None
    assert (quotas.count(ONE), quotas.count(TWO), quotas.total) == (2, 1, 3)
    quotas.dec(ONE)
    assert quotas.try_inc(ONE) is None


def test_overrides_raise_or_lower_an_address_limit() -> None:
    quotas = ConnectionQuotas(
        max_connections=100, max_connections_per_ip=1, overrides={ONE: 3, TWO: 0}
    )
    assert [quotas.try_inc(ONE) for _ in range(4)][-1] == (
        "max.connections.per.ip.overrides gives 10.0.0.1 at most 3, reached"
    )
    assert quotas.count(ONE) == 3
    assert quotas.try_inc(TWO) is not None
    assert quotas.try_inc(THREE) is None
    assert quotas.try_inc(THREE) is not None


def test_giving_back_a_connection_never_counted_is_a_bug() -> None:
    quotas = ConnectionQuotas(max_connections=1, max_connections_per_ip=1)
    with pytest.raises(KeyError):
        quotas.dec(ONE)


def test_an_ipv4_client_of_a_dual_stack_listener_counts_as_its_ipv4_address() -> None:
    assert peer_key("::ffff:10.0.0.1") == ONE
    assert peer_key("10.0.0.1") == ONE
    assert peer_key("::1") == ipaddress.ip_address("::1")
    assert peer_key("not-an-address") == "not-an-address"


def test_override_hosts_are_resolved_and_a_name_that_is_not_fails_naming_the_key() -> None:
    resolved = resolve_overrides({"10.0.0.1": 5, "::1": 2, "localhost": 7})
    assert resolved[ONE] == 5
    assert resolved[ipaddress.ip_address("127.0.0.1")] == 7
    assert resolved[ipaddress.ip_address("::1")] == 2  # written out: wins over localhost's
    with pytest.raises(OSError, match=r"max\.connections\.per\.ip\.overrides.*nowhere\.invalid"):
        resolve_overrides({"nowhere.invalid": 1})
