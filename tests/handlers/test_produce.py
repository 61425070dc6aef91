"""Produce and InitProducerId, called directly with requests through the real codec."""

from __future__ import annotations

import pytest

from tests.handlers.support import BASE_TIME_MS, TestBroker, make_batch, produce_request, run
from wirekafka.broker.context import CloseConnection
from wirekafka.handlers.produce import handle_produces
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.headers import peek_request_prefix
from wirekafka.protocol.messages.init_producer_id import InitProducerIdRequest
from wirekafka.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from wirekafka.protocol.produce_response import answer_parts
from wirekafka.protocol.records.compression import CompressionType
from wirekafka.protocol.records.message_set import encode_message_set
from wirekafka.protocol.records.record import Record, TimestampType
from wirekafka.protocol.records.record_batch import NO_PRODUCER_ID, NO_SEQUENCE
from wirekafka.protocol.rpc import decode_request
from wirekafka.protocol.simple_produce import SimpleProduce, read_simple_produce


@pytest.fixture(params=["decoded", "simple"])
def produce_path(request) -> str:
    """Every test here runs twice: with each request decoded, and with the one-topic,
    one-partition requests read as SimpleProduce, as a connection without an
    authorizer reads them; the answers and the logs must be the same."""
    return request.param


@pytest.fixture
def broker(broker: TestBroker, produce_path: str) -> TestBroker:
    broker.simple_produce = produce_path == "simple"
    return broker


@pytest.fixture
def make_broker(make_broker, produce_path: str):
    def make(properties: dict[str, str]) -> TestBroker:
        made = make_broker(properties)
        made.simple_produce = produce_path == "simple"
        return made

    return make


def values_in_log(broker: TestBroker, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    return [
        (record.offset, record.value)
        for batch in broker.stored_batches(topic, partition)
        for record in batch.records
    ]


# plain appends


@pytest.mark.parametrize("version", [3, 5, 7, 8, 9])
@pytest.mark.parametrize("acks", [1, -1])
def test_acks_1_and_all_append_and_return_base_offsets(broker, version, acks):
    broker.create_topic("t")
    first = broker.produce("t", make_batch([b"a", b"b", b"c"]), version=version, acks=acks)
    second = broker.produce("t", make_batch([b"d"]), version=version, acks=acks)
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 0)
    assert (second.error_code, second.base_offset) == (ErrorCode.NONE, 3)
    assert first.log_append_time_ms == -1
    assert second.log_start_offset == (0 if version >= 5 else -1)
    assert broker.log_end("t") == 4
    assert values_in_log(broker, "t") == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_acks_0_returns_no_response_and_appends(broker):
    broker.create_topic("t")
    assert broker.produce("t", make_batch([b"x", b"y"]), acks=0) is None
    assert broker.log_end("t") == 2
    assert values_in_log(broker, "t") == [(0, b"x"), (1, b"y")]


@pytest.mark.parametrize("acks", [2, -2, 100])
def test_bad_acks_is_refused_and_nothing_is_appended(broker, acks):
    broker.create_topic("t")
    response = broker.produce("t", make_batch([b"x"]), acks=acks)
    assert response.error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert response.base_offset == -1
    assert broker.log_end("t") == 0
    assert broker.stored_batches("t") == []


@pytest.mark.parametrize("version", [0, 1, 2])
def test_several_batches_in_one_partition_get_consecutive_offsets_before_v3(broker, version):
    # Kafka does not check the record format of v0-v2 requests; neither does this broker.
    broker.create_topic("t")
    data = make_batch([b"a", b"b"]) + make_batch([b"c", b"d", b"e"])
    response = broker.produce("t", data, version=version)
    assert (response.error_code, response.base_offset) == (ErrorCode.NONE, 0)
    assert [batch.header.base_offset for batch in broker.stored_batches("t")] == [0, 2]
    assert broker.log_end("t") == 5


