"""Structured streaming with Spark's own connector, ``spark.readStream.format("kafka")``.

Micro-batch sizes under ``maxOffsetsPerTrigger``, a windowed aggregation
stopped and restarted from its checkpoint with every window's count exact, and
``failOnDataLoss`` when a resumed query's offsets were deleted.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from interop_tests.broker import Broker
from spark_tests.kafka import (
    create_topic,
    delete_records,
    partition_counts,
    produce_values,
    read_back,
)
from spark_tests.spark_kafka import stream_kafka
from wirekafka.examples.page_views import EVENT_SCHEMA, PageView, page_views

QUERY_TIMEOUT_S = 240
START_MS = 1_800_000_000_000  # a whole minute


class BatchRows:
    """A ``foreachBatch`` sink keeping each micro-batch's rows, by batch id."""

    def __init__(self, *columns: str) -> None:
        self.columns = columns
        self.batches: dict[int, list[Row]] = {}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.batches[batch_id] = df.select(*self.columns).collect()


def run_available_now(query: StreamingQuery) -> None:
    assert query.awaitTermination(QUERY_TIMEOUT_S), "Trigger.AvailableNow did not finish"
    assert query.exception() is None, query.exception()


def source_offsets(progress: dict, which: str) -> dict:
    offsets = progress["sources"][0][which]
    return json.loads(offsets) if isinstance(offsets, str) else offsets


# -- maxOffsetsPerTrigger


