"""The example page-view pipeline as the Spark tests run it, on either Kafka source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from interop_tests.broker import Broker
from spark_tests.kafka import create_topic, partition_counts, produce_values, read_back
from wirekafka.examples.page_views import (
    WINDOW_MS,
    PageView,
    closing_view,
    expected_counts,
    page_views,
    parse_counts,
    start_pipeline,
)

PARTITIONS = 3
START_MS = 1_800_000_000_000  # a whole minute


def produce_views(broker: Broker, topic: str, views: list[PageView]) -> None:
    produce_values(
        broker.bootstrap,
        topic,
        ((i % PARTITIONS, view.user.encode(), view.to_json()) for i, view in enumerate(views)),
    )


def written_counts(broker: Broker, topic: str) -> dict[tuple[int, str], list[int]]:
    counts = partition_counts(broker.bootstrap, topic, range(PARTITIONS))
    return parse_counts(got.value or b"" for got in read_back(broker.bootstrap, topic, counts))


def page_view_topics(
    broker: Broker, topic_name: Callable[[str], str], views: list[PageView]
) -> tuple[str, str]:
    """A new input topic holding ``views``, and a new, empty output topic."""
    views_topic, counts_topic = topic_name("views"), topic_name("counts")
    for topic in (views_topic, counts_topic):
        create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_views(broker, views_topic, views)
    return views_topic, counts_topic


def check_page_view_pipeline(
    spark: SparkSession,
    broker: Broker,
    tmp_path: Path,
    topic_name: Callable[[str], str],
    *,
    source_format: str,
) -> None:
    """Run the example pipeline on ``source_format`` and check every window's count."""
    views = page_views(5_000, start_ms=START_MS, span_ms=10 * WINDOW_MS, seed=3)
    views_topic, counts_topic = page_view_topics(broker, topic_name, views)

    query = start_pipeline(
        spark,
        bootstrap_servers=broker.bootstrap,
        input_topic=views_topic,
        output_topic=counts_topic,
        checkpoint=str(tmp_path / "checkpoint"),
        source_format=source_format,
    )
    try:
        query.processAllAvailable()
        # Nothing is written while the watermark still holds every window open.
        assert written_counts(broker, counts_topic) == {}
        produce_views(broker, views_topic, [closing_view(views)])
        query.processAllAvailable()
    finally:
        query.stop()

    written = written_counts(broker, counts_topic)
    expected = expected_counts(views)
    assert len(expected) == 80  # 8 pages x 10 windows
    assert {key: counts[-1] for key, counts in written.items()} == expected
    assert all(len(counts) == 1 for counts in written.values()), "a window was written twice"
