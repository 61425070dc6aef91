"""The broker's counters and the figures a scrape reads, over a real context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.handlers.support import TestBroker, make_batch
from wirekafka.broker.metric_figures import (
    Committed,
    PartitionFigures,
    group_lags,
    loop_figures,
    partition_figures,
)
from wirekafka.broker.metrics import LATENCY_BOUNDS_S, BrokerMetrics
from wirekafka.groups.offsets_topic import OffsetCommitValue
from wirekafka.protocol.api_table import ApiKey


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[TestBroker]:
    made = TestBroker(tmp_path / "logs")
    yield made
    made.close()


def test_a_request_lands_in_the_bucket_of_the_first_bound_not_below_it():
    metrics = BrokerMetrics()
    metrics.handled(ApiKey.PRODUCE, 9, LATENCY_BOUNDS_S[0])  # le is inclusive
    metrics.handled(ApiKey.PRODUCE, 9, LATENCY_BOUNDS_S[0] * 1.01)
    metrics.handled(ApiKey.PRODUCE, 3, 0.0)
    metrics.handled(ApiKey.FETCH, 12, LATENCY_BOUNDS_S[-1] + 1)  # beyond the last: +Inf
    produce = metrics.apis[ApiKey.PRODUCE]
    assert produce.by_version[9] == 2 and produce.by_version[3] == 1
    assert produce.buckets[0] == 2 and produce.buckets[1] == 1 and sum(produce.buckets) == 3
    assert produce.sum_seconds == pytest.approx(LATENCY_BOUNDS_S[0] * 2.01)
    assert metrics.apis[ApiKey.FETCH].buckets[-1] == 1
    assert len(metrics.apis[ApiKey.FETCH].by_version) == 13  # v0-v12


def test_requests_handled_together_count_as_many_of_the_groups_time():
    metrics = BrokerMetrics()
    metrics.handled(ApiKey.PRODUCE, 7, LATENCY_BOUNDS_S[1], 5)
    produce = metrics.apis[ApiKey.PRODUCE]
    assert produce.by_version[7] == 5 and produce.buckets[1] == 5 and sum(produce.buckets) == 5
    assert produce.sum_seconds == pytest.approx(LATENCY_BOUNDS_S[1] * 5)


def test_produce_and_fetch_count_records_and_bytes(broker: TestBroker):
    broker.create_topic("t")
    batch = make_batch([b"a", b"bb", b"ccc"])
    assert broker.produce("t", batch).error_code == 0
    assert broker.produce("t", make_batch([b"d"]), acks=1).error_code == 0
    stored = len(batch) + len(make_batch([b"d"]))
    assert broker.fetch("t", 0).records
    counts = broker.ctx.metrics.topics["t"]
    assert (counts.messages_in, counts.bytes_in, counts.bytes_out) == (4, stored, stored)
    total = broker.ctx.metrics.all_topics
    assert (total.messages_in, total.bytes_in, total.bytes_out) == (4, stored, stored)


def test_a_refused_or_retried_batch_counts_nothing(broker: TestBroker):
    broker.create_topic("t")
    corrupt = bytearray(make_batch([b"a"]))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    assert broker.produce("t", bytes(corrupt)).error_code != 0
    idempotent = make_batch([b"a"], producer_id=7, producer_epoch=0, base_sequence=0)
    assert broker.produce("t", idempotent).error_code == 0
    assert broker.produce("t", idempotent).error_code == 0  # a retry: a duplicate
    assert broker.ctx.metrics.topics["t"].messages_in == 1


def test_figures_of_the_loop_and_the_logs(broker: TestBroker):
    broker.create_topic("t", partitions=2)
    broker.produce("t", make_batch([b"a", b"b"]), partition=1)
    ctx = broker.ctx
    ctx.groups.offsets.commit("g", {("t", 1): OffsetCommitValue(offset=1, metadata="")})
    figures = loop_figures(ctx, connections=5)
    assert figures.connections == 5
    assert figures.topics["t"][0] == 2
    assert figures.committed == (Committed("g", "t", 1, 1),)
    assert figures.groups_by_state == {
        "Empty": 0, "PreparingRebalance": 0, "CompletingRebalance": 0, "Stable": 0, "Dead": 0
    }  # fmt: skip
    assert figures.fetches_waiting == 0 and figures.under_replicated_partitions == 0
    assert figures.under_min_isr_partitions == 0
    assert [p for p in partition_figures(ctx.logs) if p.topic == "t"] == [
        PartitionFigures("t", 0, 0, 0, 0, 0),
        PartitionFigures("t", 1, broker.log("t", 1).size_bytes, 0, 2, 2),
    ]


def test_a_deleted_topic_leaves_its_counts_but_not_the_totals(broker: TestBroker):
    broker.create_topic("gone")
    broker.produce("gone", make_batch([b"a"]))
    assert broker.ctx.topics.delete_topic("gone") is None
    figures = loop_figures(broker.ctx, connections=0)
    assert "gone" not in figures.topics
    assert figures.all_topics[0] == 1


def test_fetches_waiting_are_counted(broker: TestBroker):
    appends = broker.ctx.appends

    async def scenario() -> None:
        with appends.watching([("t", 0), ("t", 1)]):
            assert appends.waiting == 1
            with appends.watching([("t", 0)]):
                assert appends.waiting == 2
        assert appends.waiting == 0

    trio.run(scenario)


def test_group_lag_is_measured_to_the_high_watermark():
    partitions = [PartitionFigures("t", 0, 100, 0, 50, 40), PartitionFigures("t", 1, 0, 5, 5, 5)]
    committed = (
        Committed("g", "t", 0, 10),
        Committed("g", "t", 1, 9),  # ahead of the log (truncated since): no lag, not negative
        Committed("g", "elsewhere", 0, 3),  # no log here: another broker reports it
        Committed("a", "t", 0, 40),
    )
    assert [(lag.group, lag.partition, lag.lag) for lag in group_lags(committed, partitions)] == [
        ("a", 0, 0),
        ("g", 0, 30),
        ("g", 1, 0),
    ]
