"""The broker's counters for monitoring, bumped on the request path.

Counting costs the request path plain integer and list updates, no locks: the
counters live on the event loop, as the handlers that bump them do. A
request's latency lands in a bucket found by bisection in
:data:`LATENCY_BOUNDS_S`; messages in are counted from each batch's header
(its record count), never record by record. What a scrape reports is read
by :mod:`wirekafka.broker.metric_figures`.
"""

from __future__ import annotations

from bisect import bisect_left

from wirekafka.protocol.api_table import API_TABLE

# The upper bounds (seconds) of the request latency buckets; one more bucket holds
# the rest (+Inf). From a small request's ~0.1 ms up to a long poll's 30 s.
LATENCY_BOUNDS_S: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class ApiStats:
    """One API's requests handled: a count per version and a latency histogram."""

    __slots__ = ("buckets", "by_version", "sum_seconds")

    def __init__(self, versions: int) -> None:
        self.by_version = [0] * versions  # index: the request's version
        self.buckets = [0] * (len(LATENCY_BOUNDS_S) + 1)  # not cumulative; the last: +Inf
        self.sum_seconds = 0.0


class TopicCounts:
    """What one topic took in and gave out since the broker started."""

    __slots__ = ("bytes_in", "bytes_out", "messages_in")

    def __init__(self) -> None:
        self.messages_in = 0  # records appended (from the batches' headers)
        self.bytes_in = 0  # the produce requests' record bytes that were appended
        self.bytes_out = 0  # record bytes sent to consumers (not to followers)


class BrokerMetrics:
    """The counters of one broker, on the event loop.

    The server calls :meth:`handled` for each request it hands to a handler,
    the Produce and Fetch handlers :meth:`produced` and :meth:`fetched`. ``all_topics`` holds the broker totals: a
    deleted topic's counts leave its own entry (as Kafka drops its metrics)
    but stay in the totals."""

    __slots__ = ("all_topics", "apis", "topics")

    def __init__(self) -> None:
        self.apis: dict[int, ApiStats] = {
            api.key: ApiStats(api.max_version + 1) for api in API_TABLE.values()
        }
        self.topics: dict[str, TopicCounts] = {}
        self.all_topics = TopicCounts()

    def handled(self, api_key: int, version: int, seconds: float, count: int = 1) -> None:
        """``count`` requests of a served API and version were handled in ``seconds``
        each (requests handled together take as long as the group)."""
        stats = self.apis[api_key]
        stats.by_version[version] += count
        stats.buckets[bisect_left(LATENCY_BOUNDS_S, seconds)] += count
        stats.sum_seconds += seconds * count

    def produced(self, topic: str, records: int, size_bytes: int) -> None:
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = TopicCounts()
        counts.messages_in += records
        counts.bytes_in += size_bytes
        total = self.all_topics
        total.messages_in += records
        total.bytes_in += size_bytes

    def fetched(self, topic: str, size_bytes: int) -> None:
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = TopicCounts()
        counts.bytes_out += size_bytes
        self.all_topics.bytes_out += size_bytes

    def forget_topic(self, topic: str) -> None:
        self.topics.pop(topic, None)
