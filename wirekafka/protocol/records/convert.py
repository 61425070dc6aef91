"""Conversion between message sets (magic 0/1) and record batches (magic 2).

The log holds record batches only: old-format produce requests are converted
up before storage, and fetches of old versions are converted down.
"""

from __future__ import annotations

from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.primitives import Buffer
from wirekafka.protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType
from wirekafka.protocol.records.message_set import (
    MessageSetWriter,
    first_codec,
    iter_message_set,
)
from wirekafka.protocol.records.record import TimestampType
from wirekafka.protocol.records.record_batch import (
    BatchHeader,
    BatchWriter,
    iter_batches,
    iter_records,
)
from wirekafka.protocol.records.validate import InvalidRecords


def message_set_to_batch(
    buf: Buffer,
    *,
    base_offset: int | None = None,
    keys_required: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """One record batch holding every message of a message set.

    Keys, values and timestamps (none for magic 0) are kept, and the codec of
    the first compressed message is used for the batch. Offsets are kept, and
    must then increase, unless ``base_offset`` is given: a produce request's
    offsets mean nothing, so the broker numbers the records from there.
    Messages are read and written one at a time, the batch compressed as it
    grows. An empty message set gives empty bytes. ``keys_required`` (a
    compacted topic) refuses messages without a key with
    :class:`InvalidRecords`; compressed messages may inflate to
    ``max_decompressed_bytes`` in all.
    """
    writer = BatchWriter(first_codec(buf))
    log_append_time_ms = None
    messages = iter_message_set(buf, max_decompressed_bytes=max_decompressed_bytes)
    for index, message in enumerate(messages):
        if keys_required and message.key is None:
            raise InvalidRecords(
                ErrorCode.INVALID_RECORD,
                f"message {index} has no key, which a compacted topic requires",
            )
        if index == 0 and message.timestamp_type == TimestampType.LOG_APPEND_TIME:
            log_append_time_ms = message.timestamp
        record = message.to_record()
        if base_offset is not None:
            record.offset = base_offset + index
        try:
            writer.add(record)
        except ValueError as exc:
            raise ProtocolError(f"message set offsets do not increase: {exc}") from exc
    if not writer.record_count:
        return b""
    return writer.finish(log_append_time_ms=log_append_time_ms)


class Unconvertible(ProtocolError):
    """A batch that has no message-set form: zstd data (Kafka answers
    UNSUPPORTED_COMPRESSION_TYPE to the old fetcher)."""


def batch_to_message_set(
    buf: Buffer,
    position: int,
    header: BatchHeader,
    *,
    magic: int,
    max_inflated_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """The records of the batch at ``position`` as a message set of ``magic``.

    Offsets, keys, values and (for magic 1) timestamps are kept; record
    headers have no place in the old formats and are dropped, as are control
    and empty batches. A compressed batch becomes one wrapper with the same
    codec, written as its records are read: only the compressed bytes, a
    chunk of the inflated ones and the record in hand are held at a time.
    """
    if header.compression == CompressionType.ZSTD:
        raise Unconvertible(f"batch at offset {header.base_offset} is zstd")
    if header.is_control or not header.record_count:
        return b""
    log_append_time_ms = (
        header.max_timestamp if header.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    )
    writer = MessageSetWriter(
        magic=magic, compression=header.compression, log_append_time_ms=log_append_time_ms
    )
    for record in iter_records(
        buf, position, header=header, max_decompressed_bytes=max_inflated_bytes
    ):
        writer.add(record)
    return writer.finish()


def batches_to_message_set(buf: Buffer, *, magic: int, allow_partial_tail: bool = True) -> bytes:
    """The records of the batches in ``buf`` as a message set of ``magic`` (see
    :func:`batch_to_message_set`); a partial batch at the end (a fetch cut
    short) is left out."""
    return b"".join(
        batch_to_message_set(buf, position, header, magic=magic)
        for position, header in iter_batches(buf, allow_partial_tail=allow_partial_tail)
    )
