"""Several wirekafka brokers in subprocesses sharing one ZooKeeper, for tests.

:class:`BrokerCluster` starts a :class:`~wirekafka.testing.zookeeper.ZooKeeper`
(Debian's ``zookeeper`` package) and ``brokers`` broker processes registered in
it (``broker.id`` 0, 1, ...), and waits until every broker knows all of them.
``offsets.topic.replication.factor`` is the number of brokers up to 3 unless
``settings`` say otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from confluent_kafka.admin import AdminClient

from wirekafka.testing.process import BrokerError, BrokerFactory, BrokerProcess, kafka_settings
from wirekafka.testing.zookeeper import ZooKeeper, ZooKeeperError, missing_reason

JOIN_TIMEOUT_S = 60.0


class BrokerCluster:
    """``brokers`` brokers on one ZooKeeper, all under ``root``."""

    def __init__(
        self, root: Path, brokers: int = 3, settings: Mapping[str, object] | None = None
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a cluster has at least one broker, not {brokers}")
        self.root = root
        self.size = brokers
        self.settings = {
            "offsets.topic.replication.factor": str(min(brokers, 3)),
            **kafka_settings(settings),
        }
        self.zookeeper = ZooKeeper(root / "zookeeper")
        self.factory = BrokerFactory(root)
        self.brokers: list[BrokerProcess] = []

    @property
    def bootstrap(self) -> str:
        """Every broker's ``host:port``, comma-separated, for ``bootstrap.servers``."""
        return ",".join(broker.bootstrap for broker in self.brokers)

    def start(self) -> Self:
        """Start ZooKeeper and the brokers; raise :class:`ZooKeeperError` saying what
        to install when ZooKeeper is missing."""
        reason = missing_reason()
        if reason is not None:
            raise ZooKeeperError(reason)
        self.zookeeper.start()
        for node in range(self.size):
            self.brokers.append(
                self.factory(
                    {
                        **self.settings,
                        "broker.id": node,
                        "zookeeper.connect": self.zookeeper.connect_string,
                    }
                )
            )
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for broker in self.brokers:
            self._wait_until_knows_all(broker, deadline)
        return self

    def _wait_until_knows_all(self, broker: BrokerProcess, deadline: float) -> None:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        while True:
            remaining = deadline - time.monotonic()
            known = len(admin.list_topics(timeout=max(remaining, 1.0)).brokers)
            if known == self.size:
                return
            if remaining <= 0:
                raise BrokerError(
                    f"broker {broker.bootstrap} knows {known} of {self.size} brokers "
                    f"after {JOIN_TIMEOUT_S} s\n{broker.output()}"
                )
            time.sleep(0.1)

    def close(self) -> None:
        """Kill what is left of the brokers, then stop ZooKeeper."""
        try:
            self.factory.close_all()
        finally:
            self.zookeeper.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
