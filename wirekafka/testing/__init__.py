"""wirekafka for the tests of a project that uses Kafka.

* :func:`in_process_broker`: ``with in_process_broker() as bootstrap:`` a broker
  on trio in a background thread of this process (no subprocess).
* :class:`BrokerProcess`, :class:`BrokerFactory`: brokers in subprocesses;
  :class:`BrokerCluster`: several on one ZooKeeper (:class:`ZooKeeper`).
* :func:`create_topic`, :func:`read_topic`: on confluent-kafka.
* :mod:`wirekafka.testing.plugin`: the pytest plugin (fixtures ``kafka_broker``,
  ``kafka_broker_factory``, ``kafka_cluster``), loaded by pytest's entry point.

The names load on first use, so pytest's loading of the plugin imports neither
the broker nor the Kafka client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirekafka.testing.clients import TopicError, create_topic, read_topic
    from wirekafka.testing.cluster import BrokerCluster
    from wirekafka.testing.in_process import in_process_broker
    from wirekafka.testing.process import BrokerError, BrokerFactory, BrokerProcess
    from wirekafka.testing.zookeeper import ZooKeeper, ZooKeeperError

_MODULES = {
    "TopicError": "clients",
    "create_topic": "clients",
    "read_topic": "clients",
    "BrokerCluster": "cluster",
    "in_process_broker": "in_process",
    "BrokerError": "process",
    "BrokerFactory": "process",
    "BrokerProcess": "process",
    "ZooKeeper": "zookeeper",
    "ZooKeeperError": "zookeeper",
}

__all__ = [
    "BrokerCluster",
    "BrokerError",
    "BrokerFactory",
    "BrokerProcess",
    "TopicError",
    "ZooKeeper",
    "ZooKeeperError",
    "create_topic",
    "in_process_broker",
    "read_topic",
]


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
