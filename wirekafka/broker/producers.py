"""Producer ids for InitProducerId, handed out in blocks recorded before use.

Each partition's idempotent-producer state belongs to its log
(:mod:`wirekafka.storage.producer_state`).
"""

from __future__ import annotations

from typing import Protocol

from wirekafka.worker_threads import METADATA, run_blocking

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
