"""The broker's figures as Prometheus metrics, in the text exposition format.

Names follow what Prometheus' JMX exporter makes of Kafka's MBeans with its
usual Kafka rules (``kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec,
topic=t><>Count`` becomes ``kafka_server_brokertopicmetrics_messagesin_total
{topic="t"}``), so dashboards built for Kafka find them; where Kafka has no
MBean (group lag) the names are those of kafka_exporter. Request latencies are
a Prometheus histogram of wirekafka's own, ``wirekafka_request_seconds``:
Kafka's ``TotalTimeMs`` is a quantile summary over a decaying sample, which
cannot be summed over brokers or time windows, and a histogram can.

:class:`BrokerCollector` builds the metric families at scrape time from the
figures of :mod:`wirekafka.broker.metric_figures`; :func:`render_metrics`
runs it in a registry of its own (nothing process-wide) and returns the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from wirekafka.broker.metric_figures import (
    LoopFigures,
    PartitionFigures,
    group_lags,
    partition_figures,
)
from wirekafka.broker.metrics import LATENCY_BOUNDS_S
from wirekafka.storage.log_manager import LogManager
from wirekafka.worker_threads import blocking


def _bucket_bound(bound: float) -> str:
    return repr(bound)


def _cumulative(buckets: Iterable[int]) -> list[tuple[str, float]]:
    bounds = [*map(_bucket_bound, LATENCY_BOUNDS_S), "+Inf"]
    total = 0
    result = []
    for bound, count in zip(bounds, buckets, strict=True):
        total += count
        result.append((bound, float(total)))
    return result


class BrokerCollector(Collector):
    """One scrape's metric families, from figures taken at the scrape."""

    def __init__(self, loop: LoopFigures, partitions: list[PartitionFigures]) -> None:
        self.loop = loop
        self.partitions = partitions

    def collect(self) -> Iterator[Metric]:
        yield from self._topic_counters()
        yield from self._requests()
        yield from self._logs()
        yield from self._groups()
        loop = self.loop
        yield GaugeMetricFamily(
            "kafka_server_socketservermetrics_connection_count",
            "Client connections open.",
            value=loop.connections,
        )
        purgatory = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests waiting in a purgatory: fetches waiting for min.bytes or max.wait.ms.",
            labels=["delayedOperation"],
        )
        purgatory.add_metric(["Fetch"], loop.fetches_waiting)
        yield purgatory
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Partitions led here whose ISR is smaller than their replicas (0 without ZooKeeper).",
            value=loop.under_replicated_partitions,
        )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Partitions led here whose ISR is smaller than min.insync.replicas: acks=all "
            "produces to them are refused (0 without ZooKeeper).",
            value=loop.under_min_isr_partitions,
        )
        yield GaugeMetricFamily(
            "kafka_server_replicamanager_partitioncount",
            "Partitions with a log on this broker.",
            value=len(self.partitions),
        )

    def _topic_counters(self) -> Iterator[Metric]:
        loop = self.loop
        families = [
            CounterMetricFamily(
                "kafka_server_brokertopicmetrics_messagesin",
                "Records appended by produce requests; without a topic label: every topic.",
                labels=["topic"],
            ),
            CounterMetricFamily(
                "kafka_server_brokertopicmetrics_bytesin",
                "Record bytes of produce requests appended (as the requests carried them); "
                "without a topic label: every topic.",
                labels=["topic"],
            ),
            CounterMetricFamily(
                "kafka_server_brokertopicmetrics_bytesout",
                "Record bytes sent to consumers (not to followers); "
                "without a topic label: every topic.",
                labels=["topic"],
            ),
        ]
        for family, value in zip(families, loop.all_topics, strict=True):
            family.add_metric([], value)
        for topic in sorted(loop.topics):
            for family, value in zip(families, loop.topics[topic], strict=True):
                family.add_metric([topic], value)
        yield from families

    def _requests(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests handled, by API and version.",
            labels=["request", "version"],
        )
        latency = HistogramMetricFamily(
            "wirekafka_request_seconds",
            "Time requests spent in their handler, from the decoded request to the response "
            "(a long poll's wait included), by API.",
            labels=["request"],
        )
        for api in self.loop.apis:
            for version, count in enumerate(api.by_version):
                if count:
                    requests.add_metric([api.name, str(version)], count)
            if any(api.buckets):
                latency.add_metric([api.name], _cumulative(api.buckets), api.sum_seconds)
        yield requests
        yield latency

    def _logs(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily(
            "kafka_log_log_size", "Bytes of the partition's segment files.", labels=labels
        )
        end = GaugeMetricFamily(
            "kafka_log_log_logendoffset",
            "The offset after the partition's last record.",
            labels=labels,
        )
        start = GaugeMetricFamily(
            "kafka_log_log_logstartoffset", "The partition's first offset.", labels=labels
        )
        for figures in self.partitions:
            partition = [figures.topic, str(figures.partition)]
            size.add_metric(partition, figures.size_bytes)
            end.add_metric(partition, figures.log_end_offset)
            start.add_metric(partition, figures.log_start_offset)
        yield from (size, end, start)

    def _groups(self) -> Iterator[Metric]:
        loop = self.loop
        groups = GaugeMetricFamily(
            "kafka_coordinator_group_groupmetadatamanager_numgroups",
            "Consumer groups this broker coordinates, by state.",
            labels=["state"],
        )
        for state, count in loop.groups_by_state.items():
            groups.add_metric([state], count)
        yield groups
        yield GaugeMetricFamily(
            "kafka_coordinator_group_groupmetadatamanager_numoffsets",
            "Committed offsets this broker keeps.",
            value=len(loop.committed),
        )
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset",
            "A group's committed offset, for the partitions with a log on this broker.",
            labels=labels,
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "The partition's high watermark minus the group's committed offset (at least 0).",
            labels=labels,
        )
        for item in group_lags(loop.committed, self.partitions):
            names = [item.group, item.topic, str(item.partition)]
            current.add_metric(names, item.committed_offset)
            lag.add_metric(names, item.lag)
        yield current
        yield lag


def exposition(loop: LoopFigures, partitions: list[PartitionFigures]) -> bytes:
    """The text exposition of these figures."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(loop, partitions))
    return generate_latest(registry)


@blocking
def render_metrics(loop: LoopFigures, logs: LogManager) -> bytes:
    """The scrape's text: the loop's figures and the logs' (read here, in a worker
    thread)."""
    return exposition(loop, partition_figures(logs))
