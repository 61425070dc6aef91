"""What every request handler reaches: the broker's config, logs, topics and producers."""

from __future__ import annotations

from dataclasses import dataclass, field

from wirekafka.config import BrokerConfig
from wirekafka.handlers.appends import AppendWatch
from wirekafka.handlers.producers import ProducerIds, ProducerStates
from wirekafka.handlers.topics import TopicManager
from wirekafka.storage.log import Clock
from wirekafka.storage.log_manager import LogManager


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """How clients reach this broker (the advertised listener, port resolved)."""

    node_id: int
    host: str
    port: int


class CloseConnection(Exception):
    """The request cannot be answered: the server closes the connection.

    Used where Kafka closes rather than answers (an error on an acks=0
    produce); the message is logged with the peer.
    """


@dataclass(slots=True)
class BrokerContext:
    config: BrokerConfig
    clock: Clock
    logs: LogManager
    topics: TopicManager
    producer_ids: ProducerIds
    producer_states: ProducerStates
    cluster_id: str
    endpoint: BrokerEndpoint
    appends: AppendWatch = field(default_factory=AppendWatch)
