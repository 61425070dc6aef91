"""Kafka records as Spark rows: the Kafka source's schema and its Arrow batches.

The schema is that of Spark's own Kafka source, column for column, so a query
moves between ``format("kafka")`` and ``format("wirekafka")`` unchanged.
Records go to Spark as Arrow record batches built column by column, not as
Python rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# Spark's timestampType column carries Kafka's TimestampType ids.
_TIMESTAMP_TYPE_IDS = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}
NO_TIMESTAMP_TYPE = -1

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def kafka_schema(include_headers: bool) -> StructType:
    """The columns of Spark's Kafka source (``headers`` with ``includeHeaders=true``)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def to_record_batch(records: Sequence[Message], schema: pa.Schema) -> pa.RecordBatch:
    """One Arrow batch of the records, in ``schema`` (the Arrow form of :func:`kafka_schema`)."""
    timestamps = [record.timestamp() for record in records]
    columns: dict[str, list[object]] = {
        "key": [record.key() for record in records],
        "value": [record.value() for record in records],
        "topic": [record.topic() for record in records],
        "partition": [record.partition() for record in records],
        "offset": [record.offset() for record in records],
        # Spark's timestamps are microseconds; Kafka's are milliseconds.
        "timestamp": [milliseconds * 1000 for _, milliseconds in timestamps],
        "timestampType": [
            _TIMESTAMP_TYPE_IDS.get(kind, NO_TIMESTAMP_TYPE) for kind, _ in timestamps
        ],
    }
    if "headers" in schema.names:
        columns["headers"] = [
            [{"key": header[0], "value": header[1]} for header in record.headers() or ()]
            for record in records
        ]
    arrays = [pa.array(columns[field.name], type=field.type) for field in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
