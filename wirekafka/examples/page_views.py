"""Example pipeline: page views per page per minute, counted by Spark structured streaming.

Page views (JSON: user, page, event time) go to an input topic. A streaming
query reads them, counts views per page per event-time window, holding each
window open until the watermark passes it, and writes each closed window's
count to an output topic as JSON keyed by page.

Run it end to end against a broker (started with ``wirekafka serve``)::

    .venv/bin/pip install -e '.[spark]'
    .venv/bin/python -m wirekafka.examples.page_views --bootstrap-servers 127.0.0.1:9092

It produces the events, runs the query until it has caught up, sends one
late-enough view to move the watermark past every window, runs it again, reads
the output topic back and compares the counts with the ones computed here.
``--source-format kafka`` runs the same pipeline on Spark's built-in Kafka
source and sink; ``--jars`` names the connector's jars, of PySpark's version
(spark-sql-kafka-0-10_2.13, spark-token-provider-kafka-0-10_2.13,
kafka-clients and commons-pool2), comma separated.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

EVENT_SCHEMA = "user STRING, page STRING, time TIMESTAMP"
PAGES = ("/", "/search", "/cart", "/checkout", "/help", "/about", "/products", "/login")
WINDOW_MS = 60_000
WATERMARK_DELAY_MS = 30 * 60_000

WindowCounts = dict[tuple[int, str], int]


@dataclass(frozen=True, slots=True)
class PageView:
    user: str
    page: str
    time_ms: int

    def to_json(self) -> bytes:
        moment = datetime.fromtimestamp(self.time_ms / 1000, tz=UTC)
        time = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return json.dumps({"user": self.user, "page": self.page, "time": time}).encode()


def page_views(count: int, *, start_ms: int, span_ms: int, seed: int = 7) -> list[PageView]:
    """``count`` views by 50 users over ``span_ms`` from ``start_ms``, in time order."""
    rng = random.Random(seed)
    times = sorted(start_ms + rng.randrange(span_ms) for _ in range(count))
    return [PageView(f"user-{rng.randrange(50)}", rng.choice(PAGES), t) for t in times]


def closing_view(views: Iterable[PageView]) -> PageView:
    """A view late enough to move the watermark past every window of ``views``."""
    last = max(view.time_ms for view in views)
    return PageView("watermark", "/", last + WATERMARK_DELAY_MS + 2 * WINDOW_MS)


def expected_counts(views: Iterable[PageView]) -> WindowCounts:
    """Views per (window start in ms, page), computed without Spark."""
    return dict(Counter((view.time_ms - view.time_ms % WINDOW_MS, view.page) for view in views))


def view_counts(events: DataFrame) -> DataFrame:
    """The query: Kafka records of page views in, Kafka records of window counts out."""
    views = events.select(
        F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("view")
    ).select("view.*")
    counts = (
        views.withWatermark("time", f"{WATERMARK_DELAY_MS // 1000} seconds")
        .groupBy(F.window("time", f"{WINDOW_MS // 1000} seconds"), "page")
        .count()
    )
    return counts.select(
        F.col("page").alias("key"),
        F.to_json(
            F.struct(
                F.unix_millis(F.col("window.start")).alias("window_start_ms"),
                F.unix_millis(F.col("window.end")).alias("window_end_ms"),
                F.col("page"),
                F.col("count").alias("views"),
            )
        ).alias("value"),
    )


def start_pipeline(
    spark: SparkSession,
    *,
    bootstrap_servers: str,
    input_topic: str,
    output_topic: str,
    checkpoint: str,
    source_format: str = "wirekafka",
    source_options: Mapping[str, str] | None = None,
) -> StreamingQuery:
    """Start the streaming query; each closed window is written once (append mode)."""
    reader = (
        spark.readStream.format(source_format)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", input_topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in (source_options or {}).items():
        reader = reader.option(key, value)
    return (
        view_counts(reader.load())
        .writeStream.format(source_format)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("topic", output_topic)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .start()
    )


def parse_counts(values: Iterable[bytes]) -> dict[tuple[int, str], list[int]]:
    """Output records to every count written per (window start, page), in order."""
    written: dict[tuple[int, str], list[int]] = {}
    for value in values:
        row = json.loads(value)
        if row["window_end_ms"] - row["window_start_ms"] != WINDOW_MS:
            raise ValueError(f"window of the wrong length in {row}")
        written.setdefault((row["window_start_ms"], row["page"]), []).append(row["views"])
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--source-format", default="wirekafka", choices=("wirekafka", "kafka"))
    parser.add_argument(
        "--jars",
        default="",
        help="comma-separated jars for the session's classpath; --source-format kafka needs"
        " Spark's Kafka connector there: spark-sql-kafka-0-10_2.13 and"
        " spark-token-provider-kafka-0-10_2.13 of PySpark's version, kafka-clients and"
        " commons-pool2",
    )
    args = parser.parse_args(argv)
    if args.source_format == "kafka" and not args.jars:
        parser.error(
            "--source-format kafka needs Spark's Kafka connector on the classpath:"
            " --jars spark-sql-kafka-0-10_2.13-<version>.jar,...  (see --help)"
        )

    # Imported here so that --help works without a Kafka client installed.
    from wirekafka.examples.topics import create_topics, produce, read_values
    from wirekafka.spark.session import local_session

    run = uuid.uuid4().hex[:8]
    input_topic, output_topic = f"page-views-{run}", f"page-view-counts-{run}"
    create_topics(args.bootstrap_servers, [input_topic, output_topic], args.partitions)
    start_ms = 1_800_000_000_000
    views = page_views(args.events, start_ms=start_ms, span_ms=10 * WINDOW_MS)
    produce(args.bootstrap_servers, input_topic, [(v.user.encode(), v.to_json()) for v in views])
    print(f"produced {len(views)} page views to {input_topic}")

    spark = local_session("page-views", conf={"spark.jars": args.jars} if args.jars else None)
    with tempfile.TemporaryDirectory(prefix="page-views-checkpoint-") as checkpoint:
        query = start_pipeline(
            spark,
            bootstrap_servers=args.bootstrap_servers,
            input_topic=input_topic,
            output_topic=output_topic,
            checkpoint=checkpoint,
            source_format=args.source_format,
        )
        query.processAllAvailable()
        closing = closing_view(views)
        produce(args.bootstrap_servers, input_topic, [(closing.user.encode(), closing.to_json())])
        query.processAllAvailable()
        query.stop()
    spark.stop()

    written = parse_counts(read_values(args.bootstrap_servers, output_topic))
    expected = expected_counts(views)
    print(f"{'window (UTC)':<20} {'page':<10} {'views':>6}")
    for (window_ms, page), counts in sorted(written.items()):
        moment = datetime.fromtimestamp(window_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
        print(f"{moment:<20} {page:<10} {counts[-1]:>6}")
    got = {key: counts[-1] for key, counts in written.items()}
    if got != expected:
        print(
            f"counts differ from the expected ones: {len(got)} windows written, {len(expected)} expected"
        )
        return 1
    print(f"all {len(expected)} window counts match the {len(views)} views produced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
