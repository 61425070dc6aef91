"""The ``wirekafka`` PySpark data source: Kafka topics as batch and streaming DataFrames.

``spark.read.format("wirekafka")`` and ``spark.readStream.format("wirekafka")``
take the options of Spark's Kafka source and give its schema; ``write`` and
``writeStream`` take the sink's. Each Kafka partition with records to read is
one Spark partition. A stream's offset is Spark's Kafka offset JSON
(``{"topic": {"0": 23}}``), which Spark keeps in the query's checkpoint, so a
restarted query goes on where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from wirekafka.spark.client import KafkaMetadata, read_range
from wirekafka.spark.offsets import LogBounds, OffsetRange, Offsets, cap, plan, resolve
from wirekafka.spark.options import (
    OptionError,
    SourceOptions,
    include_headers,
    offsets_from_json,
    offsets_json,
    partition_name,
    sink_options,
    source_options,
)
from wirekafka.spark.records import kafka_schema, to_record_batch
from wirekafka.spark.sink import KafkaBatchWriter, KafkaStreamWriter, check_columns

log = logging.getLogger("wirekafka.spark")


class KafkaDataSource(DataSource):
    """Spark's Kafka source and sink, offline: ``format("wirekafka")``."""

    @classmethod
    def name(cls) -> str:
        return "wirekafka"

    def schema(self) -> StructType:
        return kafka_schema(include_headers(dict(self.options)))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(source_options(dict(self.options), streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(source_options(dict(self.options), streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        options = sink_options(dict(self.options))
        check_columns(schema, options)
        return KafkaBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        options = sink_options(dict(self.options))
        check_columns(schema, options)
        return KafkaStreamWriter(options)


class _RangeReading:
    """What the batch and stream readers share: the client, and reading one range."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self._options = options
        self._arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self._metadata: KafkaMetadata | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The reader goes to the executors in a pickle; the driver's client stays behind.
        return {**self.__dict__, "_metadata": None}

    def _client(self) -> KafkaMetadata:
        if self._metadata is None:
            self._metadata = KafkaMetadata(
                self._options.bootstrap_servers,
                self._options.client_config,
                self._options.poll_timeout_ms,
            )
        return self._metadata

    def _current_bounds(self) -> LogBounds:
        client = self._client()
        return client.bounds(client.partitions(self._options.subscription))

    def _input_partitions(
        self, start: Offsets, end: Offsets, earliest: Offsets
    ) -> list[InputPartition]:
        ranges = plan(
            start,
            end,
            earliest,
            fail_on_data_loss=self._options.fail_on_data_loss,
            warn=log.warning,
        )
        return [InputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        offset_range: OffsetRange | None = partition.value
        if offset_range is None:  # Spark's stand-in when a batch read plans no partition
            return
        for records in read_range(
            offset_range,
            self._options.bootstrap_servers,
            self._options.client_config,
            poll_timeout_ms=self._options.poll_timeout_ms,
            fail_on_data_loss=self._options.fail_on_data_loss,
        ):
            yield to_record_batch(records, self._arrow_schema)


class KafkaBatchReader(_RangeReading, DataSourceReader):
    """``spark.read``: from ``startingOffsets`` (earliest) to ``endingOffsets`` (latest)."""

    def partitions(self) -> list[InputPartition]:
        bounds = self._current_bounds()
        start = resolve(self._options.starting, bounds, "startingOffsets")
        end = resolve(self._options.ending, bounds, "endingOffsets")
        for tp in sorted(end):
            name = partition_name(tp)
            if end[tp] < start[tp]:
                raise OptionError(
                    f"endingOffsets of {name} ({end[tp]}) is before its startingOffsets ({start[tp]})"
                )
            if end[tp] > bounds.latest[tp]:
                raise OptionError(
                    f"endingOffsets of {name} ({end[tp]}) is past its log end ({bounds.latest[tp]})"
                )
        return self._input_partitions(start, end, dict(bounds.earliest))


class KafkaStreamReader(_RangeReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: micro-batches of new records, capped by ``maxOffsetsPerTrigger``."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        super().__init__(options, schema)
        self._available_now: Offsets | None = None
        self._latest_seen: Offsets | None = None

    def initialOffset(self) -> dict[str, dict[str, int]]:
        bounds = self._current_bounds()
        return offsets_json(resolve(self._options.starting, bounds, "startingOffsets"))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        bounds = self._current_bounds()
        self._latest_seen = dict(bounds.latest)
        began = offsets_from_json(start)
        # Partitions that appeared since (new topics, added partitions) start at their earliest.
        first = {tp: began.get(tp, bounds.earliest[tp]) for tp in bounds.latest}
        latest = dict(bounds.latest)
        if self._available_now is not None:
            # Trigger.AvailableNow: nothing written after the query started is read.
            target = self._available_now
            latest = {tp: min(end, target.get(tp, first[tp])) for tp, end in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = cap(first, latest, limit.max_rows)
        return offsets_json(latest)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._options.max_offsets_per_trigger)

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return None if self._latest_seen is None else offsets_json(self._latest_seen)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = dict(self._current_bounds().latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        began, until = offsets_from_json(start), offsets_from_json(end)
        if began == until:
            return []
        # latestOffset has just listed the partitions: only their log starts may have moved.
        return self._input_partitions(began, until, self._client().earliest(set(until)))

    def commit(self, end: dict[str, Any]) -> None:
        # Spark keeps the offsets in its checkpoint; nothing is committed to Kafka.
        return None