def rate_limited(limit: int, start: dict[int, int], end: dict[int, int]) -> dict[int, int]:
    """Where Spark's next micro-batch ends under ``maxOffsetsPerTrigger`` (the
    arithmetic of KafkaMicroBatchStream.rateLimit, in doubles as there): each
    partition gets the floor of its share of the limit in proportion to its
    backlog (a share under one record is rounded up), at most its backlog."""
    sizes = {p: end[p] - start[p] for p in end if end[p] - start[p] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(end)
    ends = {}
    for p in end:
        if p not in sizes:
            ends[p] = end[p]
            continue
        prorate = limit * (sizes[p] / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        ends[p] = min(end[p], start[p] + share)
    return ends


@pytest.mark.slow
def test_max_offsets_per_trigger_sizes_every_micro_batch(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 3)
    backlog = {0: 1_500, 1: 1_000, 2: 500}
    produce_values(
        broker.bootstrap,
        topic,
        ((p, None, f"{p}:{o}".encode()) for p, n in backlog.items() for o in range(n)),
    )
    limit = 700

    expected: list[dict[int, tuple[int, int]]] = []
    start = dict.fromkeys(backlog, 0)
    while start != backlog:
        end = rate_limited(limit, start, backlog)
        expected.append({p: (start[p], end[p]) for p in backlog if end[p] > start[p]})
        start = end
    # by hand: 700 x 1500/3000 = 350, 700 x 1000/3000 = 233.3, 700 x 500/3000 = 116.7
    assert expected[0] == {0: (0, 350), 1: (0, 233), 2: (0, 116)}
    assert len(expected) == 5

    sink = BatchRows("partition", "offset", "value")
    query = (
        stream_kafka(
            spark,
            broker.bootstrap,
            subscribe=topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger=str(limit),
        )
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    run_available_now(query)

    assert sorted(sink.batches) == list(range(len(expected)))
    for batch_id, ranges in enumerate(expected):
        rows = sink.batches[batch_id]
        got = sorted((r.partition, r.offset, bytes(r.value)) for r in rows)
        assert got == [
            (p, o, f"{p}:{o}".encode())
            for p, (first, end) in ranges.items()
            for o in range(first, end)
        ], f"batch {batch_id}"
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    assert [p["numInputRows"] for p in progress] == [
        sum(end - first for first, end in ranges.values()) for ranges in expected
    ]
    assert all(p["numInputRows"] <= limit for p in progress)


# -- a windowed count stopped and restarted


WINDOW_MS = 60_000
DELAY_MS = 2 * WINDOW_MS  # the watermark: two minutes behind the latest event


def windowed_counts(events: DataFrame) -> DataFrame:
    views = events.select(
        F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("view")
    ).select("view.*")
    counts = (
        views.withWatermark("time", f"{DELAY_MS // 1000} seconds")
        .groupBy(F.window("time", f"{WINDOW_MS // 1000} seconds"), "page")
        .count()
    )
    return counts.select(
        F.col("page").alias("key"),
        F.to_json(
            F.struct(
                F.unix_millis(F.col("window.start")).alias("start"),
                F.col("page"),
                F.col("count"),
            )
        ).alias("value"),
    )


def written_windows(broker: Broker, topic: str) -> list[tuple[tuple[int, str], int]]:
    """Every ((window start, page), count) in the output topic, in the order written."""
    counts = partition_counts(broker.bootstrap, topic, [0])
    rows = [json.loads(g.value or b"") for g in read_back(broker.bootstrap, topic, counts)]
    return [((row["start"], row["page"]), row["count"]) for row in rows]


@pytest.mark.slow
def test_windowed_counts_exact_across_a_restart_from_the_checkpoint(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    views_topic, counts_topic = topic_name("views"), topic_name("counts")
    create_topic(broker.bootstrap, views_topic, 3)
    create_topic(broker.bootstrap, counts_topic, 1)
    # 3,000 views over 20 minutes in time order, round robin over the partitions: every
    # micro-batch reads each partition up to about the same time, so no view is ever two
    # minutes behind the latest one read and the watermark drops none.
    views = page_views(3_000, start_ms=START_MS, span_ms=20 * WINDOW_MS, seed=11)
    first, rest = views[:1_800], views[1_800:]
    closing = PageView("watermark", "/", views[-1].time_ms + DELAY_MS + 2 * WINDOW_MS)

    def produce(part: list[PageView]) -> None:
        produce_values(
            broker.bootstrap,
            views_topic,
            ((i % 3, v.user.encode(), v.to_json()) for i, v in enumerate(part)),
        )

    def run() -> StreamingQuery:
        """Start, read all there is in micro-batches of at most 500 views, stop."""
        query = (
            windowed_counts(
                stream_kafka(
                    spark,
                    broker.bootstrap,
                    subscribe=views_topic,
                    startingOffsets="earliest",
                    maxOffsetsPerTrigger="500",
                )
            )
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", counts_topic)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .outputMode("append")
            .start()
        )
        try:
            # Returns once every offset is processed and committed, and the batch without
            # data that the last watermark calls for has run: no batch is under way when
            # stop() comes, so nothing is written twice.
            query.processAllAvailable()
        finally:
            query.stop()
        assert query.exception() is None
        return query

    def window_of(view: PageView) -> tuple[int, str]:
        return (view.time_ms - view.time_ms % WINDOW_MS, view.page)

    expected = dict(Counter(window_of(v) for v in views))
    assert len(expected) == 20 * 8  # 20 windows x 8 pages

    produce(first)
    first_run = run()
    after_first = written_windows(broker, counts_topic)
    # The windows the first run closed: those ending at or before its watermark, the
    # latest time it read minus two minutes. Their counts are final already.
    watermark = max(v.time_ms for v in first) - DELAY_MS
    closed = {key for key in expected if key[0] + WINDOW_MS <= watermark}
    assert 0 < len(closed) < len({window_of(v) for v in first})  # some were left open
    assert sorted(after_first) == sorted((key, expected[key]) for key in closed)

    produce([*rest, closing])
    second_run = run()
    written = written_windows(broker, counts_topic)
    assert written[: len(after_first)] == after_first
    # every window once, with every view counted once
    assert Counter(key for key, _ in written) == Counter(dict.fromkeys(expected, 1))
    assert dict(written) == expected

    # the second run went on from the offsets the first one ended at
    first_batches = [p for p in first_run.recentProgress if p["numInputRows"]]
    second_batches = [p for p in second_run.recentProgress if p["numInputRows"]]
    assert source_offsets(second_batches[0], "startOffset") == source_offsets(
        first_batches[-1], "endOffset"
    )
    assert sum(p["numInputRows"] for p in first_batches) == len(first)
    assert sum(p["numInputRows"] for p in second_batches) == len(rest) + 1
    assert all(p["numInputRows"] <= 500 for p in first_batches + second_batches)


# -- failOnDataLoss on a resumed query


def test_resumed_query_after_deleted_offsets_fails_or_reads_what_is_left(
    spark: SparkSession, broker: Broker, tmp_path: Path, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 2)

    def produce(offsets: range) -> None:
        produce_values(
            broker.bootstrap,
            topic,
            ((p, None, f"{p}:{o}".encode()) for p in (0, 1) for o in offsets),
        )

    sink = BatchRows("partition", "offset", "value")

    def start(**options: str) -> StreamingQuery:
        return (
            stream_kafka(
                spark, broker.bootstrap, subscribe=topic, startingOffsets="earliest", **options
            )
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )

    def read_since(batches: int) -> list[tuple[int, int, bytes]]:
        return sorted(
            (r.partition, r.offset, bytes(r.value))
            for batch_id, rows in sink.batches.items()
            if batch_id >= batches
            for r in rows
        )

    produce(range(50))
    run_available_now(start())
    assert read_since(0) == [(p, o, f"{p}:{o}".encode()) for p in (0, 1) for o in range(50)]
    done = len(sink.batches)

    # The checkpoint says offset 50 next; the log of partition 0 now starts at 80.
    produce(range(50, 100))
    assert delete_records(broker.bootstrap, topic, {0: 80}) == {0: 80}

    failing = start()
    with pytest.raises(
        Exception,
        match=re.compile(
            r"Some data may have been lost.*"
            rf"Could not read records in offset \[50, 100\) for topic partition {re.escape(topic)}-0",
            re.DOTALL,
        ),
    ):
        failing.awaitTermination(QUERY_TIMEOUT_S)
    assert len(sink.batches) == done  # the failed batch reached no sink

    run_available_now(start(failOnDataLoss="false"))
    assert read_since(done) == [
        (p, o, f"{p}:{o}".encode()) for p, first in ((0, 80), (1, 50)) for o in range(first, 100)
    ]