@pytest.mark.parametrize("version", [3, 7, 9])
def test_from_v3_a_partition_takes_exactly_one_batch(broker, version):
    broker.create_topic("t")
    data = make_batch([b"a", b"b"]) + make_batch([b"c"])
    response = broker.produce("t", data, version=version)
    assert response.error_code == ErrorCode.INVALID_RECORD
    if version >= 8:  # error messages came with v8
        assert response.error_message == "Produce v9 takes one record batch per partition, not 2"
    assert broker.log_end("t") == 0


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("version", [3, 9])
def test_from_v3_message_sets_are_invalid_records(broker, version, magic):
    broker.create_topic("t")
    data = encode_message_set([Record(0, BASE_TIME_MS, b"k", b"v")], magic=magic)
    response = broker.produce("t", data, version=version)
    assert response.error_code == ErrorCode.INVALID_RECORD
    if version >= 8:
        assert response.error_message.endswith(f"(magic 2) only, not magic {magic}")
    assert broker.log_end("t") == 0


def test_several_topics_and_partitions_in_one_request(broker):
    broker.create_topic("a", 2)
    broker.create_topic("b")
    request = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="a",
                partition_data=[
                    PartitionProduceData(index=1, records=make_batch([b"a1", b"a1'"])),
                    PartitionProduceData(index=0, records=make_batch([b"a0"])),
                    PartitionProduceData(index=2, records=make_batch([b"nope"])),
                ],
            ),
            TopicProduceData(
                name="b", partition_data=[PartitionProduceData(index=0, records=make_batch())]
            ),
            TopicProduceData(
                name="missing",
                partition_data=[PartitionProduceData(index=0, records=make_batch())],
            ),
        ],
    )
    response = broker.call(ApiKey.PRODUCE, 9, request)
    answers = [
        (t.name, p.index, p.error_code, p.base_offset)
        for t in response.responses
        for p in t.partition_responses
    ]
    assert answers == [
        ("a", 1, ErrorCode.NONE, 0),
        ("a", 0, ErrorCode.NONE, 0),
        ("a", 2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("b", 0, ErrorCode.NONE, 0),
        ("missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]
    assert (broker.log_end("a", 0), broker.log_end("a", 1), broker.log_end("b")) == (1, 2, 1)


# refusals


def test_bad_crc_is_corrupt_message_and_nothing_is_appended(broker):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"first"]))
    corrupt = bytearray(make_batch([b"hello", b"world"]))
    corrupt[-3] ^= 0x01  # a byte of the last record's value
    response = broker.produce("t", bytes(corrupt))
    assert response.error_code == ErrorCode.CORRUPT_MESSAGE
    assert response.base_offset == -1
    assert broker.log_end("t") == 1
    assert values_in_log(broker, "t") == [(0, b"first")]


def test_bad_crc_in_a_message_set_is_corrupt_message(broker):
    broker.create_topic("t")
    corrupt = bytearray(encode_message_set([Record(0, BASE_TIME_MS, b"k", b"value")], magic=1))
    corrupt[-1] ^= 0x01
    response = broker.produce("t", bytes(corrupt), version=2)
    assert response.error_code == ErrorCode.CORRUPT_MESSAGE
    assert broker.log_end("t") == 0


@pytest.mark.parametrize("records", [None, b"", b"\x00" * 10])
def test_missing_or_truncated_records_are_corrupt_message(broker, records):
    broker.create_topic("t")
    response = broker.produce("t", records)
    assert response.error_code == ErrorCode.CORRUPT_MESSAGE
    assert broker.log_end("t") == 0


def test_truncated_batch_is_corrupt_message(broker):
    broker.create_topic("t")
    response = broker.produce("t", make_batch([b"abcdef"])[:-2])
    assert response.error_code == ErrorCode.CORRUPT_MESSAGE
    assert broker.log_end("t") == 0


def test_batch_above_message_max_bytes_is_message_too_large(make_broker):
    batch = make_batch([b"x" * 100])
    broker = make_broker({"message.max.bytes": str(len(batch))})
    broker.create_topic("t")
    bigger = make_batch([b"x" * 101])
    response = broker.produce("t", bigger)
    assert response.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert broker.log_end("t") == 0
    at_the_limit = broker.produce("t", batch)
    assert (at_the_limit.error_code, at_the_limit.base_offset) == (ErrorCode.NONE, 0)


@pytest.mark.parametrize("version", [3, 4, 5, 6])
def test_zstd_before_produce_v7_is_unsupported_compression(broker, version):
    broker.create_topic("t")
    batch = make_batch([b"z" * 50, b"y"], compression=CompressionType.ZSTD)
    response = broker.produce("t", batch, version=version)
    assert response.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert response.base_offset == -1
    assert broker.log_end("t") == 0


