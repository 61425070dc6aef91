"""Producer ids for InitProducerId, and each partition's idempotent-producer state."""

from __future__ import annotations

import logging
from typing import Protocol

from wirekafka.storage.log import Clock, PartitionLog
from wirekafka.storage.producer_state import ProducerStateTable
from wirekafka.worker_threads import METADATA, run_blocking

log = logging.getLogger("wirekafka.producers")

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdSource(Protocol):
    def allocate_producer_ids(self, count: int) -> range: ...


class ProducerIds:
    """Hands out producer ids in blocks recorded on disk before use, so an id
    is never handed out twice, even across restarts (a restart skips the rest
    of the block). Ids are handed out on the event loop; a new block is
    recorded (on disk or in ZooKeeper) in a worker thread."""

    def __init__(self, metadata: ProducerIdSource) -> None:
        self._metadata = metadata
        self._block = range(0)
        self._next = 0

    async def next_id(self) -> int:
        while self._next >= self._block.stop:
            block = await run_blocking(
                METADATA, self._metadata.allocate_producer_ids, PRODUCER_ID_BLOCK_SIZE
            )
            if self._next >= self._block.stop:  # not refilled by another request meanwhile
                self._block, self._next = block, block.start
        producer_id = self._next
        self._next += 1
        return producer_id


class ProducerStates:
    """The state table of every partition, rebuilt from its log on first use."""

    def __init__(self, clock: Clock, expiration_ms: int) -> None:
        self._clock = clock
        self._expiration_ms = expiration_ms
        self._tables: dict[tuple[str, int], tuple[PartitionLog, ProducerStateTable]] = {}

    def table(self, partition_log: PartitionLog) -> ProducerStateTable:
        key = (partition_log.topic, partition_log.partition)
        known = self._tables.get(key)
        if known is not None and known[0] is partition_log:
            return known[1]
        table = ProducerStateTable()
        now = self._clock()
        table.rebuild(partition_log.batch_headers(now - self._expiration_ms))
        table.expire(now, self._expiration_ms)
        if len(table):
            log.info("%r: %d producers rebuilt from the log", partition_log, len(table))
        self._tables[key] = (partition_log, table)
        return table

    def expire(self) -> None:
        now = self._clock()
        for _, table in self._tables.values():
            table.expire(now, self._expiration_ms)

    def tracked_partitions(self) -> set[tuple[str, int]]:
        """The partitions whose producer-state table is in memory."""
        return set(self._tables)

    def forget_topic(self, topic: str) -> None:
        for key in [key for key in self._tables if key[0] == topic]:
            del self._tables[key]
