"""How the open file limit is shared between connections, log files and partitions."""

from __future__ import annotations

import pytest

from wirekafka.broker.context import broker_fd_budget
from wirekafka.config import broker_config_from_properties
from wirekafka.fd_budget import (
    MIN_FILE_FDS,
    RESERVED_FDS,
    UNLIMITED,
    FdBudgetError,
    fd_budget,
)


def test_defaults_split_what_is_left_after_the_reserve_in_half() -> None:
    budget = fd_budget(4096)
    usable = 4096 - RESERVED_FDS
    assert budget.max_connections == usable // 2
    assert budget.max_connections_per_ip == budget.max_connections
    assert budget.open_files == usable - usable // 2
    assert budget.max_partitions == budget.open_files


def test_max_connections_takes_its_share_and_files_get_the_rest() -> None:
    budget = fd_budget(4096, max_connections=1000, max_connections_per_ip=10)
    assert budget.max_connections == 1000
    assert budget.max_connections_per_ip == 10
    assert budget.open_files == 4096 - RESERVED_FDS - 1000


def test_kafkas_unlimited_default_written_out_is_the_derived_default() -> None:
    assert fd_budget(4096, max_connections=UNLIMITED) == fd_budget(4096)


def test_too_many_connections_for_the_limit_are_lowered() -> None:
    budget = fd_budget(4096, max_connections=5000)
    assert budget.max_connections == 4096 - RESERVED_FDS - MIN_FILE_FDS
    assert budget.open_files == MIN_FILE_FDS


def test_per_ip_never_exceeds_the_total() -> None:
    assert (
        fd_budget(4096, max_connections=100, max_connections_per_ip=500).max_connections_per_ip
        == 100
    )


def test_an_explicit_partition_limit_wins() -> None:
    assert fd_budget(4096, max_partitions=10).max_partitions == 10


def test_a_limit_too_low_names_the_problem() -> None:
    with pytest.raises(FdBudgetError, match="ulimit -n"):
        fd_budget(RESERVED_FDS + MIN_FILE_FDS)


def test_the_broker_config_keys_feed_the_budget() -> None:
    config = broker_config_from_properties(
        {"max.connections": "1000", "max.connections.per.ip": "20", "max.broker.partitions": "7"}
    )
    budget = broker_fd_budget(config, fd_limit=4096)
    assert (budget.max_connections, budget.max_connections_per_ip, budget.max_partitions) == (
        1000,
        20,
        7,
    )
    unset = broker_fd_budget(broker_config_from_properties({}), fd_limit=4096)
    assert unset == fd_budget(4096)