@pytest.mark.parametrize("version", [7, 8, 9])
def test_zstd_from_produce_v7_is_stored_as_sent(broker, version):
    broker.create_topic("t")
    batch = make_batch([b"z" * 50, b"y"], compression=CompressionType.ZSTD)
    response = broker.produce("t", batch, version=version)
    assert (response.error_code, response.base_offset) == (ErrorCode.NONE, 0)
    [stored] = broker.stored_batches("t")
    assert stored.header.compression == CompressionType.ZSTD
    assert [r.value for r in stored.records] == [b"z" * 50, b"y"]


def test_unknown_topic(broker):
    response = broker.produce("nope", make_batch())
    assert (response.error_code, response.base_offset) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        -1,
    )
    assert broker.ctx.logs.get_log("nope", 0) is None
    assert broker.ctx.topics.topic("nope") is None  # produce never auto-creates


@pytest.mark.parametrize("partition", [2, 100, -1])
def test_partition_out_of_range(broker, partition):
    broker.create_topic("t", 2)
    response = broker.produce("t", make_batch(), partition=partition)
    assert response.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.ctx.logs.get_log("t", partition) is None


def test_transactional_id_is_refused(broker):
    broker.create_topic("t")
    response = broker.produce("t", make_batch([b"x"]), transactional_id="txn")
    assert response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert response.base_offset == -1
    assert broker.log_end("t") == 0


