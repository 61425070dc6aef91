"""aiokafka: its adapter and its group member.

Each call runs its own event loop (``asyncio.run``). Readers assign partitions
and have no group (``group_id=None``); the producer is not idempotent unless
asked (``enable_idempotence``), with acks=all.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from interop_tests.clients.adapter import (
    AtTime,
    Capability,
    ClientAdapter,
    Counts,
    Edge,
    MemberConfig,
    Offset,
    Start,
    TopicAlreadyExists,
)
from interop_tests.group_driver import (
    POLL_S,
    MemberEvents,
    Owned,
    emit,
    key_text,
    next_command,
    start_python_member,
)
from interop_tests.support import Deadline, Got, Sample, got_from_record

TIMEOUT_S = 60.0
TOPIC_ALREADY_EXISTS = 36


async def _produce(
    bootstrap: str, topic: str, samples: Sequence[Sample], compression: str | None, **config
) -> list:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=compression,
        linger_ms=5,
        request_timeout_ms=30_000,
        **config,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                key=s.key,
                value=s.value,
                headers=list(s.headers),
                partition=s.partition,
                timestamp_ms=s.timestamp,
            )
            for s in samples
        ]
        await producer.flush()
        return list(await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S))
    finally:
        await producer.stop()


@asynccontextmanager
async def _consumer(bootstrap: str, **config) -> AsyncIterator[AIOKafkaConsumer]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **config,
    )
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()


@asynccontextmanager
async def _admin(bootstrap: str) -> AsyncIterator[AIOKafkaAdminClient]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


async def _poll_until(
    consumer: AIOKafkaConsumer, done: Callable[[list[Got]], Awaitable[bool]], what: str
) -> list[Got]:
    got: list[Got] = []
    deadline = Deadline(TIMEOUT_S)
    while not await done(got):
        deadline.check(f"{what} (read {len(got)} so far)")
        batches = await consumer.getmany(timeout_ms=500)
        for records in batches.values():
            got.extend(got_from_record(r) for r in records)
    return got


async def _seek(consumer: AIOKafkaConsumer, tp: TopicPartition, start: Start) -> None:
    if start == Edge.EARLIEST:
        await consumer.seek_to_beginning(tp)
    elif start == Edge.LATEST:
        await consumer.seek_to_end(tp)
    elif isinstance(start, Offset):
        consumer.seek(tp, start.offset)
    elif isinstance(start, AtTime):
        found = (await consumer.offsets_for_times({tp: start.timestamp_ms}))[tp]
        if found is None:
            await consumer.seek_to_end(tp)
        else:
            consumer.seek(tp, found.offset)


async def _read(
    bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start]
) -> list[Got]:
    async with _consumer(bootstrap) as consumer:
        partitions = [TopicPartition(topic, p) for p in sorted(counts)]
        consumer.assign(partitions)
        for tp in partitions:
            await _seek(consumer, tp, starts.get(tp.partition, Edge.EARLIEST))
        ends = await consumer.end_offsets(partitions) if None in counts.values() else {}
        read_of = dict.fromkeys(counts, 0)

        async def done(got: list[Got]) -> bool:
            for g in got[sum(read_of.values()) :]:
                read_of[g.partition] += 1
            for tp in partitions:
                want = counts[tp.partition]
                if want is None and await consumer.position(tp) < ends[tp]:
                    return False
                if want is not None and read_of[tp.partition] < want:
                    return False
            return True

        return await _poll_until(consumer, done, f"{dict(counts)} records of {topic}")


class AioKafka(ClientAdapter):
    name = "aiokafka"
    capabilities = frozenset(Capability) - {
        Capability.COOPERATIVE,
        Capability.STATIC_MEMBERSHIP,
        Capability.KEEPS_GENERATION_THROUGH_RESTART,
    }
    cross_codec = "none"
    missing_topic_error = r"UnknownTopicOrPartitionError"
    describe_creates_topics = True  # its admin client asks Metadata v1
    eager_assignment = "roundrobin"

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[tuple[int, int]]:
        config: dict[str, Any] = {"acks": acks if acks == "all" else int(acks)}
        if idempotent is not None:
            config["enable_idempotence"] = idempotent
        compression = None if codec == "none" else codec
        metadata = asyncio.run(_produce(bootstrap, topic, samples, compression, **config))
        # With acks=0 aiokafka has no metadata to give.
        return [
            (s.partition, -1) if m is None else (m.partition, m.offset)
            for s, m in zip(samples, metadata, strict=True)
        ]

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        return asyncio.run(_read(bootstrap, topic, counts, starts or {}))

    def topics(self, bootstrap: str) -> set[str]:
        async def run() -> set[str]:
            async with _admin(bootstrap) as admin:
                return set(await admin.list_topics())

        return asyncio.run(run())

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        async def run() -> dict:
            async with _admin(bootstrap) as admin:
                (description,) = await admin.describe_topics([topic])
                return description

        description = asyncio.run(run())
        if description["error_code"] == 3:  # UNKNOWN_TOPIC_OR_PARTITION
            return None
        assert description["error_code"] == 0, description
        return {p["partition"]: p["leader"] for p in description["partitions"]}

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        async def run() -> str:
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=3000)
            await producer.start()
            try:
                await producer.send_and_wait(topic, b"value")
            except KafkaError as exc:
                return f"{type(exc).__name__}: {exc}"
            finally:
                await producer.stop()
            raise AssertionError(f"a record produced to {topic} was acknowledged")

        return asyncio.run(run())

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        async def run() -> list:
            async with _admin(bootstrap) as admin:
                response = await admin.create_topics([NewTopic(topic, partitions, 1)])
                return [(t[0], t[1]) for t in response.topic_errors]

        ((name, code),) = asyncio.run(run())
        assert name == topic
        if code == TOPIC_ALREADY_EXISTS:
            raise TopicAlreadyExists(topic)
        assert code == 0, f"CreateTopics of {topic}: error {code}"

    def watermarks(
        self, bootstrap: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, tuple[int, int]]:
        async def run() -> dict[int, tuple[int, int]]:
            tps = [TopicPartition(topic, p) for p in partitions]
            async with _consumer(bootstrap) as consumer:
                first = await consumer.beginning_offsets(tps)
                end = await consumer.end_offsets(tps)
            return {tp.partition: (first[tp], end[tp]) for tp in tps}

        return asyncio.run(run())

    def offsets_for_times(
        self, bootstrap: str, topic: str, times: Mapping[int, int]
    ) -> dict[int, tuple[int, int | None] | None]:
        async def run() -> dict:
            async with _consumer(bootstrap) as consumer:
                return await consumer.offsets_for_times(
                    {TopicPartition(topic, p): t for p, t in times.items()}
                )

        return {
            tp.partition: None if ot is None else (ot.offset, ot.timestamp)
            for tp, ot in asyncio.run(run()).items()
        }

    def committed(
        self, bootstrap: str, group: str, topic: str, partitions: Sequence[int]
    ) -> dict[int, int | None]:
        async def run() -> dict[int, int | None]:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
            )
            await consumer.start()
            try:
                return {p: await consumer.committed(TopicPartition(topic, p)) for p in partitions}
            finally:
                await consumer.stop()

        return asyncio.run(run())

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> MemberEvents:
        return start_python_member(
            name, config.driver_config(name, self), __name__, log_dir=log_dir, client=self.name
        )


ADAPTER = AioKafka()


# -- the group member (child side of interop_tests/group_driver.py)


def run_member(config: dict, commands: queue.Queue) -> None:
    from aiokafka import ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    topic = config["topic"]
    owned = Owned(config)
    # What this member returned and has not committed yet: committed on revoke, as
    # aiokafka rebalances in the background, between two getmany() calls.
    processed: dict[int, int] = {}

    async def main() -> None:
        assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
        options: dict[str, Any] = {
            "bootstrap_servers": config["bootstrap"],
            "group_id": config["group"],
            "client_id": config["name"],
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "session_timeout_ms": config["session_timeout_ms"],
            "heartbeat_interval_ms": config["heartbeat_interval_ms"],
            "max_poll_interval_ms": config["max_poll_interval_ms"],
            "partition_assignment_strategy": (assignors[config["assignment"]],),
        }
        if config.get("group_instance_id"):
            options["group_instance_id"] = config["group_instance_id"]
        consumer = AIOKafkaConsumer(**options)

        async def commit(offsets: dict[int, int]) -> None:
            try:
                await consumer.commit({TopicPartition(topic, p): o for p, o in offsets.items()})
                emit({"type": "committed", "offsets": offsets})
                for p, o in offsets.items():
                    if processed.get(p) == o:
                        del processed[p]
            except Exception as exc:
                emit({"type": "commit_error", "error": repr(exc)})

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                pending = {
                    tp.partition: processed[tp.partition]
                    for tp in revoked
                    if tp.partition in processed
                }
                if pending and config["commit"] == "batch":
                    await commit(pending)
                owned.change("revoked", [tp.partition for tp in revoked])

            async def on_partitions_assigned(self, assigned):
                owned.change("assigned", [tp.partition for tp in assigned])

        await consumer.start()
        try:
            consumer.subscribe([topic], listener=Listener())
            emit({"type": "started"})
            while True:
                name, offsets = next_command(commands)
                if name == "close":
                    break
                if name == "commit":
                    await commit(offsets)
                batch = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
                records = [
                    [r.partition, r.offset, key_text(r.key)] for rs in batch.values() for r in rs
                ]
                if records:
                    emit({"type": "records", "records": records})
                    for tp, rs in batch.items():
                        if rs:
                            processed[tp.partition] = rs[-1].offset + 1
                if config["commit"] == "batch" and processed:  # again, if a rebalance refused it
                    await commit(dict(processed))
        finally:
            await consumer.stop()
        emit({"type": "closed"})

    asyncio.run(main())
