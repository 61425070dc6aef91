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
(``LOG_DIRS``). Produce requests a client pipelined are handled together
(:func:`handle_produces`): the batches of one partition from all of them go
to the log with one write, and each request is answered as if alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import trio

from wirekafka.broker.context import BrokerContext, CloseConnection
from wirekafka.broker.replication import Led, ReplicaManager
from wirekafka.broker.topics import INTERNAL_TOPICS
from wirekafka.handlers.authorization import NOTHING_DENIED, denied_names
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.messages.produce import (
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
from wirekafka.protocol.records.record import LOG_OVERHEAD
from wirekafka.protocol.records.record_batch import (
    CONTROL_BIT,
    MAGIC,
    MAGIC_OFFSET,
    NO_PRODUCER_ID,
    TRANSACTIONAL_BIT,
    BatchHeader,
    batches_of,
    compute_crc,
)
from wirekafka.protocol.records.validate import BatchCheck, InvalidRecords, start_check
from wirekafka.protocol.rpc import Request
from wirekafka.protocol.schema import Records
from wirekafka.protocol.simple_produce import SimpleProduce
from wirekafka.security.acl import AclOperation, ResourceType
from wirekafka.storage.log import AppendInfo, PartitionLog, StorageError
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


def _refuse(index: int, code: ErrorCode, message: str | None = None) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=index, error_code=code, base_offset=-1, error_message=message
    )