def test_transactional_batch_is_refused(broker):
    broker.create_topic("t")
    batch = make_batch(
        [b"x"], producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    response = broker.produce("t", batch)
    assert response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert broker.log_end("t") == 0


def test_acks_0_with_an_error_closes_the_connection(broker):
    broker.create_topic("t")
    with pytest.raises(CloseConnection, match="UNKNOWN_TOPIC_OR_PARTITION"):
        broker.raw(ApiKey.PRODUCE, 9, produce_request("nope", make_batch(), acks=0))
    with pytest.raises(CloseConnection, match=r"INVALID_RECORD .* not magic 0"):
        broker.raw(ApiKey.PRODUCE, 9, produce_request("t", b"\x00" * 70, acks=0))
    assert broker.log_end("t") == 0


def test_acks_0_with_transactional_id_closes_the_connection(broker):
    broker.create_topic("t")
    request = produce_request("t", make_batch(), acks=0, transactional_id="txn")
    with pytest.raises(CloseConnection, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
        broker.raw(ApiKey.PRODUCE, 9, request)
    assert broker.log_end("t") == 0


# timestamps


def test_log_append_time_topic_returns_and_stores_the_append_time(broker):
    broker.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
    broker.clock.now_ms = BASE_TIME_MS + 5_000
    response = broker.produce("t", make_batch([b"a", b"b"], timestamps=[1, 2]))
    assert response.error_code == ErrorCode.NONE
    assert response.log_append_time_ms == BASE_TIME_MS + 5_000
    [stored] = broker.stored_batches("t")
    assert stored.header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert stored.header.max_timestamp == BASE_TIME_MS + 5_000


def test_create_time_topic_keeps_client_timestamps(broker):
    broker.create_topic("t")
    response = broker.produce("t", make_batch([b"a", b"b"], timestamps=[111, 222]))
    assert response.log_append_time_ms == -1
    [stored] = broker.stored_batches("t")
    assert stored.header.timestamp_type == TimestampType.CREATE_TIME
    assert [r.timestamp for r in stored.records] == [111, 222]


def test_flush_interval_messages_moves_the_recovery_point(make_broker):
    broker = make_broker({"log.flush.interval.messages": "2"})
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a"]))
    assert broker.log("t").recovery_point == 0
    broker.produce("t", make_batch([b"b"]))
    assert broker.log("t").recovery_point == 2


def test_a_produce_that_fills_the_segment_rolls_it_off_the_event_loop(broker):
    # The tests fail a blocking call made on the event loop: the roll, which creates
    # the new segment's files, happens in a worker thread, and the append goes on.
    broker.create_topic("t", configs={"segment.bytes": "200"})
    offsets = [broker.produce("t", make_batch([b"x" * 100])).base_offset for _ in range(4)]
    assert offsets == [0, 1, 2, 3]
    assert [segment.base_offset for segment in broker.log("t").segments] == [0, 1, 2, 3]
    assert values_in_log(broker, "t") == [(offset, b"x" * 100) for offset in range(4)]


def test_an_idempotent_retry_after_a_roll_is_still_a_duplicate(broker):
    broker.create_topic("t", configs={"segment.bytes": "200"})
    pid, epoch = init_producer_id(broker)
    first = broker.produce("t", idempotent([b"a" * 100], pid, epoch, 0))
    rolled = broker.produce("t", idempotent([b"b" * 100], pid, epoch, 1))
    retry = broker.produce("t", idempotent([b"b" * 100], pid, epoch, 1))
    assert (first.base_offset, rolled.base_offset, retry.base_offset) == (0, 1, 1)
    assert broker.log_end("t") == 2
    assert len(broker.log("t").segments) == 2


# pipelined requests: handled together (handle_produces), answered as one by one


def pipelined(broker: TestBroker, requests: list[tuple[ProduceRequest, int]]) -> list:
    """handle_produces' answers to ``(request, version)`` pairs decoded as a connection
    decodes them."""
    frames = [
        bytearray(broker.encode(ApiKey.PRODUCE, version, request)) for request, version in requests
    ]
    read = [
        (broker.simple_produce and read_simple_produce(frame))
        or decode_request(frame, "/127.0.0.1")
        for frame in frames
    ]
    if broker.simple_produce:  # the shapes of these tests but one are one-topic, one-partition
        assert sum(type(request) is SimpleProduce for request in read) >= len(read) - 1
    answers = run(handle_produces, broker.ctx, read)
    return [  # each answer written as the connection writes it, and read back
        answer
        if answer is None or isinstance(answer, CloseConnection)
        else broker.decoded_response(
            ApiKey.PRODUCE, version, answer_parts(request, answer), peek_request_prefix(frame)[2]
        )
        for answer, request, frame, (_, version) in zip(
            answers, read, frames, requests, strict=False
        )
    ]


def answered(answer) -> list[tuple[str, int, int, int]]:
    return [
        (topic.name, partition.index, partition.error_code, partition.base_offset)
        for topic in answer.responses
        for partition in topic.partition_responses
    ]


def test_pipelined_requests_count_every_record_and_byte_they_append(broker):
    """Appends to one log made together are counted together, per topic; a refused
    batch counts nothing."""
    broker.create_topic("t", partitions=2)
    broker.create_topic("u")
    corrupt = bytearray(make_batch([b"x"]))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    batches = [
        ("t", 0, make_batch([b"a", b"b"])),
        ("t", 0, make_batch([b"c"])),
        ("t", 0, bytes(corrupt)),
        ("t", 1, make_batch([b"d", b"e", b"f"])),
        ("u", 0, make_batch([b"g"])),
        ("t", 0, make_batch([b"h", b"i"])),
    ]
    answers = pipelined(
        broker,
        [
            (produce_request(topic, batch, partition=index, acks=1), 7)
            for topic, index, batch in batches
        ],
    )
    assert [code for answer in answers for _, _, code, _ in answered(answer)] == [
        0, 0, ErrorCode.CORRUPT_MESSAGE, 0, 0, 0,
    ]  # fmt: skip
    appended = [batch for _, _, batch in batches if batch != bytes(corrupt)]
    t_bytes = sum(len(batch) for batch in appended[:3] + appended[4:])
    topics = broker.ctx.metrics.topics
    assert (topics["t"].messages_in, topics["t"].bytes_in) == (8, t_bytes)
    assert (topics["u"].messages_in, topics["u"].bytes_in) == (1, len(appended[3]))
    total = broker.ctx.metrics.all_topics
    assert (total.messages_in, total.bytes_in) == (9, t_bytes + len(appended[3]))


def test_pipelined_requests_are_answered_in_order_as_one_at_a_time(broker):
    broker.create_topic("t", partitions=2)
    broker.create_topic("u")
    requests = [
        (produce_request("t", make_batch([b"a", b"b"]), acks=1), 9),
        (produce_request("t", make_batch([b"c"]), partition=1, acks=1), 7),
        (produce_request("nope", make_batch([b"x"]), acks=1), 9),
        (produce_request("t", make_batch([b"d"]), acks=0), 9),
        (produce_request("u", make_batch([b"e"]), acks=-1), 5),
        (produce_request("t", make_batch([b"f", b"g", b"h"]), acks=1), 3),
        (produce_request("t", make_batch([b"i"]), acks=5), 9),
    ]
    answers = pipelined(broker, requests)
    assert answers[3] is None  # acks=0
    assert [answered(a) for a in answers if a is not None] == [
        [("t", 0, ErrorCode.NONE, 0)],
        [("t", 1, ErrorCode.NONE, 0)],
        [("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)],
        [("u", 0, ErrorCode.NONE, 0)],
        [("t", 0, ErrorCode.NONE, 3)],
        [("t", 0, ErrorCode.INVALID_REQUIRED_ACKS, -1)],
    ]
    assert values_in_log(broker, "t") == [
        (0, b"a"),
        (1, b"b"),
        (2, b"d"),
        (3, b"f"),
        (4, b"g"),
        (5, b"h"),
    ]
    assert values_in_log(broker, "t", 1) == [(0, b"c")]


def test_a_failed_acks_0_request_ends_the_pipeline_after_the_answers_before_it(broker):
    broker.create_topic("t")
    requests = [
        (produce_request("t", make_batch([b"a"]), acks=1), 9),
        (produce_request("t", make_batch([b"b"]), acks=0), 9),
        (produce_request("gone", make_batch([b"c"]), acks=0), 9),
        (produce_request("t", make_batch([b"d"]), acks=1), 9),
    ]
    first, second, closing = pipelined(broker, requests)
    assert answered(first) == [("t", 0, ErrorCode.NONE, 0)]
    assert second is None
    assert isinstance(closing, CloseConnection)
    assert "UNKNOWN_TOPIC_OR_PARTITION" in str(closing)
    assert values_in_log(broker, "t") == [(0, b"a"), (1, b"b")]  # never d


def test_pipelined_requests_that_fill_the_segment_roll_it_where_they_must(broker):
    broker.create_topic("t", configs={"segment.bytes": "400"})  # two batches a segment
    requests = [(produce_request("t", make_batch([b"x" * 100]), acks=1), 9) for _ in range(6)]
    answers = pipelined(broker, requests)
    assert [answered(a)[0][3] for a in answers] == [0, 1, 2, 3, 4, 5]
    assert [segment.base_offset for segment in broker.log("t").segments] == [0, 2, 4]
    assert values_in_log(broker, "t") == [(offset, b"x" * 100) for offset in range(6)]


# message sets of old clients


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1), (2, 0)])
def test_message_sets_are_stored_as_record_batches(broker, version, magic):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"before"]))
    records = [
        Record(0, BASE_TIME_MS + 10, b"k0", b"v0"),
        Record(1, BASE_TIME_MS + 20, None, b"v1"),
        Record(2, BASE_TIME_MS + 30, b"k2", None),
    ]
    response = broker.produce("t", encode_message_set(records, magic=magic), version=version)
    assert (response.error_code, response.base_offset) == (ErrorCode.NONE, 1)
    assert broker.log_end("t") == 4
    [_, converted] = broker.stored_batches("t")
    assert converted.header.magic == 2
    assert converted.header.base_offset == 1
    assert converted.header.compression == CompressionType.NONE
    assert [(r.offset, r.key, r.value) for r in converted.records] == [
        (1, b"k0", b"v0"),
        (2, None, b"v1"),
        (3, b"k2", None),
    ]
    expected_times = [r.timestamp for r in records] if magic == 1 else [-1, -1, -1]
    assert [r.timestamp for r in converted.records] == expected_times


