"""A real BrokerContext over a temporary log dir, and requests through the real codec.

No sockets: a request dataclass is encoded with :func:`encode_request`,
decoded with :func:`decode_request` (as the server does, from a bytearray),
handed to the handler, and the handler's answer is encoded with
:func:`encode_response_parts` and decoded again, so every test exercises the
encoding of the version under test.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio
import trio.testing

from tests.broker.test_high_watermark import Cache, Logs
from tests.storage.helpers import BASE_TIME_MS, FakeClock
from wirekafka.broker.context import (
    BrokerContext,
    BrokerEndpoint,
    CloseConnection,
    open_broker_context,
)
from wirekafka.broker.replication import ReplicaManager
from wirekafka.config import broker_config_from_properties
from wirekafka.handlers.produce import handle_produces
from wirekafka.handlers.registry import HANDLERS
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.headers import RequestHeader, peek_request_prefix
from wirekafka.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from wirekafka.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from wirekafka.protocol.produce_response import answer_parts
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RecordBatch,
    decode_batches,
    encode_batch,
)
from wirekafka.protocol.rpc import (
    Request,
    decode_request,
    decode_response,
    encode_request,
    encode_response_parts,
)
from wirekafka.protocol.simple_produce import SimpleProduce, read_simple_produce
from wirekafka.security.principal import ANONYMOUS
from wirekafka.storage.log import PartitionLog
from wirekafka.storage.spans import FileSpan
from wirekafka.zk.znodes import PartitionState

__all__ = [
    "BASE_TIME_MS",
    "TestBroker",
    "advance_trio_time",
    "make_batch",
    "run",
    "run_autojump",
    "run_stepped",
]


def run(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Run an async function to completion in a fresh trio loop."""
    return trio.run(fn, *args)


