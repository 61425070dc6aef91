"""A wirekafka broker in a subprocess, for interop tests: :mod:`wirekafka.testing.process`
with the interop tests' defaults.

:class:`Broker` auto-creates topics with 3 partitions, and runs with the blocking
check set to ``raise`` (a blocking call on the event loop fails the request that
makes it); :class:`Brokers` starts such brokers under one directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from wirekafka import worker_threads
from wirekafka.testing.process import (
    BASE_OVERRIDES,
    LISTENING,
    PYTHONPATH,
    START_TIMEOUT_S,
    STDERR_TAIL_BYTES,
    STOP_TIMEOUT_S,
    BrokerError,
    BrokerFactory,
    BrokerProcess,
)

__all__ = [
    "DEFAULT_OVERRIDES",
    "LISTENING",
    "PYTHONPATH",
    "START_TIMEOUT_S",
    "STDERR_TAIL_BYTES",
    "STOP_TIMEOUT_S",
    "Broker",
    "BrokerError",
    "Brokers",
]

DEFAULT_OVERRIDES: dict[str, str] = {
    **BASE_OVERRIDES,
    "auto.create.topics.enable": "true",
    "num.partitions": "3",
}


class Broker(BrokerProcess):
    """One broker process over one data dir; it can be stopped, killed and restarted."""

    default_overrides: ClassVar[Mapping[str, str]] = DEFAULT_OVERRIDES
    environment: ClassVar[Mapping[str, str]] = {worker_threads.CHECK_ENV: "raise"}


class Brokers(BrokerFactory):
    """Starts :class:`Broker` s under one directory; ``close_all`` kills what is left."""

    broker_class: ClassVar[type[BrokerProcess]] = Broker
