"""Spark rows to Kafka records: the sink's column rules and its batch and stream writers.

The rules are those of Spark's Kafka sink: a ``value`` column (string or
binary) is required; ``key`` (string or binary), ``topic`` (string),
``partition`` (int) and ``headers`` (array of key/value structs) are
optional; the ``topic`` option, when given, wins over the column. Each Spark
task writes its rows and waits for every acknowledgement before it reports
success, so a committed batch is in Kafka (at-least-once, as Spark's sink).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, DataType, IntegerType, StringType, StructType

from wirekafka.spark.client import RowProducer
from wirekafka.spark.options import OptionError, SinkOptions
from wirekafka.spark.records import HEADERS_TYPE

FLUSH_TIMEOUT_S = 120.0

_COLUMN_TYPES: dict[str, tuple[DataType, ...]] = {
    "key": (StringType(), BinaryType()),
    "value": (StringType(), BinaryType()),
    "topic": (StringType(),),
    "partition": (IntegerType(),),
    "headers": (HEADERS_TYPE,),
}


def check_columns(schema: StructType, options: SinkOptions) -> None:
    """Refuse a DataFrame the sink cannot write, naming the column at fault."""
    types = {field.name: field.dataType for field in schema.fields}
    if "value" not in types:
        raise OptionError("the Kafka sink needs a 'value' column (string or binary)")
    if options.topic is None and "topic" not in types:
        raise OptionError("the Kafka sink needs a 'topic' column or the 'topic' option")
    for name, allowed in _COLUMN_TYPES.items():
        if name in types and not _is_one_of(types[name], allowed):
            expected = " or ".join(t.simpleString() for t in allowed)
            raise OptionError(
                f"column {name!r} must be {expected}, not {types[name].simpleString()}"
            )


@dataclass(frozen=True, slots=True)
class WrittenRecords(WriterCommitMessage):
    """What one Spark task wrote: the number of acknowledged records."""

    records: int


def write_rows(rows: Iterator[Any], options: SinkOptions) -> WrittenRecords:
    """Produce every row and wait until Kafka has acknowledged all of them."""
    producer = RowProducer(options.bootstrap_servers, options.client_config)
    for row in rows:
        fields = row.asDict()
        topic = options.topic or fields.get("topic")
        if not topic:
            raise OptionError(
                "a row has no topic: set the 'topic' option or give every row a topic"
            )
        producer.produce(
            topic,
            value=_as_bytes(fields["value"]),
            key=_as_bytes(fields.get("key")),
            partition=fields.get("partition"),
            headers=[(h["key"], _as_bytes(h["value"])) for h in fields.get("headers") or ()],
        )
    producer.flush(FLUSH_TIMEOUT_S)
    return WrittenRecords(producer.acknowledged)


class KafkaBatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[Any]) -> WrittenRecords:
        return write_rows(iterator, self._options)


class KafkaStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[Any]) -> WrittenRecords:
        return write_rows(iterator, self._options)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Every task flushed before it reported: the records are already in Kafka.
        return None

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # Kafka cannot take records back; what was acknowledged stays (at-least-once).
        return None


def _as_bytes(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"a {type(value).__name__} where a string or binary column was expected")


def _is_one_of(data_type: DataType, allowed: tuple[DataType, ...]) -> bool:
    # simpleString leaves out nullability, which the sink does not care about
    return data_type.simpleString() in {t.simpleString() for t in allowed}
