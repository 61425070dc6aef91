"""What a scrape reports of the broker: its counters and state, read safely.

A scrape takes two steps. :func:`loop_figures`, on the event loop, copies
what the loop alone changes (the counters of :mod:`wirekafka.broker.metrics`,
the groups and their committed offsets, the waiting fetches, the ISRs): dict
and list copies, no walk of a log. :func:`partition_figures` reads the
partition logs, whose offsets and segment lists are safe to read from any
thread (each under its log's lock), so it runs in a worker thread with the
rendering of the text (:mod:`wirekafka.server.metrics_exposition`): a broker
with many thousands of partitions goes on serving while a scrape is rendered.
"""

from __future__ import annotations

from dataclasses import dataclass

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.metrics import BrokerMetrics
from wirekafka.groups.state import GroupState
from wirekafka.protocol.api_table import API_TABLE
from wirekafka.storage.log_manager import LogManager
from wirekafka.worker_threads import blocking


@dataclass(frozen=True, slots=True)
class ApiFigures:
    name: str  # Kafka's: Produce, Fetch, ...
    by_version: tuple[int, ...]
    buckets: tuple[int, ...]  # not cumulative; the last: +Inf
    sum_seconds: float


@dataclass(frozen=True, slots=True)
class Committed:
    group: str
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class LoopFigures:
    """What the event loop alone changes, copied at the start of a scrape."""

    apis: tuple[ApiFigures, ...]
    topics: dict[str, tuple[int, int, int]]  # topic -> (messages in, bytes in, bytes out)
    all_topics: tuple[int, int, int]
    groups_by_state: dict[str, int]  # every state, Kafka's name -> groups in it
    committed: tuple[Committed, ...]
    fetches_waiting: int
    under_replicated_partitions: int
    under_min_isr_partitions: int
    connections: int  # client connections open (the server's count)


def loop_figures(ctx: BrokerContext, connections: int) -> LoopFigures:
    """Copy, on the event loop, what a scrape reports of the loop's state; topics
    deleted since the last scrape leave the per-topic counts."""
    metrics: BrokerMetrics = ctx.metrics
    topics = ctx.topics
    for name in [name for name in metrics.topics if topics.topic(name) is None]:
        metrics.forget_topic(name)
    apis = tuple(
        ApiFigures(
            api.name,
            tuple(metrics.apis[api.key].by_version),
            tuple(metrics.apis[api.key].buckets),
            metrics.apis[api.key].sum_seconds,
        )
        for api in API_TABLE.values()
    )
    total = metrics.all_topics
    by_state = dict.fromkeys((state.value for state in GroupState), 0)
    for group in ctx.groups.coordinator.groups.values():
        by_state[group.state.value] += 1
    offsets = ctx.groups.offsets
    committed = tuple(
        Committed(group_id, topic, partition, value.offset)
        for group_id in offsets.groups()
        for (topic, partition), value in offsets.committed(group_id).items()
    )
    under_replicated = under_min_isr = 0
    replicas = ctx.replicas
    if replicas is not None:
        led_here = replicas.led.values()
        under_replicated = sum(1 for led in led_here if len(led.isr) < len(led.replicas))
        # the partitions whose acks=all produces are refused
        under_min_isr = sum(1 for led in led_here if not replicas.enough_replicas(led))
    return LoopFigures(
        apis=apis,
        topics={
            name: (counts.messages_in, counts.bytes_in, counts.bytes_out)
            for name, counts in metrics.topics.items()
        },
        all_topics=(total.messages_in, total.bytes_in, total.bytes_out),
        groups_by_state=by_state,
        committed=committed,
        fetches_waiting=ctx.appends.waiting,
        under_replicated_partitions=under_replicated,
        under_min_isr_partitions=under_min_isr,
        connections=connections,
    )


@dataclass(frozen=True, slots=True)
class PartitionFigures:
    topic: str
    partition: int
    size_bytes: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int  # what consumers can read: the end that lag is measured to


@blocking
def partition_figures(logs: LogManager) -> list[PartitionFigures]:
    """Every local partition log's size and offsets, sorted; from a worker thread
    (each read takes the log's lock, held for a copy)."""
    return sorted(
        (
            PartitionFigures(
                log.topic,
                log.partition,
                log.size_bytes,
                log.log_start_offset,
                log.log_end_offset,
                log.high_watermark,
            )
            for log in logs.all_logs()
        ),
        key=lambda figures: (figures.topic, figures.partition),
    )


@dataclass(frozen=True, slots=True)
class GroupLag:
    group: str
    topic: str
    partition: int
    committed_offset: int
    lag: int  # the partition's high watermark minus the committed offset, at least 0


def group_lags(
    committed: tuple[Committed, ...], partitions: list[PartitionFigures]
) -> list[GroupLag]:
    """The lag of each committed offset whose partition has a log here (in a
    cluster, another broker reports the partitions it holds)."""
    ends = {(p.topic, p.partition): p.high_watermark for p in partitions}
    lags = []
    for item in committed:
        end = ends.get((item.topic, item.partition))
        if end is not None:
            lags.append(
                GroupLag(
                    item.group,
                    item.topic,
                    item.partition,
                    item.offset,
                    max(0, end - item.offset),
                )
            )
    lags.sort(key=lambda lag: (lag.group, lag.topic, lag.partition))
    return lags
