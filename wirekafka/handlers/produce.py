"""Produce: check record batches, assign offsets, append, acknowledge.

Batches stay bytes: headers are read, CRCs checked, the records looked over
(:mod:`wirekafka.protocol.records.validate`: they must parse, so that every
consumer can read them) and base offsets patched in place. Records are
decoded only when an old client sends a message set (magic 0/1), which is
converted to one record batch before it is stored. Checks and conversions
that take long go on in a worker thread (the ``RECORDS`` pool of
:mod:`wirekafka.worker_threads`): such work starts on the event loop and, once
it has taken :data:`INLINE_SECONDS`, goes on in a thread, so a decompression
bomb or a batch of a hundred thousand tiny records does not hold up every
client. The append itself runs on the event loop; one that would roll the
segment, a partition's first log, and flushes go to worker threads
(``LOG_DIRS``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import trio

from wirekafka.broker.context import BrokerContext, CloseConnection
from wirekafka.broker.replication import Led, ReplicaManager
from wirekafka.broker.topics import INTERNAL_TOPICS
from wirekafka.handlers.authorization import NOTHING_DENIED, denied_names
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from wirekafka.protocol.records.compression import (
    COMPRESSION_MASK,
    CompressionType,
    DecompressedTooLarge,
)
from wirekafka.protocol.records.convert import message_set_to_batch
from wirekafka.protocol.records.message_set import entry_codecs
from wirekafka.protocol.records.record_batch import (
    CONTROL_BIT,
    MAGIC,
    MAGIC_OFFSET,
    NO_PRODUCER_ID,
    TRANSACTIONAL_BIT,
    BatchHeader,
    batches_of,
    crc_matches,
)
from wirekafka.protocol.records.validate import BatchCheck, InvalidRecords, start_check
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.log import PartitionLog, RollDue, StorageError
from wirekafka.storage.producer_state import InvalidProducerBatch
from wirekafka.worker_threads import LOG_DIRS, RECORDS, blocking, run_blocking

log = logging.getLogger("wirekafka.produce")

FIRST_ZSTD_VERSION = 7
FIRST_BATCH_ONLY_VERSION = 3  # from v3 a partition's data is exactly one magic-2 batch
INLINE_SECONDS = 0.002  # record checks that take longer finish in a worker thread
# Message sets this small and uncompressed are converted on the event loop.
_INLINE_MESSAGE_SET_BYTES = 64 * 1024
_NO_TRANSACTIONS: tuple[ErrorCode, str | None] = (
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    "transactions are not supported by this broker",
)


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class _Appended:
    response: PartitionProduceResponse
    log: PartitionLog | None = None  # set when the log is due a flush
    led: Led | None = None  # a replicated partition led here: acks=all waits for its ISR
    end_offset: int = 0  # the offset after the appended batches


def _refuse(index: int, code: ErrorCode, message: str | None = None) -> _Appended:
    return _Appended(
        PartitionProduceResponse(
            index=index, error_code=code, base_offset=-1, error_message=message
        )
    )


def _read_batches(data: bytearray | memoryview) -> list[tuple[int, BatchHeader]]:
    try:
        return batches_of(data)
    except ProtocolError as exc:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, str(exc)) from exc


def _check_batches(
    data: bytearray | memoryview, version: int, max_message_bytes: int
) -> list[tuple[int, BatchHeader]]:
    batches = _read_batches(data)
    if len(batches) > 1 and version >= FIRST_BATCH_ONLY_VERSION:
        raise _Refused(
            ErrorCode.INVALID_RECORD,
            f"Produce v{version} takes one record batch per partition, not {len(batches)}",
        )
    for position, header in batches:
        if header.size_bytes > max_message_bytes:
            raise _Refused(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"batch of {header.size_bytes} bytes exceeds max.message.bytes {max_message_bytes}",
            )
        if not crc_matches(data, position, header):
            raise _Refused(
                ErrorCode.CORRUPT_MESSAGE, f"CRC mismatch in the batch at byte {position}"
            )
        attributes = header.attributes
        codec = attributes & COMPRESSION_MASK
        if codec > CompressionType.ZSTD:
            raise _Refused(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}"
            )
        if codec == CompressionType.ZSTD and version < FIRST_ZSTD_VERSION:
            raise _Refused(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"zstd needs Produce v7+, not v{version}"
            )
        record_count = header.record_count
        if record_count == 0 or header.last_offset_delta != record_count - 1:
            raise _Refused(
                ErrorCode.INVALID_RECORD,
                f"batch of {record_count} records has last offset delta {header.last_offset_delta}",
            )
        if attributes & (TRANSACTIONAL_BIT | CONTROL_BIT):
            raise _Refused(
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "transactions are not supported by this broker",
            )
        if header.producer_id != NO_PRODUCER_ID and header.base_sequence < 0:
            raise _Refused(
                ErrorCode.INVALID_RECORD,
                f"producer {header.producer_id} sent base sequence {header.base_sequence}",
            )
    if len(batches) > 1 and any(h.producer_id != NO_PRODUCER_ID for _, h in batches):
        raise _Refused(
            ErrorCode.CORRUPT_MESSAGE, "an idempotent produce carries one batch per partition"
        )
    return batches


def _check_message_set(data: memoryview, max_message_bytes: int) -> bool:
    """Refuse what a message set (magic 0/1) must not hold before decoding it;
    True when it is small and uncompressed, to be converted on the event loop."""
    if len(data) > max_message_bytes:
        raise _Refused(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"message set of {len(data)} bytes exceeds max.message.bytes {max_message_bytes}",
        )
    codecs = set(entry_codecs(data))
    if CompressionType.ZSTD in codecs:
        raise _Refused(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs record batches (magic 2)"
        )
    return codecs <= {CompressionType.NONE} and len(data) <= _INLINE_MESSAGE_SET_BYTES


def _upconvert(data: memoryview, *, keys_required: bool, max_inflated_bytes: int) -> bytearray:
    """A message set (magic 0/1) as one record batch (offsets assigned on append)."""
    try:
        converted = message_set_to_batch(
            data,
            base_offset=0,
            keys_required=keys_required,
            max_decompressed_bytes=max_inflated_bytes,
        )
    except InvalidRecords as exc:
        raise _Refused(ErrorCode(exc.error_code), str(exc)) from exc
    except DecompressedTooLarge as exc:
        raise _Refused(ErrorCode.MESSAGE_TOO_LARGE, str(exc)) from exc
    except ProtocolError as exc:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, str(exc)) from exc
    if not converted:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, "no messages")
    return bytearray(converted)


def _check_records(
    payload: bytearray | memoryview,
    batches: list[tuple[int, BatchHeader]],
    *,
    keys_required: bool,
    max_inflated_bytes: int,
) -> list[BatchCheck]:
    """Look over every batch's records; the checks that take long are returned
    unfinished, to finish in a worker thread."""
    unfinished = []
    deadline = time.perf_counter() + INLINE_SECONDS
    for position, header in batches:
        try:
            check = start_check(
                memoryview(payload)[position : position + header.size_bytes],
                header,
                keys_required=keys_required,
                max_inflated_bytes=max_inflated_bytes,
                deadline=deadline,
            )
        except InvalidRecords as exc:
            raise _Refused(ErrorCode(exc.error_code), str(exc)) from exc
        if check is not None:
            unfinished.append(check)
    return unfinished


async def _finish_checks(unfinished: list[BatchCheck]) -> None:
    for check in unfinished:
        try:
            await run_blocking(RECORDS, check.run)
        except InvalidRecords as exc:
            raise _Refused(ErrorCode(exc.error_code), str(exc)) from exc


async def _append_partition(
    ctx: BrokerContext, version: int, acks: int, topic: str, data: PartitionProduceData
) -> _Appended:
    index = data.index
    if topic in INTERNAL_TOPICS:  # written by the broker alone, as in Kafka
        return _refuse(
            index,
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"cannot append to internal topic {topic}",
        )
    found = ctx.topics.local_log(topic, index)
    if found is None:  # led here, its log not made yet: made in a worker thread
        found = await ctx.topics.partition_log(topic, index)
    if isinstance(found, ErrorCode):
        return _refuse(index, found)
    partition_log = found
    led = None
    leader_epoch = None
    replicas = ctx.replicas
    if replicas is not None:  # a ZooKeeper cluster: replicated
        led = replicas.leading(topic, index)
        if led is None:  # the cluster says it is led here: replication may not know yet
            led = await replicas.leading_now(topic, index)
            if led is None:
                return _refuse(index, ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership is moving")
        if acks == -1 and not replicas.enough_replicas(led):
            return _refuse(
                index,
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"the ISR {list(led.isr)} is smaller than min.insync.replicas="
                f"{partition_log.config.min_insync_replicas}",
            )
        leader_epoch = led.leader_epoch
    records = data.records
    if records is None or len(records) <= MAGIC_OFFSET:  # type: ignore[arg-type]
        return _refuse(index, ErrorCode.CORRUPT_MESSAGE, "no records")
    view = memoryview(records)  # type: ignore[arg-type]
    keys_required = partition_log.config.compact
    max_message_bytes = partition_log.config.max_message_bytes  # the topic's, or the broker's
    max_inflated_bytes = ctx.config.max_inflated_bytes
    try:
        magic = view[MAGIC_OFFSET]
        if magic == MAGIC:
            payload: bytearray | memoryview = view
            batches = _check_batches(payload, version, max_message_bytes)
            unfinished = _check_records(
                payload, batches, keys_required=keys_required, max_inflated_bytes=max_inflated_bytes
            )
            waited = bool(unfinished)
            if waited:
                await _finish_checks(unfinished)
        elif magic in (0, 1) and version < FIRST_BATCH_ONLY_VERSION:
            inline = _check_message_set(view, max_message_bytes)

            def upconvert() -> bytearray:
                return _upconvert(
                    view, keys_required=keys_required, max_inflated_bytes=max_inflated_bytes
                )

            waited = not inline
            payload = await run_blocking(RECORDS, upconvert) if waited else upconvert()
            batches = _check_batches(payload, version, max_message_bytes)
        elif magic in (0, 1):
            raise _Refused(
                ErrorCode.INVALID_RECORD,
                f"Produce v{version} takes record batches (magic 2) only, not magic {magic}",
            )
        else:
            raise _Refused(ErrorCode.CORRUPT_MESSAGE, f"unknown record format magic {magic}")
        while True:  # again after a roll, which a worker thread makes
            if waited and ctx.topics.local_log(topic, index) is not partition_log:
                return _refuse(
                    index, ErrorCode.NOT_LEADER_OR_FOLLOWER, "the partition moved meanwhile"
                )
            try:
                # An idempotent producer's batch is checked against its state by the log.
                info = partition_log.append(
                    payload, batches, flush_when_due=False, roll=False, leader_epoch=leader_epoch
                )
                break
            except RollDue:
                await run_blocking(LOG_DIRS, partition_log.roll_when_due)
                waited = True
    except _Refused as refused:
        return _refuse(index, refused.code, refused.message)
    except InvalidProducerBatch as exc:
        return _refuse(index, exc.error_code, str(exc))
    except StorageError as exc:
        log.error("%s", exc)
        return _refuse(index, ErrorCode.KAFKA_STORAGE_ERROR, str(exc))
    if not info.duplicate:  # a retry wrote nothing: long polls have nothing new
        ctx.appends.appended(topic, index)
        # Kafka's bytes in: the request's record bytes (before any conversion)
        ctx.metrics.produced(topic, info.record_count, len(view))
        if replicas is not None and led is not None:
            replicas.appended(led)
    response = PartitionProduceResponse(
        index=index,
        error_code=ErrorCode.NONE,
        base_offset=info.first_offset,
        log_append_time_ms=info.log_append_time_ms,
        log_start_offset=info.log_start_offset,
    )
    return _Appended(response, partition_log if info.flush_due else None, led, info.last_offset + 1)


async def _wait_replicated(
    replicas: ReplicaManager, appended: list[_Appended], timeout_ms: int
) -> None:
    """acks=all: each appended partition's answer waits until its ISR has the batches."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    for item in appended:
        if item.led is None or item.response.error_code != ErrorCode.NONE:
            continue
        code = await replicas.wait_replicated(
            item.led, item.end_offset, deadline - trio.current_time()
        )
        if code != ErrorCode.NONE:
            item.response.error_code = code


