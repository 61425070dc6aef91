"""Per-partition state of idempotent producers: epochs and recent sequences.

For each producer id the partition remembers its epoch and the last five
batches it appended (sequence range and offsets), as Kafka does. A batch that
repeats one of those five is a retry whose first attempt was written: the
broker answers with the original offsets and writes nothing. The partition's
log owns its table (as Kafka's ``UnifiedLog`` owns its ``ProducerStateManager``):
it rebuilds it from the batch headers when it loads, so the state survives
restarts, checks each idempotent batch against it on append and records it there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.records.record import NO_TIMESTAMP, TimestampType
from wirekafka.protocol.records.record_batch import NO_PRODUCER_ID, NO_SEQUENCE, BatchHeader

BATCHES_REMEMBERED = 5
MAX_SEQUENCE = 2**31 - 1
PRODUCER_ID_EXPIRATION_MS = 86_400_000  # Kafka's default producer.id.expiration.ms


class InvalidProducerBatch(Exception):
    """An idempotent producer's batch the log refuses: its epoch is older than the
    producer's (INVALID_PRODUCER_EPOCH) or its sequence does not follow on
    (OUT_OF_ORDER_SEQUENCE_NUMBER), Kafka's InvalidProducerEpochException and
    OutOfOrderSequenceException."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class AppendedBatch:
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    log_append_time_ms: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    last_timestamp_ms: int
    batches: deque[AppendedBatch] = field(default_factory=lambda: deque(maxlen=BATCHES_REMEMBERED))


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The batch was appended before; here is where it went."""

    batch: AppendedBatch


def _in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (
        next_sequence == 0 and last_sequence == MAX_SEQUENCE
    )


class ProducerStateTable:
    """The idempotent producers of one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def check(self, header: BatchHeader) -> Duplicate | ErrorCode | None:
        """None when the batch may be appended; a Duplicate or an error otherwise."""
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return None
        entry = self._producers.get(producer_id)
        if entry is None:  # a new producer, or one whose state has expired
            return None
        if header.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        first, last = header.base_sequence, header.last_sequence
        if header.producer_epoch > entry.epoch:
            return None if first in (0, NO_SEQUENCE) else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        for batch in entry.batches:
            if batch.first_sequence == first and batch.last_sequence == last:
                return Duplicate(batch)
        if entry.batches and not _in_sequence(entry.batches[-1].last_sequence, first):
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        return None

    def refusal(
        self, header: BatchHeader, error_code: ErrorCode, partition: str
    ) -> InvalidProducerBatch:
        """The error for a batch :meth:`check` answered ``error_code``, saying why as Kafka does."""
        entry = self._producers.get(header.producer_id)
        if error_code == ErrorCode.INVALID_PRODUCER_EPOCH:
            message = (
                f"epoch {header.producer_epoch} of producer {header.producer_id} in partition "
                f"{partition} is older than its last epoch {entry.epoch if entry else None}"
            )
        else:
            last = entry.batches[-1].last_sequence if entry and entry.batches else None
            message = (
                f"out of order sequence number for producer {header.producer_id} in partition "
                f"{partition}: {header.base_sequence} (incoming seq. number), {last} (current "
                "end sequence number)"
            )
        return InvalidProducerBatch(error_code, message)

    def record(self, header: BatchHeader, first_offset: int, log_append_time_ms: int) -> None:
        """Remember a batch just appended at ``first_offset``; its time is
        ``log_append_time_ms`` when the log set one, else its max timestamp."""
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return
        timestamp = (
            header.max_timestamp if log_append_time_ms == NO_TIMESTAMP else log_append_time_ms
        )
        entry = self._producers.get(producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self._producers[producer_id] = ProducerEntry(header.producer_epoch, timestamp)
        elif timestamp > entry.last_timestamp_ms:
            entry.last_timestamp_ms = timestamp
        if header.base_sequence == NO_SEQUENCE:
            return
        entry.batches.append(
            AppendedBatch(
                header.base_sequence,
                header.last_sequence,
                first_offset,
                first_offset + header.last_offset_delta,
                log_append_time_ms,
            )
        )

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        """Replay the headers of batches in the log, oldest first."""
        for header in headers:
            if header.producer_id != NO_PRODUCER_ID and not header.is_control:
                append_time = (
                    header.max_timestamp
                    if header.timestamp_type == TimestampType.LOG_APPEND_TIME
                    else NO_TIMESTAMP
                )
                self.record(header, header.base_offset, append_time)

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers silent for ``producer.id.expiration.ms``; returns how many."""
        stale = [
            pid
            for pid, entry in self._producers.items()
            if now_ms - entry.last_timestamp_ms > expiration_ms
        ]
        for pid in stale:
            del self._producers[pid]
        return len(stale)
