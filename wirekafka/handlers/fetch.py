"""Fetch: whole record batches straight from the segment files, with long polling.

The response's record data are file spans that the server sends with
``os.sendfile``. Fetch v0-v3 predate record batches: those clients get the
batches converted to message sets (magic 0 for v0/v1, magic 1 for v2/v3),
unless the topic's ``message.downconversion.enable`` is false (then
UNSUPPORTED_VERSION, as Kafka answers). A conversion inflates and rewrites
records, so it runs batch by batch in bounded memory (see
:func:`batch_to_message_set`) and, unless the data are small and
uncompressed, in a worker thread (the ``RECORDS`` pool of
:mod:`wirekafka.worker_threads`). A stored batch that cannot be converted
(corrupt inside, or inflating past the limit) is logged and left out; zstd
data, which has no message-set form, get UNSUPPORTED_COMPRESSION_TYPE.

Consumers read below the high watermark. A follower (``replica_id`` set to its
broker id) reads up to the log end: its fetch offset tells the leader how far
its log reaches (:mod:`wirekafka.broker.replication`), and its leader epoch
must be the leader's (FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH
when newer).

So must a consumer's, in a cluster, when it names one (Fetch v9+), and it is
checked again on every pass of a long poll, just before the read: a fetch made
at an older epoch gets no records a newer epoch wrote, as in Kafka. A client
that took such records would go on at the new epoch's offsets while it still
checks its position of the old epoch with OffsetForLeaderEpoch (KIP-320);
librdkafka then compares the old epoch's end with its newer position and
reports a log truncation that did not happen. ZooKeeper-mode controllers bump
the leader epoch on an ISR shrink as well, with the leader unchanged, so a
long poll at that very leader sees the epoch change under it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import trio

from wirekafka.broker.context import BrokerContext
from wirekafka.broker.replication import ReplicaManager, leader_epoch_error
from wirekafka.handlers.authorization import NOTHING_DENIED, cluster_authorized, denied_names
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
)
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.convert import Unconvertible, batch_to_message_set
from wirekafka.protocol.records.record_batch import iter_batches
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.log import OffsetOutOfRange, StorageError
from wirekafka.storage.spans import FileSpan
from wirekafka.worker_threads import RECORDS, run_blocking

log = logging.getLogger("wirekafka.fetch")

FIRST_BATCH_VERSION = 4  # Fetch v4+ carries record batches (magic 2)
FIRST_MAGIC_1_VERSION = 2
_INLINE_CONVERSION_BYTES = 64 * 1024  # uncompressed data this small convert on the event loop


@dataclass(slots=True)
class _Conversion:
    """A partition's read, to be converted to a message set for an old fetcher."""

    topic: str
    result: PartitionData
    spans: list[FileSpan]


def _read_spans(conversion: _Conversion) -> bytes | None:
    try:
        return b"".join(span.read_bytes() for span in conversion.spans)
    except OSError as exc:
        result = conversion.result
        log.error("%s-%d: reading for a down-conversion failed: %s",
                  conversion.topic, result.partition_index, exc)  # fmt: skip
        result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        return None


def _down_convert(
    conversion: _Conversion, data: bytes | None, magic: int, max_inflated_bytes: int
) -> None:
    """Convert the batches read (``data``, or read here) into ``conversion.result``,
    batch by batch."""
    result = conversion.result
    if data is None and (data := _read_spans(conversion)) is None:
        return
    parts: list[bytes] = []
    skipped = 0
    try:
        batches = list(iter_batches(data, allow_partial_tail=True))
    except ProtocolError:
        batches = []
    for position, header in batches:
        try:
            parts.append(
                batch_to_message_set(
                    data, position, header, magic=magic, max_inflated_bytes=max_inflated_bytes
                )
            )
        except Unconvertible:
            if not parts:
                result.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
                return
            break  # what came before goes out; the old client asks again from here
        except ProtocolError as exc:
            log.warning(
                "%s-%d: the stored batch at offset %d cannot be converted for an old client "
                "and is left out: %s",
                conversion.topic, result.partition_index, header.base_offset, exc,
            )  # fmt: skip
            skipped += 1
    result.records = b"".join(parts)
    if skipped and not result.records:
        result.error_code = ErrorCode.CORRUPT_MESSAGE