@pytest.mark.parametrize("magic", [0, 1])
def test_compressed_message_set_becomes_one_compressed_batch(broker, magic):
    broker.create_topic("t")
    records = [Record(i, BASE_TIME_MS + i, None, b"value-%d" % i) for i in range(5)]
    data = encode_message_set(records, magic=magic, compression=CompressionType.GZIP)
    response = broker.produce("t", data, version=1 + magic)
    assert (response.error_code, response.base_offset) == (ErrorCode.NONE, 0)
    [converted] = broker.stored_batches("t")
    assert converted.header.compression == CompressionType.GZIP
    assert [(r.offset, r.value) for r in converted.records] == [
        (i, b"value-%d" % i) for i in range(5)
    ]


def test_zstd_message_set_is_unsupported_compression(broker):
    broker.create_topic("t")
    records = [Record(0, BASE_TIME_MS, None, b"v")]
    data = encode_message_set(records, magic=1, compression=CompressionType.ZSTD)
    response = broker.produce("t", data, version=2)
    assert response.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert broker.log_end("t") == 0


# idempotence


def init_producer_id(broker: TestBroker, version: int = 4) -> tuple[int, int]:
    response = broker.call(
        ApiKey.INIT_PRODUCER_ID,
        version,
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
    )
    assert response.error_code == ErrorCode.NONE
    return response.producer_id, response.producer_epoch


