"""The text a scrape returns, parsed back as Prometheus parses it."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from wirekafka.broker.metric_figures import (
    ApiFigures,
    Committed,
    LoopFigures,
    PartitionFigures,
)
from wirekafka.broker.metrics import LATENCY_BOUNDS_S
from wirekafka.server.metrics_exposition import exposition


def _figures(**changes: object) -> LoopFigures:
    buckets = [0] * (len(LATENCY_BOUNDS_S) + 1)
    buckets[0], buckets[3], buckets[-1] = 2, 1, 1
    values: dict[str, object] = {
        "apis": (
            ApiFigures("Produce", (0, 0, 0, 1, 0, 0, 0, 0, 0, 3), tuple(buckets), 40.5),
            ApiFigures("Fetch", (0,) * 13, (0,) * len(buckets), 0.0),
        ),
        "topics": {"b": (3, 300, 30), "a": (1, 100, 0)},
        "all_topics": (9, 900, 90),
        "groups_by_state": {"Empty": 1, "Stable": 2},
        "committed": (Committed("g", "a", 0, 4), Committed("g", "z", 0, 1)),
        "fetches_waiting": 3,
        "under_replicated_partitions": 2,
        "under_min_isr_partitions": 1,
        "connections": 7,
    }
    values.update(changes)
    return LoopFigures(**values)  # type: ignore[arg-type]


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


def test_every_figure_is_exposed():
    partitions = [PartitionFigures("a", 0, 1234, 2, 10, 9)]
    samples = _samples(exposition(_figures(), partitions))
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", ())] == 9
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", "b"),))] == 3
    assert samples[("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "a"),))] == 100
    assert samples[("kafka_server_brokertopicmetrics_bytesout_total", ())] == 90
    requests = "kafka_network_requestmetrics_requests_total"
    assert samples[(requests, (("request", "Produce"), ("version", "9")))] == 3
    assert samples[(requests, (("request", "Produce"), ("version", "3")))] == 1
    assert not any(name == requests and ("request", "Fetch") in labels
                   for name, labels in samples)  # fmt: skip  # nothing counted, nothing shown
    partition = (("partition", "0"), ("topic", "a"))
    assert samples[("kafka_log_log_size", partition)] == 1234
    assert samples[("kafka_log_log_logendoffset", partition)] == 10
    assert samples[("kafka_log_log_logstartoffset", partition)] == 2
    lag = (("consumergroup", "g"), ("partition", "0"), ("topic", "a"))
    assert samples[("kafka_consumergroup_lag", lag)] == 9 - 4
    assert samples[("kafka_consumergroup_current_offset", lag)] == 4
    assert not any(("topic", "z") in labels for _, labels in samples)  # no log here
    numgroups = "kafka_coordinator_group_groupmetadatamanager_numgroups"
    assert samples[(numgroups, (("state", "Stable"),))] == 2
    assert samples[("kafka_coordinator_group_groupmetadatamanager_numoffsets", ())] == 2
    assert samples[("kafka_server_socketservermetrics_connection_count", ())] == 7
    purgatory = "kafka_server_delayedoperationpurgatory_purgatorysize"
    assert samples[(purgatory, (("delayedOperation", "Fetch"),))] == 3
    assert samples[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 2
    assert samples[("kafka_server_replicamanager_underminisrpartitioncount", ())] == 1
    assert samples[("kafka_server_replicamanager_partitioncount", ())] == 1


def test_the_latency_histogram_is_cumulative():
    samples = _samples(exposition(_figures(), []))
    produce = (("request", "Produce"),)

    def bucket(le: str) -> float:
        return samples[("wirekafka_request_seconds_bucket", (("le", le), ("request", "Produce")))]

    assert bucket(repr(LATENCY_BOUNDS_S[0])) == 2
    assert bucket(repr(LATENCY_BOUNDS_S[2])) == 2
    assert bucket(repr(LATENCY_BOUNDS_S[3])) == 3
    assert bucket(repr(LATENCY_BOUNDS_S[-1])) == 3
    assert bucket("+Inf") == 4
    assert samples[("wirekafka_request_seconds_count", produce)] == 4
    assert samples[("wirekafka_request_seconds_sum", produce)] == 40.5
    assert not any(labels == (("request", "Fetch"),) for _, labels in samples)
