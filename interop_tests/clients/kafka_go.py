"""segmentio/kafka-go, through its driver (``interop_tests/go/kafka-go``, see ``go_driver.py``).

Its Writer is not idempotent, with acks=all; its readers are one partition
Reader each; its group members are a Reader with a GroupID (range, then round
robin), which tells its assignment only in its log. The Reader hands over zero
bytes as nil, which is also its null: an empty header value (which the other
clients read as empty) comes out as null.
"""

from __future__ import annotations

from interop_tests.clients.adapter import Capability
from interop_tests.clients.go_driver import GoClient


class KafkaGo(GoClient):
    cross_codec = "gzip"
    reads_empty_header_as_null = True
    revocation_callback = False  # its Reader logs each assignment, nothing else


ADAPTER = KafkaGo(
    "kafka-go",
    frozenset(
        {
            Capability.HEADERS,
            Capability.READS_HEADERS,
            Capability.TIMESTAMPS,
            Capability.READS_TIMESTAMPS,
            Capability.NULL_KEYS,
            Capability.ACKNOWLEDGES,
            Capability.GROUPS,
            Capability.MEMBER_PROCESS,
        }
    ),
)