async def _read_all(
    ctx: BrokerContext, body: FetchRequest, version: int, denied: frozenset[str]
) -> tuple[list[FetchableTopicResponse], int, bool, list[_Conversion]]:
    """One pass over the partitions asked for: (responses, bytes, any error,
    the reads an old fetcher needs converted). The topics ``denied`` answer
    TOPIC_AUTHORIZATION_FAILED and are not looked up; as in Kafka, that does
    not end a long poll on the others."""
    remaining = body.max_bytes if version >= 3 else 2**31 - 1
    replicas = ctx.replicas if body.replica_id >= 0 else None
    total = 0
    errors = False
    min_one_batch = True
    responses = []
    conversions = []
    for topic in body.topics:
        if denied and topic.topic in denied:
            responses.append(_denied(topic))
            continue
        partitions = []
        for asked in topic.partitions:
            result = PartitionData(
                partition_index=asked.partition,
                error_code=ErrorCode.NONE,
                high_watermark=-1,
                records=b"",
            )
            partitions.append(result)
            found = await ctx.topics.partition_log(topic.topic, asked.partition)
            if isinstance(found, ErrorCode):
                result.error_code = found
                errors = True
                continue
            if version < FIRST_BATCH_VERSION and not found.config.message_downconversion_enable:
                result.error_code = ErrorCode.UNSUPPORTED_VERSION
                errors = True
                continue
            budget = max(0, min(asked.partition_max_bytes, remaining))
            max_offset: int | None = found.high_watermark
            if replicas is not None:  # a follower's fetch
                error = _follower_fetched(replicas, body.replica_id, topic.topic, asked)
                if error is not None:
                    result.error_code = error
                    errors = True
                    continue
                max_offset = None
            elif ctx.replicas is not None and asked.current_leader_epoch >= 0:
                # no await between this check and the read: no append of a newer epoch
                led = await ctx.replicas.leading_at(
                    topic.topic, asked.partition, asked.current_leader_epoch
                )
                if isinstance(led, ErrorCode):
                    result.error_code = led
                    errors = True
                    continue
            try:
                read = found.read(
                    asked.fetch_offset, budget, max_offset=max_offset, min_one_batch=min_one_batch
                )
            except StorageError as exc:
                log.error("%s", exc)
                result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                errors = True
                continue
            if isinstance(read, OffsetOutOfRange):
                result.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                result.high_watermark = result.last_stable_offset = read.log_end_offset
                result.log_start_offset = read.log_start_offset
                errors = True
                continue
            result.high_watermark = result.last_stable_offset = found.high_watermark
            result.log_start_offset = read.log_start_offset
            if not read.spans:
                continue
            if version >= FIRST_BATCH_VERSION:
                (result.records,) = read.spans  # a read stays within one segment
            else:
                conversions.append(_Conversion(topic.topic, result, read.spans))
            size = read.size_bytes
            total += size
            remaining -= size
            min_one_batch = False
        responses.append(FetchableTopicResponse(topic=topic.topic, partitions=partitions))
    return responses, total, errors, conversions


def _denied(topic: FetchTopic) -> FetchableTopicResponse:
    return FetchableTopicResponse(
        topic=topic.topic,
        partitions=[
            PartitionData(
                partition_index=asked.partition,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                high_watermark=-1,
                records=b"",
            )
            for asked in topic.partitions
        ],
    )


