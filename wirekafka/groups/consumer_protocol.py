"""The consumer protocol's subscription (``ConsumerProtocolSubscription``), read
only as far as its topics: which topics a consumer group's members consume.

The member metadata of protocol type ``consumer`` starts with an int16 version
and an array (int32 count) of int16-length topic names in every version
(0-3), none of them flexible. The broker passes the bytes through untouched;
only OffsetDelete needs to look inside them, as Kafka's coordinator does.
"""

from __future__ import annotations

import struct

CONSUMER_PROTOCOL_TYPE = "consumer"


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topics a member subscribes to; None when the metadata does not parse."""
    view = memoryview(metadata)
    try:
        (version,) = struct.unpack_from(">h", view, 0)
        (count,) = struct.unpack_from(">i", view, 2)
    except struct.error:
        return None
    if version < 0 or count < 0:
        return None
    position = 6
    topics = set()
    for _ in range(count):
        if position + 2 > len(view):
            return None
        (size,) = struct.unpack_from(">h", view, position)
        position += 2
        if size < 0 or position + size > len(view):
            return None
        try:
            topics.add(bytes(view[position : position + size]).decode())
        except UnicodeDecodeError:
            return None
        position += size
    return topics
