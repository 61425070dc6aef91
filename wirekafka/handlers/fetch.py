"""Fetch: whole record batches straight from the segment files, with long polling.

The response's record data are file spans that the server sends with
``os.sendfile``. Fetch v0-v3 predate record batches: those clients get the
batches converted to message sets (magic 0 for v0/v1, magic 1 for v2/v3).
"""

from __future__ import annotations

import logging

import trio

from wirekafka.handlers.context import BrokerContext
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.convert import batches_to_message_set
from wirekafka.protocol.records.record_batch import iter_batches
from wirekafka.protocol.rpc import Request
from wirekafka.storage.log import OffsetOutOfRange, StorageError
from wirekafka.storage.spans import FileSpan

log = logging.getLogger("wirekafka.fetch")

FIRST_BATCH_VERSION = 4  # Fetch v4+ carries record batches (magic 2)
FIRST_MAGIC_1_VERSION = 2


class _Unconvertible(Exception):
    """zstd batches have no message-set form: old fetchers get UNSUPPORTED_COMPRESSION_TYPE."""


def _down_convert(spans: list[FileSpan], version: int) -> bytes:
    data = b"".join(span.read_bytes() for span in spans)
    if any(header.compression == CompressionType.ZSTD for _, header in iter_batches(data)):
        raise _Unconvertible
    magic = 1 if version >= FIRST_MAGIC_1_VERSION else 0
    return batches_to_message_set(data, magic=magic)


def _read_all(
    ctx: BrokerContext, body: FetchRequest, version: int
) -> tuple[list[FetchableTopicResponse], int, bool]:
    """One pass over the partitions asked for: (responses, bytes, any error)."""
    remaining = body.max_bytes if version >= 3 else 2**31 - 1
    total = 0
    errors = False
    min_one_batch = True
    responses = []
    for topic in body.topics:
        partitions = []
        for asked in topic.partitions:
            result = PartitionData(
                partition_index=asked.partition,
                error_code=ErrorCode.NONE,
                high_watermark=-1,
                records=b"",
            )
            partitions.append(result)
            found = ctx.topics.partition_log(topic.topic, asked.partition)
            if isinstance(found, ErrorCode):
                result.error_code = found
                errors = True
                continue
            budget = max(0, min(asked.partition_max_bytes, remaining))
            try:
                read = found.read(asked.fetch_offset, budget, min_one_batch=min_one_batch)
                if isinstance(read, OffsetOutOfRange):
                    result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                    result.high_watermark = result.last_stable_offset = read.log_end_offset
                    result.log_start_offset = read.log_start_offset
                    errors = True
                    continue
                result.high_watermark = result.last_stable_offset = read.high_watermark
                result.log_start_offset = read.log_start_offset
                if not read.spans:
                    continue
                size = read.size_bytes
                if version >= FIRST_BATCH_VERSION:
                    (result.records,) = read.spans  # a read stays within one segment
                else:
                    result.records = _down_convert(read.spans, version)
                    size = len(result.records)
            except StorageError as exc:
                log.error("%s", exc)
                result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                errors = True
                continue
            except _Unconvertible:
                result.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
                errors = True
                continue
            except ProtocolError:  # a batch that cannot be converted down
                result.error_code = ErrorCode.CORRUPT_MESSAGE
                errors = True
                continue
            total += size
            remaining -= size
            min_one_batch = False
        responses.append(FetchableTopicResponse(topic=topic.topic, partitions=partitions))
    return responses, total, errors


async def handle_fetch(ctx: BrokerContext, request: Request) -> FetchResponse:
    body: FetchRequest = request.body
    version = request.version
    deadline = trio.current_time() + max(body.max_wait_ms, 0) / 1000
    watched = [(t.topic, p.partition) for t in body.topics for p in t.partitions]
    while True:
        responses, total, errors = _read_all(ctx, body, version)
        if total >= body.min_bytes or errors or not watched or ctx.appends.closed:
            break
        remaining = deadline - trio.current_time()
        if remaining <= 0:
            break
        with ctx.appends.watching(watched) as appended, trio.move_on_after(remaining):
            await appended.wait()
    return FetchResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=responses
    )
