"""Batch reads with Spark's own connector, ``spark.read.format("kafka")``.

Offsets as JSON, timestamps, ``minPartitions``, headers as kafka-python and
confluent-kafka wrote them, and ``failOnDataLoss`` after DeleteRecords; each
checked row by row against what was produced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from interop_tests.broker import Broker
from interop_tests.clients.kafka_python import produce as kafka_python_produce
from interop_tests.support import Got, Sample, base_timestamp
from spark_tests.kafka import (
    create_topic,
    delete_records,
    partition_counts,
    produce_samples,
    produce_values,
    read_back,
)
from spark_tests.spark_kafka import as_got, read_kafka

PARTITIONS = 3
PER_PARTITION = 200


# -- a topic of records with chosen timestamps


def timestamp_of(t0: int, partition: int, offset: int) -> int:
    """Offset o of partition p is at t0 + 10 o + p, with a few out of order.

    Offset 60 carries the time of offset 150 (a record from the future), offset
    120 that of offset 0 (one from the past), and offset 101 the time of offset
    100 (two records at the same millisecond).
    """
    position = {60: 150, 120: 0, 101: 100}.get(offset, offset)
    return t0 + 10 * position + partition


def first_at_or_after(t0: int, partition: int, timestamp: int) -> int | None:
    """The answer ListOffsets must give: the first offset whose timestamp is at least it."""
    return next(
        (o for o in range(PER_PARTITION) if timestamp_of(t0, partition, o) >= timestamp), None
    )


def value_of(partition: int, offset: int) -> bytes:
    return f"p{partition}-o{offset:04d}|".encode() + bytes(range(offset % 256))


@pytest.fixture(scope="module")
def timed_topic(broker: Broker) -> tuple[str, int]:
    """3 partitions x 200 records with explicit timestamps (kafka-python), and its t0."""
    topic = "connector-timestamps"
    t0 = base_timestamp()
    samples = [
        Sample(
            partition=p,
            key=f"k{p}-{o}".encode(),
            value=value_of(p, o),
            timestamp=timestamp_of(t0, p, o),
        )
        for o in range(PER_PARTITION)
        for p in range(PARTITIONS)
    ]
    # Small segments with dense index entries, so that lookups cross segments and
    # start from time index entries; small batches, each several records.
    create_topic(
        broker.bootstrap,
        topic,
        PARTITIONS,
        {"segment.bytes": "8192", "index.interval.bytes": "512"},
    )
    kafka_python_produce(broker.bootstrap, topic, samples, batch_size=1024)
    segments = {
        p: len(list((broker.data_dir / f"{topic}-{p}").glob("*.log"))) for p in range(PARTITIONS)
    }
    assert all(n >= 4 for n in segments.values()), segments
    return topic, t0


def expected_rows(t0: int, ranges: dict[int, tuple[int, int]]) -> list[Got]:
    """The records of ``timed_topic`` in ``ranges[p] = (first, end)``, by partition and offset."""
    return [
        Got(
            partition=p,
            offset=o,
            key=f"k{p}-{o}".encode(),
            value=value_of(p, o),
            timestamp=timestamp_of(t0, p, o),
        )
        for p, (first, end) in sorted(ranges.items())
        for o in range(first, end)
    ]


@pytest.mark.slow
def test_offsets_json_with_earliest_and_latest(
    spark: SparkSession, broker: Broker, timed_topic: tuple[str, int]
) -> None:
    topic, t0 = timed_topic
    starting = {topic: {"0": 17, "1": -2, "2": 150}}  # -2: earliest
    ending = {topic: {"0": 23, "1": 40, "2": -1}}  # -1: latest
    df = read_kafka(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    )
    got = as_got(df)
    assert got == expected_rows(t0, {0: (17, 23), 1: (0, 40), 2: (150, PER_PARTITION)})
    assert {r.timestampType for r in df.select("timestampType").distinct().collect()} == {0}


def test_assign_with_offsets_json(
    spark: SparkSession, broker: Broker, timed_topic: tuple[str, int]
) -> None:
    topic, t0 = timed_topic
    df = read_kafka(
        spark,
        broker.bootstrap,
        assign=json.dumps({topic: [2, 0]}),
        startingOffsets=json.dumps({topic: {"0": 199, "2": 195}}),
        endingOffsets=json.dumps({topic: {"0": -1, "2": 198}}),
    )
    assert as_got(df) == expected_rows(t0, {0: (199, 200), 2: (195, 198)})


def test_starting_offsets_by_timestamp_per_partition(
    spark: SparkSession, broker: Broker, timed_topic: tuple[str, int]
) -> None:
    topic, t0 = timed_topic
    targets = {
        0: t0 + 400,  # exactly offset 40's time
        1: t0 + 555,  # between offsets 55 (551) and 56 (561)
        2: t0 + 1_499,  # offset 60 (1502, out of order) comes before offset 150 (1502)
    }
    assert {p: first_at_or_after(t0, p, ts) for p, ts in targets.items()} == {0: 40, 1: 56, 2: 60}
    df = read_kafka(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingOffsetsByTimestamp=json.dumps({topic: {str(p): ts for p, ts in targets.items()}}),
    )
    assert as_got(df) == expected_rows(t0, {0: (40, 200), 1: (56, 200), 2: (60, 200)})


def test_ending_offsets_by_timestamp(
    spark: SparkSession, broker: Broker, timed_topic: tuple[str, int]
) -> None:
    topic, t0 = timed_topic
    targets = {
        0: t0 + 1_000,  # offsets 100 and 101 are at t0 + 1000, but offset 60 (t0 + 1500)...
        1: t0 + 1_001,  # ...is the first at or after it, in partition 1 too
        2: t0 + 10**6,  # no record is that late: the end is the latest offset
    }
    ends = {p: first_at_or_after(t0, p, ts) for p, ts in targets.items()}
    assert ends == {0: 60, 1: 60, 2: None}
    df = read_kafka(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": 50, "1": 60, "2": 190}}),
        endingOffsetsByTimestamp=json.dumps({topic: {str(p): ts for p, ts in targets.items()}}),
    )
    assert as_got(df) == expected_rows(t0, {0: (50, 60), 1: (60, 60), 2: (190, PER_PARTITION)})


@pytest.mark.slow
def test_starting_timestamp_for_every_partition(
    spark: SparkSession, broker: Broker, timed_topic: tuple[str, int]
) -> None:
    topic, t0 = timed_topic
    early, late = t0 + 1, t0 + 1_991
    # partition 0's offset 0 (t0) is before t0 + 1; partitions 1 and 2 start at offset 0
    assert {p: first_at_or_after(t0, p, early) for p in range(PARTITIONS)} == {0: 1, 1: 0, 2: 0}
    # no record of partition 0 is as late as t0 + 1991 (its last is at t0 + 1990)
    assert {p: first_at_or_after(t0, p, late) for p in range(PARTITIONS)} == {
        0: None,
        1: 199,
        2: 199,
    }

    df = read_kafka(spark, broker.bootstrap, subscribe=topic, startingTimestamp=str(early))
    assert as_got(df) == expected_rows(t0, {0: (1, 200), 1: (0, 200), 2: (0, 200)})

    # A partition without a record that late fails the query by default...
    no_match = rf"No offset matched from request of topic-partition {re.escape(topic)}-0 and timestamp {late}"
    with pytest.raises(Exception, match=no_match):
        read_kafka(spark, broker.bootstrap, subscribe=topic, startingTimestamp=str(late)).count()
    # ...and, with the "latest" strategy, starts at its end.
    df = read_kafka(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingTimestamp=str(late),
        startingOffsetsByTimestampStrategy="latest",
    )
    assert as_got(df) == expected_rows(t0, {0: (200, 200), 1: (199, 200), 2: (199, 200)})


@pytest.mark.slow
def test_min_partitions_splits_ranges_and_keeps_every_record(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, PARTITIONS)
    sizes = {0: 600, 1: 300, 2: 100}
    produce_values(
        broker.bootstrap,
        topic,
        ((p, None, f"{p}:{o}".encode()) for p, n in sizes.items() for o in range(n)),
    )
    df = read_kafka(spark, broker.bootstrap, subscribe=topic, minPartitions="10")
    # Spark splits in proportion to size: 6 + 3 + 1 ranges of 100 records each
    assert df.rdd.getNumPartitions() == 10
    tasks = (
        df.groupBy(F.spark_partition_id().alias("task"))
        .agg(
            F.collect_set("partition").alias("partitions"),
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
            F.count("*").alias("records"),
        )
        .collect()
    )
    assert sorted((t.partitions, t.first, t.last, t.records) for t in tasks) == sorted(
        ([p], first, first + 99, 100) for p, n in sizes.items() for first in range(0, n, 100)
    )
    values = sorted(bytes(r.value) for r in df.select("value").collect())
    assert values == sorted(f"{p}:{o}".encode() for p, n in sizes.items() for o in range(n))


# -- headers


HEADER_SETS: list[tuple[tuple[str, bytes | None], ...]] = [
    (),
    (("only", b"one"),),
    (("null", None),),
    (("empty", b""),),
    (("dup", b"first"), ("other", b"x"), ("dup", b"second"), ("dup", None)),
    (("clé-ü", "värde".encode()), ("bin", bytes(range(256)))),
    tuple((f"h{i}", bytes([i]) * i) for i in range(20)),
]


def header_samples(tag: str, count: int, *, null_header_values: bool) -> list[Sample]:
    """Records with every header set in turn; without ``null_header_values`` a null
    header value becomes ``b"-"`` (kafka-python 3's producer refuses null ones)."""
    header_sets = [
        tuple((k, v if v is not None or null_header_values else b"-") for k, v in headers)
        for headers in HEADER_SETS
    ]
    return [
        Sample(
            partition=i % PARTITIONS,
            key=None if i % 11 == 3 else f"{tag}-{i}".encode(),
            value=None
            if i % 13 == 4 and i % 11 != 3  # never both null: kafka-python refuses that
            else f"{tag}-value-{i}".encode() + bytes([i % 256]),
            headers=header_sets[i % len(header_sets)],
        )
        for i in range(count)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("producer", ["kafka-python", "confluent-kafka"])
def test_headers_byte_for_byte(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str], producer: str
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, PARTITIONS)
    samples = header_samples(producer, 700, null_header_values=producer == "confluent-kafka")
    if producer == "kafka-python":
        kafka_python_produce(broker.bootstrap, topic, samples)
    else:
        produce_samples(broker.bootstrap, topic, samples)

    got = as_got(read_kafka(spark, broker.bootstrap, subscribe=topic, includeHeaders="true"))
    expected = [
        (s.partition, s.key, s.value, s.headers)
        for p in range(PARTITIONS)
        for s in samples
        if s.partition == p
    ]
    assert [(g.partition, g.key, g.value, g.headers) for g in got] == expected
    # and kafka-python reads the same records, headers and all
    counts = partition_counts(broker.bootstrap, topic, range(PARTITIONS))
    read = sorted(read_back(broker.bootstrap, topic, counts), key=lambda g: (g.partition, g.offset))
    assert [(g.partition, g.offset, g.key, g.value, g.headers) for g in read] == [
        (g.partition, g.offset, g.key, g.value, g.headers) for g in got
    ]
    # without includeHeaders there is no headers column
    assert "headers" not in read_kafka(spark, broker.bootstrap, subscribe=topic).columns


# -- failOnDataLoss


def test_deleted_records_fail_the_query_unless_allowed(
    spark: SparkSession, broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("")
    create_topic(broker.bootstrap, topic, 2)
    produce_values(
        broker.bootstrap,
        topic,
        ((p, None, f"{p}:{o}".encode()) for p in (0, 1) for o in range(100)),
    )
    assert delete_records(broker.bootstrap, topic, {0: 40, 1: 10}) == {0: 40, 1: 10}
    from_zero = json.dumps({topic: {"0": 0, "1": 5}})

    # Spark's KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE, from whichever task fails first
    lost = (
        r"KafkaIllegalStateException: Some data may have been lost .*"
        rf"Could not read records in offset \[(0|5), 100\) for topic partition {re.escape(topic)}-[01]"
    )
    with pytest.raises(Exception, match=re.compile(lost, re.DOTALL)):
        read_kafka(spark, broker.bootstrap, subscribe=topic, startingOffsets=from_zero).collect()

    df = read_kafka(
        spark, broker.bootstrap, subscribe=topic, startingOffsets=from_zero, failOnDataLoss="false"
    )
    rows = sorted((r.partition, r.offset, bytes(r.value)) for r in df.collect())
    assert rows == [
        (p, o, f"{p}:{o}".encode()) for p, first in ((0, 40), (1, 10)) for o in range(first, 100)
    ]

    # Earliest (and -2) is the log start offset, and so is the first offset at or after a
    # time before every record: nothing is lost from there.
    for options in (
        {"startingOffsets": "earliest"},
        {"startingOffsets": json.dumps({topic: {"0": -2, "1": -2}})},
        {"startingTimestamp": "0"},
    ):
        df = read_kafka(spark, broker.bootstrap, subscribe=topic, **options)
        assert sorted((r.partition, r.offset) for r in df.collect()) == [
            (p, o) for p, first in ((0, 40), (1, 10)) for o in range(first, 100)
        ], options
