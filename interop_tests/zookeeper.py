"""ZooKeeper fixtures for interop tests, over :mod:`wirekafka.testing.zookeeper`.

The fixtures ``zookeeper`` (one per test) and ``zookeeper_module`` (one per test
module) give a started :class:`ZooKeeper` and stop it afterwards. Import them in
a test module (or a conftest) to use them::

    from interop_tests.zookeeper import zookeeper  # noqa: F401

Without the package the fixtures fail (they do not skip), saying how to install it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wirekafka.testing.zookeeper import (
    INSTALL_HINT,
    ZooKeeper,
    ZooKeeperError,
    missing_reason,
)

__all__ = [
    "INSTALL_HINT",
    "ZooKeeper",
    "ZooKeeperError",
    "missing_reason",
    "zookeeper",
    "zookeeper_module",
]


def _started(root: Path) -> ZooKeeper:
    reason = missing_reason()
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    return ZooKeeper(root).start()


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeper]:
    """A ZooKeeper for this test; stopped (killed if need be) at teardown."""
    server = _started(tmp_path / "zookeeper")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def zookeeper_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeper]:
    """A ZooKeeper shared by the tests of a module; tests use distinct paths (or a chroot)."""
    server = _started(tmp_path_factory.mktemp("zookeeper"))
    try:
        yield server
    finally:
        server.close()
