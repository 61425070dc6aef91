"""The wirekafka pytest plugin: brokers for the tests of a project that uses Kafka.

Installed with wirekafka (the ``pytest11`` entry point ``wirekafka``), so pytest
loads it by itself. Fixtures:

* ``kafka_broker``: a broker subprocess on a free port of 127.0.0.1 with a
  temporary data dir and the broker's defaults (topics auto-created with one
  partition); ``.bootstrap`` is its ``host:port``. One for the whole session;
  ``--wirekafka-scope=function`` (or the ini option ``wirekafka_scope``) gives
  each test its own (also ``package``, ``module``, ``class``). At teardown it
  must still run and stop cleanly, or the last test using it errors.
* ``kafka_broker_factory``: ``kafka_broker_factory({"num.partitions": 3})`` starts
  a broker of the test's own with Kafka's settings (or keywords:
  ``auto_create_topics_enable=False``); each is killed at the test's end.
* ``kafka_sasl_ssl_broker``: a broker whose clients log in over SASL_SSL, with
  certificates made for the test; ``.client_config("SCRAM-SHA-512")`` gives
  confluent-kafka's settings (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 work),
  ``.certificates.ca`` the CA to trust (:mod:`wirekafka.testing.secure_broker`).
  Shared like ``kafka_broker``; needs ``trustme`` (``pip install trustme``).
* ``kafka_cluster``: ``kafka_cluster(brokers=3, settings=None)`` starts brokers
  sharing a ZooKeeper (Debian's ``zookeeper`` package); ``.bootstrap`` lists them
  all. Without ZooKeeper the test fails saying what to install.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import pytest

from wirekafka.testing.process import BrokerFactory, BrokerProcess
from wirekafka.testing.zookeeper import missing_reason

if TYPE_CHECKING:  # loaded by the fixture, so loading the plugin imports no Kafka client
    from wirekafka.testing.cluster import BrokerCluster
    from wirekafka.testing.secure_broker import SecureBroker

Scope = Literal["session", "package", "module", "class", "function"]
SCOPES: tuple[Scope, ...] = ("session", "package", "module", "class", "function")
DEFAULT_SCOPE = "session"

ClusterFactory = Callable[..., "BrokerCluster"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wirekafka", "wirekafka brokers for tests")
    group.addoption(
        "--wirekafka-scope",
        dest="wirekafka_scope",
        choices=SCOPES,
        default=None,
        help=f"the scope of the kafka_broker fixture (default: the ini option, else "
        f"{DEFAULT_SCOPE})",
    )
    parser.addini(
        "wirekafka_scope",
        help=f"the scope of the kafka_broker fixture: {', '.join(SCOPES)}",
        default=DEFAULT_SCOPE,
    )


def pytest_configure(config: pytest.Config) -> None:
    broker_scope("kafka_broker", config)  # a bad ini value stops the run before collection


def broker_scope(fixture_name: str, config: pytest.Config) -> Scope:
    """``kafka_broker``'s scope: ``--wirekafka-scope``, else the ini option."""
    scope = config.getoption("wirekafka_scope") or config.getini("wirekafka_scope")
    if scope not in SCOPES:
        raise pytest.UsageError(f"wirekafka_scope = {scope!r}: one of {', '.join(SCOPES)}")
    return cast(Scope, scope)


def started_broker(factory: BrokerFactory) -> Iterator[BrokerProcess]:
    """A broker of ``factory`` for a fixture that shares it: at the end it must
    still be running and stop cleanly (a broker that died fails the teardown)."""
    with factory:
        broker = factory()
        yield broker
        broker.assert_running()
        broker.stop()


@pytest.fixture(scope=broker_scope)
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker subprocess (``.bootstrap``: ``host:port``); shared per ``wirekafka_scope``."""
    yield from started_broker(BrokerFactory(tmp_path_factory.mktemp("kafka_broker")))


@pytest.fixture(scope=broker_scope)
def kafka_sasl_ssl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """A broker on SASL_SSL with a user and certificates of its own; shared per
    ``wirekafka_scope``."""
    from wirekafka.testing.secure_broker import start_secure_broker

    directory = tmp_path_factory.mktemp("kafka_sasl_ssl_broker")
    with BrokerFactory(directory / "brokers") as factory:
        secure = start_secure_broker(factory, directory)
        yield secure
        secure.broker.assert_running()
        secure.broker.stop()


@pytest.fixture
def kafka_broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Start brokers with Kafka's settings: ``kafka_broker_factory({"num.partitions": 3})``."""
    with BrokerFactory(tmp_path / "kafka_brokers") as factory:
        yield factory


@pytest.fixture
def kafka_cluster(tmp_path: Path) -> Iterator[ClusterFactory]:
    """Start brokers on one ZooKeeper: ``kafka_cluster(brokers=3, settings=None)``."""
    reason = missing_reason()
    if reason is not None:
        pytest.fail(f"kafka_cluster needs ZooKeeper: {reason}", pytrace=False)
    from wirekafka.testing.cluster import BrokerCluster

    clusters: list[BrokerCluster] = []

    def start(brokers: int = 3, settings: Mapping[str, object] | None = None) -> BrokerCluster:
        cluster = BrokerCluster(tmp_path / f"kafka_cluster-{len(clusters)}", brokers, settings)
        clusters.append(cluster)
        return cluster.start()

    try:
        yield start
    finally:
        for cluster in clusters:
            cluster.close()
