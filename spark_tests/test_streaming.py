"""Structured streaming with ``format("wirekafka")``: the page-view pipeline, restarts, limits."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.support import Deadline
from spark_tests.kafka import create_topic, produce_values, read_back
from spark_tests.pipeline import (
    PARTITIONS,
    START_MS,
    check_page_view_pipeline,
    page_view_topics,
    produce_views,
    written_counts,
)
from wirekafka.examples.page_views import (
    WINDOW_MS,
    closing_view,
    expected_counts,
    page_views,
    start_pipeline,
)

QUERY_TIMEOUT_S = 240.0


def source_offsets(progress: dict, which: str) -> dict:
    offsets = progress["sources"][0][which]
    return json.loads(offsets) if isinstance(offsets, str) else offsets


def wait_for_rows(query: StreamingQuery, rows: int) -> None:
    deadline = Deadline(QUERY_TIMEOUT_S)
    while sum(p["numInputRows"] for p in query.recentProgress) < rows:
        assert query.exception() is None, query.exception()
        deadline.check(f"{rows} input rows processed")
        time.sleep(0.05)


@pytest.mark.slow
def test_page_view_counts_are_exact(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    check_page_view_pipeline(spark, broker, tmp_path, topic_name, source_format="wirekafka")


@pytest.mark.slow
def test_restart_from_checkpoint_misses_no_input(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    views = page_views(6_000, start_ms=START_MS, span_ms=10 * WINDOW_MS, seed=5)
    views_topic, counts_topic = page_view_topics(broker, topic_name, views)
    limit = 500

    def start() -> StreamingQuery:
        return start_pipeline(
            spark,
            bootstrap_servers=broker.bootstrap,
            input_topic=views_topic,
            output_topic=counts_topic,
            checkpoint=str(tmp_path / "checkpoint"),
            source_options={"maxOffsetsPerTrigger": str(limit)},
        )

    query = start()
    try:
        wait_for_rows(query, 2 * limit)
    finally:
        query.stop()
    first_run = [p for p in query.recentProgress if p["numInputRows"]]
    read_in_first_run = sum(p["numInputRows"] for p in first_run)
    assert read_in_first_run < len(views), "the first run was to stop mid-stream"

    query = start()
    try:
        query.processAllAvailable()
        produce_views(broker, views_topic, [closing_view(views)])
        query.processAllAvailable()
    finally:
        query.stop()
    second_run = [p for p in query.recentProgress if p["numInputRows"]]

    # The second run began where the checkpoint says the first one ended.
    ends_of_first_run = [source_offsets(p, "endOffset") for p in first_run]
    assert source_offsets(second_run[0], "startOffset") in ends_of_first_run
    assert all(p["numInputRows"] <= limit for p in first_run + second_run)
    # Every view was counted once: each window's count is exact. A batch cut short by the
    # stop may have been written and then run again, so a window may appear twice, with the
    # same count.
    written = written_counts(broker, counts_topic)
    expected = expected_counts(views)
    assert set(written) == set(expected)
    wrong = {key: counts for key, counts in written.items() if set(counts) != {expected[key]}}
    assert not wrong, f"counts differ from {len(views)} views: {sorted(wrong.items())[:5]}"


@pytest.mark.slow
def test_max_offsets_per_trigger_and_stream_write(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    source, sink = topic_name("in"), topic_name("out")
    for topic in (source, sink):
        create_topic(broker.bootstrap, topic, PARTITIONS)
    sizes = {0: 1_500, 1: 1_000, 2: 500}  # uneven backlogs share the limit in proportion
    records = [
        (p, f"k{p}-{i}".encode(), f"v{p}-{i}".encode()) for p, n in sizes.items() for i in range(n)
    ]
    produce_values(broker.bootstrap, source, records)
    limit = 700

    query = (
        spark.readStream.format("wirekafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(limit))
        .load()
        .select("key", "value", "partition")
        .writeStream.format("wirekafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "Trigger.AvailableNow did not finish"
    assert query.exception() is None
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert batches == [limit] * 4 + [len(records) - 4 * limit]
    assert len(batches) == math.ceil(len(records) / limit)

    got = read_back(broker.bootstrap, sink, sizes)
    for partition in sizes:
        # one task per partition writes in offset order, so the order survives
        assert [(g.key, g.value) for g in got if g.partition == partition] == [
            (k, v) for p, k, v in records if p == partition
        ]


def test_latest_start_and_topics_that_appear(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    prefix = topic_name("live")
    create_topic(broker.bootstrap, f"{prefix}-a", 2)
    produce_values(broker.bootstrap, f"{prefix}-a", ((0, None, b"before") for _ in range(10)))
    table = prefix.replace("-", "_").replace(".", "_")

    query = (
        spark.readStream.format("wirekafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribePattern", f"{prefix}-.*")
        .load()  # startingOffsets defaults to latest: the 10 records before are not read
        .selectExpr("topic", "partition", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(table)
        .start()
    )
    try:
        query.processAllAvailable()
        produce_values(broker.bootstrap, f"{prefix}-a", ((1, None, b"after") for _ in range(4)))
        create_topic(broker.bootstrap, f"{prefix}-b", 2)
        produce_values(broker.bootstrap, f"{prefix}-b", ((i % 2, None, b"new") for i in range(6)))
        deadline = Deadline(QUERY_TIMEOUT_S)
        while spark.table(table).count() < 10:
            deadline.check("the records written after the query started")
            query.processAllAvailable()
        rows = spark.table(table).collect()
    finally:
        query.stop()
    assert sorted((r.topic[len(prefix) :], r.value) for r in rows) == sorted(
        [("-a", "after")] * 4 + [("-b", "new")] * 6
    )


@pytest.mark.slow
def test_query_rides_out_a_broker_crash(
    spark: SparkSession, broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings={"log.flush.interval.messages": "1"})
    source = topic_name("")
    create_topic(broker.bootstrap, source, PARTITIONS)
    before = [(i % PARTITIONS, None, f"before-{i}".encode()) for i in range(3_000)]
    produce_values(broker.bootstrap, source, before)
    table = source.replace("-", "_").replace(".", "_")
    query = (
        spark.readStream.format("wirekafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "300")
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(table)
        .start()
    )
    try:
        wait_for_rows(query, 600)
        broker.restart(crash=True)  # SIGKILL mid-stream, then the same port and data
        after = [(i % PARTITIONS, None, f"after-{i}".encode()) for i in range(1_000)]
        produce_values(broker.bootstrap, source, after)
        wait_for_rows(query, len(before) + len(after))
        values = sorted(row.value for row in spark.table(table).collect())
    finally:
        query.stop()
    assert query.exception() is None
    assert values == sorted(v.decode() for _, _, v in before + after)
