"""Every client adapter the scenario tests run with, in the order tests are generated.

A new client is a module of this package and one entry here. Importing this
module imports every client library (the tests' venv has them all).
"""

from __future__ import annotations

from interop_tests.clients import (
    aiokafka,
    confluent_kafka,
    franz_go,
    java,
    kafka_go,
    kafka_python,
    kafka_python_2,
    kcat,
    pykafka,
)
from interop_tests.clients.adapter import Capability, ClientAdapter

ADAPTERS: tuple[ClientAdapter, ...] = (
    kafka_python.ADAPTER,
    kafka_python_2.ADAPTER,
    aiokafka.ADAPTER,
    confluent_kafka.ADAPTER,
    kcat.ADAPTER,
    *pykafka.ADAPTERS,
    *java.ADAPTERS,
    franz_go.ADAPTER,
    kafka_go.ADAPTER,
)

BY_NAME = {adapter.name: adapter for adapter in ADAPTERS}
assert len(BY_NAME) == len(ADAPTERS), "two adapters with one name"

# The client other tests use to check what a scenario left behind (committed offsets...).
REFERENCE = kafka_python.ADAPTER


def with_capabilities(*needed: Capability) -> list[ClientAdapter]:
    """The adapters that declare every capability in ``needed``."""
    return [adapter for adapter in ADAPTERS if adapter.supports(*needed)]