def idempotent(values: list[bytes], producer_id: int, epoch: int, sequence: int) -> bytes:
    return make_batch(values, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_init_producer_id_hands_out_fresh_ids_at_epoch_0(broker, version):
    first = init_producer_id(broker, version)
    second = init_producer_id(broker, version)
    assert first == (0, 0)
    assert second == (1, 0)


def test_init_producer_id_refuses_transactional_ids(broker):
    response = broker.call(
        ApiKey.INIT_PRODUCER_ID,
        4,
        InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=60000),
    )
    assert response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert (response.producer_id, response.producer_epoch) == (-1, -1)


def test_producer_ids_are_not_reused_after_a_restart(broker):
    assert init_producer_id(broker) == (0, 0)
    assert init_producer_id(broker) == (1, 0)
    broker.restart()
    assert init_producer_id(broker) == (1000, 0)


def test_duplicate_batch_returns_its_offset_and_is_stored_once(broker):
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    broker.produce("t", make_batch([b"plain"]))
    first = broker.produce("t", idempotent([b"a", b"b"], pid, epoch, 0))
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 1)
    retry = broker.produce("t", idempotent([b"a", b"b"], pid, epoch, 0))
    assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, 1)
    assert broker.log_end("t") == 3
    nxt = broker.produce("t", idempotent([b"c"], pid, epoch, 2))
    assert (nxt.error_code, nxt.base_offset) == (ErrorCode.NONE, 3)
    assert values_in_log(broker, "t") == [(0, b"plain"), (1, b"a"), (2, b"b"), (3, b"c")]


def test_sequence_gap_is_out_of_order(broker):
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    broker.produce("t", idempotent([b"a"], pid, epoch, 0))
    gap = broker.produce("t", idempotent([b"c"], pid, epoch, 2))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    assert gap.base_offset == -1
    assert broker.log_end("t") == 1


def test_older_epoch_is_invalid_producer_epoch(broker):
    broker.create_topic("t")
    pid, _ = init_producer_id(broker)
    broker.produce("t", idempotent([b"a"], pid, 3, 0))
    old = broker.produce("t", idempotent([b"b"], pid, 2, 1))
    assert old.error_code == ErrorCode.INVALID_PRODUCER_EPOCH == 47
    assert broker.log_end("t") == 1


@pytest.mark.parametrize(
    ("version", "code"), [(2, ErrorCode.CORRUPT_MESSAGE), (9, ErrorCode.INVALID_RECORD)]
)
def test_idempotent_request_with_two_batches_is_refused(broker, version, code):
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    data = idempotent([b"a"], pid, epoch, 0) + idempotent([b"b"], pid, epoch, 1)
    response = broker.produce("t", data, version=version)
    assert response.error_code == code
    assert broker.log_end("t") == 0


def test_producer_state_survives_a_restart(broker):
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    broker.produce("t", idempotent([b"a", b"b"], pid, epoch, 0))
    broker.produce("t", idempotent([b"c"], pid, epoch, 2))
    broker.restart()
    retry = broker.produce("t", idempotent([b"c"], pid, epoch, 2))
    assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, 2)
    older_retry = broker.produce("t", idempotent([b"a", b"b"], pid, epoch, 0))
    assert (older_retry.error_code, older_retry.base_offset) == (ErrorCode.NONE, 0)
    assert broker.log_end("t") == 3
    gap = broker.produce("t", idempotent([b"e"], pid, epoch, 4))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    stale = broker.produce("t", idempotent([b"d"], pid, epoch - 1, 3))
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    nxt = broker.produce("t", idempotent([b"d"], pid, epoch, 3))
    assert (nxt.error_code, nxt.base_offset) == (ErrorCode.NONE, 3)
    assert values_in_log(broker, "t") == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_duplicate_after_restart_on_log_append_time_topic_keeps_the_append_time(broker):
    """Kafka answers a duplicate with the original batch's append time."""
    broker.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
    pid, epoch = init_producer_id(broker)
    broker.clock.now_ms = BASE_TIME_MS + 1_000
    first = broker.produce("t", idempotent([b"a"], pid, epoch, 0))
    assert first.log_append_time_ms == BASE_TIME_MS + 1_000
    broker.clock.now_ms = BASE_TIME_MS + 2_000
    retry = broker.produce("t", idempotent([b"a"], pid, epoch, 0))
    assert (retry.base_offset, retry.log_append_time_ms) == (0, BASE_TIME_MS + 1_000)
    broker.restart()
    after_restart = broker.produce("t", idempotent([b"a"], pid, epoch, 0))
    assert after_restart.base_offset == 0
    assert after_restart.log_append_time_ms == BASE_TIME_MS + 1_000