def _denied_topics(ctx: BrokerContext, request: Request, body: FetchRequest) -> frozenset[str]:
    """The topics this fetch may not read: a follower (``replica_id`` >= 0) needs
    ClusterAction on the cluster for all of them, a consumer Read on each."""
    if ctx.authorizer is None:
        return NOTHING_DENIED
    names = {topic.topic for topic in body.topics}
    if body.replica_id >= 0:
        allowed = cluster_authorized(ctx, request, AclOperation.CLUSTER_ACTION)
        return NOTHING_DENIED if allowed else frozenset(names)
    return denied_names(ctx, request, AclOperation.READ, ResourceType.TOPIC, names)


def _follower_fetched(
    replicas: ReplicaManager, replica_id: int, topic: str, asked: FetchPartition
) -> ErrorCode | None:
    """Note a follower's progress; an error when it is not a follower of this
    leader at this leader epoch."""
    led = replicas.leading(topic, asked.partition)
    if led is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    error = leader_epoch_error(led, asked.current_leader_epoch)
    if error is None:
        replicas.follower_fetched(led, replica_id, asked.fetch_offset)
    return error


def _uncompressed(data: bytes) -> bool:
    try:
        batches = iter_batches(data, allow_partial_tail=True)
        return all(header.compression == CompressionType.NONE for _, header in batches)
    except ProtocolError:
        return False


async def _convert_all(ctx: BrokerContext, conversions: list[_Conversion], version: int) -> None:
    """Convert each read on the event loop when it is small and uncompressed, else
    (it may inflate far) in a worker thread, from reading the spans on."""
    magic = 1 if version >= FIRST_MAGIC_1_VERSION else 0
    max_inflated_bytes = ctx.config.max_inflated_bytes
    for conversion in conversions:
        data = None
        if sum(span.size_bytes for span in conversion.spans) <= _INLINE_CONVERSION_BYTES:
            data = _read_spans(conversion)
            if data is None:
                continue
            if _uncompressed(data):
                _down_convert(conversion, data, magic, max_inflated_bytes)
                continue

        def convert(conversion: _Conversion = conversion, data: bytes | None = data) -> None:
            _down_convert(conversion, data, magic, max_inflated_bytes)

        await run_blocking(RECORDS, convert)


def _count_bytes_out(ctx: BrokerContext, responses: list[FetchableTopicResponse]) -> None:
    metrics = ctx.metrics
    for topic in responses:
        size = 0
        for partition in topic.partitions:
            records = partition.records
            if isinstance(records, (bytes, bytearray, memoryview)):
                size += len(records)
            elif records is not None:
                size += records.size_bytes  # a span of a segment file
        if size:
            metrics.fetched(topic.topic, size)


async def handle_fetch(ctx: BrokerContext, request: Request) -> FetchResponse:
    body: FetchRequest = request.body
    version = request.version
    deadline = trio.current_time() + max(body.max_wait_ms, 0) / 1000
    denied = _denied_topics(ctx, request, body)
    watched = [
        (t.topic, p.partition)
        for t in body.topics
        if not (denied and t.topic in denied)
        for p in t.partitions
    ]
    replicas = ctx.replicas
    if (
        watched
        and body.replica_id >= 0
        and replicas is not None
        and any(replicas.leading(*key) is None for key in watched)
    ):
        # a follower of a new leader epoch may ask before this broker's roles caught
        # up with the cluster cache: they are brought up to date first
        await replicas.reconcile()
    while True:
        responses, total, errors, conversions = await _read_all(ctx, body, version, denied)
        if total >= body.min_bytes or errors or not watched or ctx.appends.closed:
            break
        remaining = deadline - trio.current_time()
        if remaining <= 0:
            break
        with ctx.appends.watching(watched) as appended, trio.move_on_after(remaining):
            await appended.wait()
    await _convert_all(ctx, conversions, version)
    if total and body.replica_id < 0:  # Kafka's bytes out count consumers, not followers
        _count_bytes_out(ctx, responses)
    return FetchResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=responses
    )