def run_autojump(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Run ``fn`` on trio's mock clock, which jumps to the next deadline as soon as
    every task waits: a long poll's full wait takes no real time, and
    ``trio.current_time()`` measures it exactly as the broker counts it.

    Only for a scenario with one thing waiting: a task waiting on a worker
    thread counts as waiting too, so time could jump past a deadline while a
    produce is still in its thread (use :func:`run_stepped` for those)."""
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


def run_stepped(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Run ``fn`` on trio's mock clock, which stands still until the test moves it
    with :func:`advance_trio_time`: deadlines pass exactly when the test says."""
    return trio.run(fn, *args, clock=trio.testing.MockClock())


async def advance_trio_time(seconds: float) -> None:
    """In :func:`run_stepped`: once every task waits, move trio's clock on, and
    let the tasks it wakes run until they wait again."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "only under run_stepped"
    await trio.testing.wait_all_tasks_blocked()
    clock.jump(seconds)
    await trio.testing.wait_all_tasks_blocked()


def make_batch(
    values: Sequence[bytes | None] = (b"v0",),
    *,
    timestamps: Sequence[int] | None = None,
    keys: Sequence[bytes | None] | None = None,
    compression: CompressionType = CompressionType.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
) -> bytes:
    """A magic-2 batch of ``values`` (offsets 0.., timestamps BASE_TIME_MS + i by default)."""
    if timestamps is None:
        timestamps = [BASE_TIME_MS + i for i in range(len(values))]
    if keys is None:
        keys = [None] * len(values)
    records = [Record(i, timestamps[i], keys[i], value) for i, value in enumerate(values)]
    return encode_batch(
        records,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
    )


def _join_parts(parts: list[Any]) -> bytes:
    out = bytearray()
    for part in parts:
        out += part.read_bytes() if isinstance(part, FileSpan) else bytes(part)
    return bytes(out)


class TestBroker:
    """A BrokerContext over ``directory``, rebuilt by :meth:`restart` as a new process would.

    Requests come from ``client_host``, as the server passes a connection's peer."""

    __test__ = False  # not a pytest test class
    client_host = "/192.0.2.7"  # TEST-NET-1, as Kafka shows a client's address
    # Produce requests of one topic and one partition read as a connection without an
    # authorizer reads them (a SimpleProduce), not decoded; answered as it answers them
    simple_produce = False

    def __init__(self, directory: Path, properties: Mapping[str, str] | None = None) -> None:
        self.directory = directory
        self.properties = {"log.dirs": str(directory), **(properties or {})}
        self.clock = FakeClock()
        self._correlation = itertools.count(1)
        self.ctx = self._open()
        self.closed = False

    def _open(self) -> BrokerContext:
        config = broker_config_from_properties(self.properties)
        return open_broker_context(
            config, self.clock, {"PLAINTEXT": BrokerEndpoint(0, "localhost", 9092)}
        )

    def close(self) -> None:
        if not self.closed:
            self.ctx.logs.shutdown()
            self.closed = True

    def restart(self) -> None:
        """Shut the logs down cleanly and build a fresh context on the same dir."""
        self.close()
        self.ctx = self._open()
        self.closed = False

    # requests

    def encode(self, api_key: ApiKey, version: int, body: Any) -> bytes:
        header = RequestHeader(api_key, version, next(self._correlation), "tests")
        return encode_request(header, body)

    async def acall(
        self, api_key: ApiKey, version: int, body: Any, principal: str = ANONYMOUS
    ) -> Any:
        """The decoded response body, or None when the handler sends none (acks=0);
        the request comes from ``principal``."""
        frame = self.encode(api_key, version, body)
        if api_key == ApiKey.PRODUCE:
            return await self._produce(frame, version, principal)
        request = decode_request(bytearray(frame), self.client_host, principal)
        assert request.version == version
        assert request.api.key == api_key
        response = await HANDLERS[api_key](self.ctx, request)
        if response is None:
            return None
        parts = encode_response_parts(api_key, version, request.header.correlation_id, response)
        return self.decoded_response(api_key, version, parts, request.header.correlation_id)

    async def _produce(self, frame: bytes, version: int, principal: str) -> Any:
        """A produce request handled and answered as a connection handles it."""
        request: Request | SimpleProduce | None = None
        if self.simple_produce and principal == ANONYMOUS:
            request = read_simple_produce(bytearray(frame))
        if request is None:
            request = decode_request(bytearray(frame), self.client_host, principal)
        [response] = await handle_produces(self.ctx, [request])
        if isinstance(response, CloseConnection):
            raise response
        if response is None:
            return None
        correlation_id = peek_request_prefix(frame)[2]
        parts = answer_parts(request, response)
        return self.decoded_response(ApiKey.PRODUCE, version, parts, correlation_id)

    @staticmethod
    def decoded_response(
        api_key: ApiKey, version: int, parts: list[Any], correlation_id: int
    ) -> Any:
        data = _join_parts(parts)[4:]  # drop the size prefix
        header, decoded = decode_response(api_key, version, data)
        assert header.correlation_id == correlation_id
        return decoded

    async def araw(self, api_key: ApiKey, version: int, body: Any) -> Any:
        """The handler's own response object (before encoding), e.g. to see FileSpans."""
        frame = self.encode(api_key, version, body)
        return await HANDLERS[api_key](self.ctx, decode_request(bytearray(frame), self.client_host))

    def call(self, api_key: ApiKey, version: int, body: Any, principal: str = ANONYMOUS) -> Any:
        return run(self.acall, api_key, version, body, principal)

    def raw(self, api_key: ApiKey, version: int, body: Any) -> Any:
        return run(self.araw, api_key, version, body)

    # shortcuts

    def create_topic(
        self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> None:
        error = self.ctx.topics.create_topic(name, partitions, 1, dict(configs or {}))
        assert error is None, error

    def create_topics_request(
        self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> CreateTopicsRequest:
        return CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=1,
                    assignments=[],
                    configs=[
                        CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
                    ],
                )
            ],
            timeout_ms=1000,
            validate_only=False,
        )

    def join_cluster(self, state: PartitionState) -> Cache:
        """Make this broker (broker 0) a replica of t-0 in a ZooKeeper cluster whose
        cache holds ``state``, whose ISR (this broker in it) is the replicas; the
        cache, which the test may move on."""
        assert 0 in state.isr, state
        cache = Cache(state)
        self.ctx.replicas = ReplicaManager(
            0, cache, Logs(self.log("t"), state.isr), self.ctx.appends, replica_lag_time_max_ms=1000
        )
        return cache

    def log(self, topic: str, partition: int = 0) -> PartitionLog:
        found = self.ctx.logs.get_log(topic, partition)
        assert found is not None, (topic, partition)
        return found

    def log_end(self, topic: str, partition: int = 0) -> int:
        return self.log(topic, partition).log_end_offset

    def stored_batches(self, topic: str, partition: int = 0) -> list[RecordBatch]:
        """Every batch in the partition's segment files, read back from disk (up
        to each segment's end: the active file goes on in preallocated zeros)."""
        data = b"".join(
            segment.log_path.read_bytes()[: segment.size]
            for segment in self.log(topic, partition).segments
        )
        return decode_batches(data)

    def produce(
        self,
        topic: str,
        records: bytes | None,
        *,
        partition: int = 0,
        version: int = 9,
        acks: int = -1,
        transactional_id: str | None = None,
    ) -> Any:
        """One partition's produce response (the response itself for acks=0: None)."""
        request = produce_request(topic, records, partition, acks, transactional_id)
        response = self.call(ApiKey.PRODUCE, version, request)
        if response is None:
            return None
        [topic_response] = response.responses
        assert topic_response.name == topic
        [partition_response] = topic_response.partition_responses
        assert partition_response.index == partition
        return partition_response

    def fetch(
        self,
        topic: str,
        offset: int = 0,
        *,
        partition: int = 0,
        version: int = 12,
        max_bytes: int = 1 << 20,
        partition_max_bytes: int = 1 << 20,
        max_wait_ms: int = 0,
        min_bytes: int = 0,
    ) -> Any:
        request = fetch_request(
            [(topic, partition, offset, partition_max_bytes)],
            max_bytes=max_bytes,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
        )
        response = self.call(ApiKey.FETCH, version, request)
        [topic_response] = response.responses
        [partition_data] = topic_response.partitions
        return partition_data


def produce_request(
    topic: str,
    records: bytes | None,
    partition: int = 0,
    acks: int = -1,
    transactional_id: str | None = None,
) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[PartitionProduceData(index=partition, records=records)],
            )
        ],
    )


def fetch_request(
    partitions: Sequence[tuple[str, int, int, int]],
    *,
    max_bytes: int = 1 << 20,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
) -> FetchRequest:
    """``partitions``: (topic, partition, fetch offset, partition max bytes), topics grouped."""
    topics: dict[str, list[FetchPartition]] = {}
    for topic, partition, offset, partition_max_bytes in partitions:
        topics.setdefault(topic, []).append(
            FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes
            )
        )
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[FetchTopic(topic=name, partitions=parts) for name, parts in topics.items()],
        forgotten_topics_data=[],
        rack_id="",
    )