async def _flush(appended: list[_Appended], due: dict[int, PartitionLog]) -> None:
    """fsync the logs ``due`` a flush (by id), off the event loop; a failure becomes
    the partition's error, since its records may not be on disk."""

    @blocking
    def flush_all() -> dict[int, StorageError]:
        failures = {}
        for key, partition_log in due.items():
            try:
                partition_log.flush()
            except StorageError as exc:
                failures[key] = exc
        return failures

    failures = await run_blocking(LOG_DIRS, flush_all)
    for item in appended:
        failure = failures.get(id(item.log))
        if failure is not None:
            log.error("%s", failure)
            item.response.error_code = ErrorCode.KAFKA_STORAGE_ERROR
            item.response.error_message = str(failure)


async def handle_produce(ctx: BrokerContext, request: Request) -> ProduceResponse | None:
    body: ProduceRequest = request.body
    version = request.version
    transactional = body.transactional_id is not None
    # As Kafka: Write on each topic is asked once; a denied topic's partitions are
    # refused before anything else is looked at, whether the topic exists or not.
    denied = (
        NOTHING_DENIED
        if ctx.authorizer is None  # no generator, no call: the common case costs nothing
        else denied_names(
            ctx, request, AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in body.topic_data)
        )
    )
    refusal: tuple[ErrorCode, str | None] | None = None
    if body.acks not in (-1, 0, 1):
        refusal = (ErrorCode.INVALID_REQUIRED_ACKS, f"acks={body.acks}: expected -1, 0 or 1")
    topics: list[TopicProduceResponse] = []
    appended: list[_Appended] = []
    for topic_data in body.topic_data:
        name = topic_data.name
        topic_refusal = refusal
        if transactional:
            topic_refusal = _NO_TRANSACTIONS
        elif denied and name in denied:
            topic_refusal = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        responses = []
        for partition_data in topic_data.partition_data:
            result = (
                _refuse(partition_data.index, *topic_refusal)
                if topic_refusal
                else await _append_partition(ctx, version, body.acks, name, partition_data)
            )
            appended.append(result)
            responses.append(result.response)
        topics.append(TopicProduceResponse(name=name, partition_responses=responses))
    due = {id(item.log): item.log for item in appended if item.log is not None}
    if due:  # no coroutine and no thread for the appends that need no flush
        await _flush(appended, due)
    if body.acks == -1 and ctx.replicas is not None:
        await _wait_replicated(ctx.replicas, appended, body.timeout_ms)
    if body.acks == 0:
        errors = [a.response for a in appended if a.response.error_code != ErrorCode.NONE]
        if errors:
            first = errors[0]
            raise CloseConnection(
                f"acks=0 produce failed: {ErrorCode(first.error_code).name} {first.error_message or ''}"
            )
        return None
    return ProduceResponse(responses=topics)