def _check_batches(
    data: bytearray | memoryview, version: int, max_message_bytes: int
) -> list[tuple[int, BatchHeader]]:
    try:
        batches = batches_of(data)
    except ProtocolError as exc:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, str(exc)) from exc
    if len(batches) > 1 and version >= FIRST_BATCH_ONLY_VERSION:
        raise _Refused(
            ErrorCode.INVALID_RECORD,
            f"Produce v{version} takes one record batch per partition, not {len(batches)}",
        )
    for position, header in batches:
        # This runs for every batch produced: fields read once, no helpers.
        size_bytes = LOG_OVERHEAD + header.batch_length
        if size_bytes > max_message_bytes:
            raise _Refused(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"batch of {size_bytes} bytes exceeds max.message.bytes {max_message_bytes}",
            )
        if compute_crc(data, position, size_bytes) != header.crc:
            raise _Refused(
                ErrorCode.CORRUPT_MESSAGE, f"CRC mismatch in the batch at byte {position}"
            )
        attributes = header.attributes
        if attributes & _REFUSED_ATTRIBUTES:  # rarely: say which
            _check_attributes(attributes, version)
        record_count = header.record_count
        if record_count == 0 or header.last_offset_delta != record_count - 1:
            raise _Refused(
                ErrorCode.INVALID_RECORD,
                f"batch of {record_count} records has last offset delta {header.last_offset_delta}",
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


# Attribute bits that may refuse a batch: a codec from zstd (4) up, transactional, control.
_REFUSED_ATTRIBUTES = 0x04 | TRANSACTIONAL_BIT | CONTROL_BIT


def _check_attributes(attributes: int, version: int) -> None:
    """Refuse a batch whose codec is unknown or needs a later version, or that is part
    of a transaction."""
    codec = attributes & COMPRESSION_MASK
    if codec > CompressionType.ZSTD:
        raise _Refused(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")
    if codec == CompressionType.ZSTD and version < FIRST_ZSTD_VERSION:
        raise _Refused(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"zstd needs Produce v7+, not v{version}"
        )
    if attributes & (TRANSACTIONAL_BIT | CONTROL_BIT):
        raise _Refused(
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "transactions are not supported by this broker",
        )


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
    view = memoryview(payload)
    single = len(batches) == 1  # as from Produce v3 on: the batch is all of the payload
    for position, header in batches:
        try:
            check = start_check(
                view if single else view[position : position + LOG_OVERHEAD + header.batch_length],
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


@dataclass(slots=True)
class _Pending:
    """A partition's batches, checked, to be appended with the others of its log; then
    what the append gave."""

    topic: str
    index: int
    log: PartitionLog
    payload: bytearray | memoryview
    batches: list[tuple[int, BatchHeader]]
    led: Led | None  # a replicated partition led here: acks=all waits for its ISR
    leader_epoch: int | None
    request_bytes: int  # the request's record bytes (before any conversion), Kafka's bytes in
    response: PartitionProduceResponse | None = None  # once appended, or refused
    flush: bool = False  # the log is due a flush
    end_offset: int = 0  # the offset after the appended batches
    records: int = 0  # records written (none for a refusal or a retry already in the log)


class _Group:
    """Produce requests handled together (:func:`handle_produces`)."""

    __slots__ = ("logs", "waited")

    def __init__(self) -> None:
        # Whether preparing them let other tasks run: then a partition prepared
        # before may have moved by the time it is appended.
        self.waited = False
        # (topic, partition) -> its log and leadership, as found for the first request
        self.logs: dict[tuple[str, int], tuple[PartitionLog, Led | None]] = {}


async def _partition_log(
    ctx: BrokerContext, topic: str, index: int, group: _Group
) -> tuple[PartitionLog, Led | None] | ErrorCode | str:
    """The partition's log, and its leadership in a ZooKeeper cluster; else the error
    code, or the reason it is not led here (NOT_LEADER_OR_FOLLOWER)."""
    found = ctx.topics.local_log(topic, index)
    if found is None:  # led here, its log not made yet: made in a worker thread
        group.waited = True
        found = await ctx.topics.partition_log(topic, index)
    if isinstance(found, ErrorCode):
        return found
    replicas = ctx.replicas
    if replicas is None:
        return found, None
    led = replicas.leading(topic, index)
    if led is None:  # the cluster says it is led here: replication may not know yet
        group.waited = True
        led = await replicas.leading_now(topic, index)
        if led is None:
            return "leadership is moving"
    return found, led


async def _prepare_partition(
    ctx: BrokerContext,
    version: int,
    acks: int,
    topic: str,
    index: int,
    records: Records | None,
    group: _Group,
) -> PartitionProduceResponse | _Pending:
    """Find the partition's log and check its batches: a refusal, or what to append."""
    if topic in INTERNAL_TOPICS:  # written by the broker alone, as in Kafka
        return _refuse(
            index,
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"cannot append to internal topic {topic}",
        )
    key = (topic, index)
    cached = group.logs.get(key)  # the requests of a group mostly write one partition
    if cached is None:
        found = await _partition_log(ctx, topic, index, group)
        if isinstance(found, ErrorCode):
            return _refuse(index, found)
        if isinstance(found, str):
            return _refuse(index, ErrorCode.NOT_LEADER_OR_FOLLOWER, found)
        cached = group.logs[key] = found
    partition_log, led = cached
    leader_epoch = None
    replicas = ctx.replicas
    if led is not None and replicas is not None:  # a ZooKeeper cluster: replicated
        if acks == -1 and not replicas.enough_replicas(led):
            return _refuse(
                index,
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"the ISR {list(led.isr)} is smaller than min.insync.replicas="
                f"{partition_log.config.min_insync_replicas}",
            )
        leader_epoch = led.leader_epoch
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
            if unfinished:
                group.waited = True
                await _finish_checks(unfinished)
        elif magic in (0, 1) and version < FIRST_BATCH_ONLY_VERSION:
            inline = _check_message_set(view, max_message_bytes)

            def upconvert() -> bytearray:
                return _upconvert(
                    view, keys_required=keys_required, max_inflated_bytes=max_inflated_bytes
                )

            if inline:
                payload = upconvert()
            else:
                group.waited = True
                payload = await run_blocking(RECORDS, upconvert)
            batches = _check_batches(payload, version, max_message_bytes)
        elif magic in (0, 1):
            raise _Refused(
                ErrorCode.INVALID_RECORD,
                f"Produce v{version} takes record batches (magic 2) only, not magic {magic}",
            )
        else:
            raise _Refused(ErrorCode.CORRUPT_MESSAGE, f"unknown record format magic {magic}")
    except _Refused as refused:
        return _refuse(index, refused.code, refused.message)
    return _Pending(topic, index, partition_log, payload, batches, led, leader_epoch, len(view))


def _moved(pending: _Pending) -> PartitionProduceResponse:
    return _refuse(pending.index, ErrorCode.NOT_LEADER_OR_FOLLOWER, "the partition moved meanwhile")


async def _append_all(ctx: BrokerContext, pendings: list[_Pending], waited: bool) -> None:
    """Append every pending partition's batches, those of one log with one call (one
    write for the pipelined requests of a producer), each in the order they came;
    each gets its ``response``. ``waited``: other tasks ran since they were prepared,
    so a partition that left this broker meanwhile is refused."""
    by_log: dict[tuple[int, int | None], list[_Pending]] = {}
    for pending in pendings:
        if waited and ctx.topics.local_log(pending.topic, pending.index) is not pending.log:
            pending.response = _moved(pending)
            continue
        key = (id(pending.log), pending.leader_epoch)
        same_log = by_log.get(key)
        if same_log is None:
            by_log[key] = [pending]
        else:
            same_log.append(pending)
    for waiting in by_log.values():
        first = waiting[0]
        partition_log = first.log
        while True:  # again after a roll, which a worker thread makes
            results = partition_log.append_many(
                [(pending.payload, pending.batches) for pending in waiting],
                leader_epoch=first.leader_epoch,
            )
            for pending, result in zip(waiting, results, strict=False):  # may stop early
                _take_result(pending, result)
            _appended(ctx, waiting[: len(results)])
            waiting = waiting[len(results) :]
            if not waiting:
                break
            await run_blocking(LOG_DIRS, partition_log.roll_when_due)
            if ctx.topics.local_log(first.topic, first.index) is not partition_log:
                for pending in waiting:
                    pending.response = _moved(pending)
                break


def _take_result(
    pending: _Pending, result: AppendInfo | InvalidProducerBatch | StorageError
) -> None:
    if type(result) is AppendInfo:
        pending.response = PartitionProduceResponse(
            index=pending.index,
            error_code=ErrorCode.NONE,
            base_offset=result.first_offset,
            log_append_time_ms=result.log_append_time_ms,
            log_start_offset=result.log_start_offset,
        )
        pending.flush = result.flush_due
        pending.end_offset = result.last_offset + 1
        if not result.duplicate:
            pending.records = result.record_count
    elif isinstance(result, InvalidProducerBatch):
        pending.response = _refuse(pending.index, result.error_code, str(result))
    else:
        log.error("%s", result)
        pending.response = _refuse(pending.index, ErrorCode.KAFKA_STORAGE_ERROR, str(result))


def _appended(ctx: BrokerContext, pendings: list[_Pending]) -> None:
    """What follows appends to one log: its waiting fetches woken, the metrics counted,
    the high watermark moved (a retry that wrote nothing changes none of these)."""
    records = request_bytes = 0
    for pending in pendings:
        if pending.records:
            records += pending.records
            request_bytes += pending.request_bytes
    if records:
        first = pendings[0]
        ctx.metrics.produced(first.topic, records, request_bytes)
        ctx.appends.appended(first.topic, first.index)
        if ctx.replicas is not None and first.led is not None:
            ctx.replicas.appended(first.led)


async def _wait_replicated(
    replicas: ReplicaManager, pendings: list[_Pending], timeout_ms: int
) -> None:
    """acks=all: each appended partition's answer waits until its ISR has the batches."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    for pending in pendings:
        response = pending.response
        if pending.led is None or response is None or response.error_code != ErrorCode.NONE:
            continue
        code = await replicas.wait_replicated(
            pending.led, pending.end_offset, deadline - trio.current_time()
        )
        if code != ErrorCode.NONE:
            response.error_code = code


async def _flush(pendings: list[_Pending]) -> None:
    """fsync the logs of the appends due a flush, off the event loop; a failure becomes
    each partition's error, since its records may not be on disk."""
    due = {id(pending.log): pending.log for pending in pendings if pending.flush}

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
    for pending in pendings:
        failure = failures.get(id(pending.log)) if pending.flush else None
        if failure is not None and pending.response is not None:
            log.error("%s", failure)
            pending.response.error_code = ErrorCode.KAFKA_STORAGE_ERROR
            pending.response.error_message = str(failure)


async def handle_produce(ctx: BrokerContext, request: Request) -> ProduceResponse | None:
    [answer] = await handle_produces(ctx, [request])
    if isinstance(answer, CloseConnection):
        raise answer
    assert not isinstance(answer, PartitionProduceResponse), "a decoded request's whole answer"
    return answer


_Entry = PartitionProduceResponse | _Pending  # a partition refused, or its batches to append


async def handle_produces(
    ctx: BrokerContext, requests: Sequence[Request | SimpleProduce]
) -> list[ProduceResponse | PartitionProduceResponse | CloseConnection | None]:
    """Answer produce requests a client pipelined, in order, as if one at a time: each
    one's answer, None for acks=0, or, for an acks=0 request that failed, the
    CloseConnection that ends the connection (the requests after it are not read).

    A request is decoded (a Request), or, with one topic and one partition and
    no authorizer to ask, read as a SimpleProduce: it is answered as its
    decoded form would be, with its partition's answer alone
    (:func:`~wirekafka.protocol.produce_response.answer_parts` writes the
    response around it). Their batches are checked first, request by request,
    then appended, those of one partition together
    (:meth:`PartitionLog.append_many`), then the logs due a flush are flushed
    and acks=all waits for the replicas."""
    group = _Group()
    pendings: list[_Pending] = []
    # acks, timeout, and the request's topics, or a SimpleProduce's one partition
    prepared: list[tuple[int, int, list[tuple[str, list[_Entry]]] | _Entry]] = []
    for request in requests:
        if type(request) is SimpleProduce:
            assert ctx.authorizer is None, "a request to authorize is decoded"
            acks, timeout_ms, topic = request.acks, request.timeout_ms, request.topic
            refusal = _acks_refusal(acks)
            if refusal:
                entry: _Entry = _refuse(request.partition, *refusal)
            else:
                entry = await _prepare_partition(
                    ctx, request.api_version, acks, topic, request.partition, request.records, group
                )
            prepared.append((acks, timeout_ms, entry))
            if type(entry) is _Pending:
                pendings.append(entry)
            elif acks == 0:  # the connection closes once it is answered
                break
            continue
        body: ProduceRequest = request.body  # type: ignore[union-attr]
        acks, timeout_ms = body.acks, body.timeout_ms
        topics = await _prepare_request(ctx, request, group)  # type: ignore[arg-type]
        prepared.append((acks, timeout_ms, topics))
        refused = False
        for _, entries in topics:
            for entry in entries:
                if type(entry) is _Pending:
                    pendings.append(entry)
                else:
                    refused = True
        if refused and acks == 0:  # the connection closes once it is answered
            break
    if pendings:
        await _append_all(ctx, pendings, group.waited)
        if any(pending.flush for pending in pendings):
            await _flush(pendings)
    answers: list[ProduceResponse | PartitionProduceResponse | CloseConnection | None] = []
    for acks, timeout_ms, asked in prepared:
        if acks == -1 and ctx.replicas is not None:
            await _wait_replicated(
                ctx.replicas,
                [entry for entry in _entries(asked) if type(entry) is _Pending],
                timeout_ms,
            )
        if acks == 0:
            failed = next(
                (response for response in map(_response, _entries(asked)) if response.error_code),
                None,
            )
            if failed is not None:
                answers.append(
                    CloseConnection(
                        f"acks=0 produce failed: {ErrorCode(failed.error_code).name} "
                        f"{failed.error_message or ''}"
                    )
                )
                break
            answers.append(None)
        elif not isinstance(asked, list):
            answers.append(_response(asked))
        else:
            answers.append(
                ProduceResponse(
                    responses=[
                        TopicProduceResponse(
                            name=name, partition_responses=[_response(entry) for entry in listed]
                        )
                        for name, listed in asked
                    ]
                )
            )
    return answers


def _acks_refusal(acks: int) -> tuple[ErrorCode, str | None] | None:
    if acks in (-1, 0, 1):
        return None
    return ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks}: expected -1, 0 or 1"


def _entries(asked: list[tuple[str, list[_Entry]]] | _Entry) -> list[_Entry]:
    """The partitions of a request as prepared: its topics', or a SimpleProduce's one."""
    if isinstance(asked, list):
        return [entry for _, listed in asked for entry in listed]
    return [asked]


def _response(entry: _Entry) -> PartitionProduceResponse:
    if type(entry) is _Pending:
        assert entry.response is not None, "every pending partition is appended or refused"
        return entry.response
    return entry  # type: ignore[return-value]


async def _prepare_request(
    ctx: BrokerContext, request: Request, group: _Group
) -> list[tuple[str, list[_Entry]]]:
    """Each topic of a produce request, with each partition's refusal or batches to append."""
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
    refusal = _acks_refusal(body.acks)
    topics: list[tuple[str, list[_Entry]]] = []
    for topic_data in body.topic_data:
        name = topic_data.name
        topic_refusal = refusal
        if transactional:
            topic_refusal = _NO_TRANSACTIONS
        elif denied and name in denied:
            topic_refusal = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        entries: list[_Entry] = []
        for partition_data in topic_data.partition_data:
            index = partition_data.index
            if topic_refusal:
                entries.append(_refuse(index, *topic_refusal))
                continue
            entries.append(
                await _prepare_partition(
                    ctx, version, body.acks, name, index, partition_data.records, group
                )
            )
        topics.append((name, entries))
    return topics
