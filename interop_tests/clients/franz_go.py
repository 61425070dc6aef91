"""franz-go (kgo), through its driver (``interop_tests/go/franz-go``, see ``go_driver.py``).

Its producer is idempotent by default (InitProducerId, then sequence numbers),
with acks=all; its group members use kgo's consumer groups, with the eager
range balancer or cooperative-sticky, and block rebalances while a poll's
records are being printed and committed.
"""

from __future__ import annotations

from interop_tests.clients.adapter import Capability
from interop_tests.clients.go_driver import GoClient


class FranzGo(GoClient):
    idempotent_by_default = True
    cross_codec = "snappy"


ADAPTER = FranzGo(
    "franz-go",
    frozenset(
        {
            Capability.HEADERS,
            Capability.READS_HEADERS,
            Capability.TIMESTAMPS,
            Capability.READS_TIMESTAMPS,
            Capability.NULL_KEYS,
            Capability.ACKNOWLEDGES,
            Capability.GROUPS,
            Capability.COOPERATIVE,
            Capability.MEMBER_PROCESS,
        }
    ),
)