def test_plain_batches_bypass_producer_state(broker):
    broker.create_topic("t")
    for _ in range(3):
        response = broker.produce("t", make_batch([b"same"]))
        assert response.error_code == ErrorCode.NONE
    assert broker.log_end("t") == 3
    assert all(
        (b.header.producer_id, b.header.base_sequence) == (NO_PRODUCER_ID, NO_SEQUENCE)
        for b in broker.stored_batches("t")
    )


def test_producer_state_goes_with_the_topic(broker):
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    broker.produce("t", idempotent([b"a"], pid, epoch, 0))
    broker.produce("t", idempotent([b"b"], pid, epoch, 1))
    assert broker.ctx.topics.delete_topic("t") is None
    broker.create_topic("t")  # a new log: the producer is new to it
    again = broker.produce("t", idempotent([b"b"], pid, epoch, 1))
    assert (again.error_code, again.base_offset) == (ErrorCode.NONE, 0)
    assert broker.log_end("t") == 1


def test_topics_deleted_elsewhere_lose_their_logs_and_producer_state(broker):
    # In a cluster another broker deletes the topic; this one sees it gone from the metadata.
    for name in ("gone", "kept"):
        broker.create_topic(name)
    pid, epoch = init_producer_id(broker)
    for name in ("gone", "kept"):
        broker.produce(name, idempotent([b"a", b"b"], pid, epoch, 0))
    broker.ctx.topics.metadata.remove_topic("gone")
    broker.ctx.topics.drop_logs_of_deleted_topics()
    assert {pl.topic for pl in broker.ctx.logs.all_logs()} == {"kept"}
    retry = broker.produce("kept", idempotent([b"a", b"b"], pid, epoch, 0))
    assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, 0)
    broker.create_topic("gone")
    fresh = broker.produce("gone", idempotent([b"c"], pid, epoch, 2))
    assert (fresh.error_code, fresh.base_offset) == (ErrorCode.NONE, 0)


def test_expired_producers_are_forgotten(make_broker):
    broker = make_broker({"producer.id.expiration.ms": "1000"})
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    broker.produce("t", idempotent([b"a"], pid, epoch, 0))  # record time BASE_TIME_MS
    broker.clock.now_ms = BASE_TIME_MS + 1_000
    broker.ctx.logs.run_maintenance()
    gap = broker.produce("t", idempotent([b"b"], pid, epoch, 5))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    broker.clock.now_ms = BASE_TIME_MS + 1_001
    broker.ctx.logs.run_maintenance(expire_producers=False)  # a round between two checks
    gap = broker.produce("t", idempotent([b"b"], pid, epoch, 5))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    broker.ctx.logs.run_maintenance()
    fresh = broker.produce("t", idempotent([b"b"], pid, epoch, 5))
    assert (fresh.error_code, fresh.base_offset) == (ErrorCode.NONE, 1)


def test_expired_producers_stay_forgotten_after_a_restart(make_broker):
    """The state rebuilt from the log must not bring back producers silent for
    longer than producer.id.expiration.ms (the active segment is always scanned)."""
    broker = make_broker({"producer.id.expiration.ms": "1000"})
    broker.create_topic("t")
    pid, epoch = init_producer_id(broker)
    broker.produce("t", idempotent([b"a"], pid, epoch, 0))  # record time BASE_TIME_MS
    broker.clock.now_ms = BASE_TIME_MS + 60_000
    broker.restart()
    fresh = broker.produce("t", idempotent([b"b"], pid, epoch, 5))
    assert (fresh.error_code, fresh.base_offset) == (ErrorCode.NONE, 1)
