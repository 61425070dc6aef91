"""ListOffsets: v0's offset lists, and v1+ earliest, latest, by timestamp and max timestamp."""

from __future__ import annotations

import os

import pytest

from tests.handlers.support import BASE_TIME_MS, TestBroker, make_batch
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from wirekafka.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


def list_offsets(
    broker: TestBroker,
    version: int,
    timestamp: int,
    *,
    topic: str = "t",
    partition: int = 0,
    max_num_offsets: int = 1,
):
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsPartition(
                        partition_index=partition,
                        timestamp=timestamp,
                        max_num_offsets=max_num_offsets,
                    )
                ],
            )
        ],
    )
    response = broker.call(ApiKey.LIST_OFFSETS, version, request)
    [topic_response] = response.topics
    assert topic_response.name == topic
    [answer] = topic_response.partitions
    assert answer.partition_index == partition
    return answer


def fill(broker: TestBroker) -> None:
    """Offsets 0-2 at times +0,+10,+20 (segment 0), offsets 3-4 at +30,+40 (segment 3)."""
    broker.create_topic("t")
    times = [BASE_TIME_MS, BASE_TIME_MS + 10, BASE_TIME_MS + 20]
    broker.produce("t", make_batch([b"a", b"b", b"c"], timestamps=times))
    broker.log("t").roll()
    broker.produce("t", make_batch([b"d", b"e"], timestamps=[BASE_TIME_MS + 30, BASE_TIME_MS + 40]))
    assert [s.base_offset for s in broker.log("t").segments] == [0, 3]


def test_v0_latest_lists_the_log_end_and_segment_bases(broker):
    fill(broker)
    answer = list_offsets(broker, 0, LATEST, max_num_offsets=10)
    assert (answer.error_code, answer.old_style_offsets) == (ErrorCode.NONE, [5, 3, 0])
    assert list_offsets(broker, 0, LATEST, max_num_offsets=1).old_style_offsets == [5]
    assert list_offsets(broker, 0, LATEST, max_num_offsets=2).old_style_offsets == [5, 3]
    assert list_offsets(broker, 0, LATEST, max_num_offsets=0).old_style_offsets == []


def test_v0_earliest(broker):
    fill(broker)
    answer = list_offsets(broker, 0, EARLIEST, max_num_offsets=10)
    assert answer.old_style_offsets == [0]


def test_v0_on_an_empty_partition(broker):
    broker.create_topic("t")
    assert list_offsets(broker, 0, LATEST, max_num_offsets=10).old_style_offsets == [0]
    assert list_offsets(broker, 0, EARLIEST, max_num_offsets=10).old_style_offsets == [0]


def test_v0_by_time_uses_segment_file_times_and_the_log_end_at_now(broker):
    """Kafka 0.8's answer: each segment's base offset stands with its file's
    last-modified time, the log end with the current time."""
    fill(broker)
    first, second = (s.log_path for s in broker.log("t").segments)
    os.utime(first, ns=(0, BASE_TIME_MS * 1_000_000))
    os.utime(second, ns=(0, (BASE_TIME_MS + 1000) * 1_000_000))
    broker.clock.now_ms = BASE_TIME_MS + 2000
    assert list_offsets(broker, 0, BASE_TIME_MS - 1, max_num_offsets=10).old_style_offsets == []
    assert list_offsets(broker, 0, BASE_TIME_MS, max_num_offsets=10).old_style_offsets == [0]
    assert list_offsets(broker, 0, BASE_TIME_MS + 1500, max_num_offsets=10).old_style_offsets == [
        3,
        0,
    ]
    assert list_offsets(broker, 0, BASE_TIME_MS + 2000, max_num_offsets=10).old_style_offsets == [
        5,
        3,
        0,
    ]
    assert list_offsets(broker, 0, BASE_TIME_MS + 2000, max_num_offsets=1).old_style_offsets == [5]


@pytest.mark.parametrize("version", [1, 2, 4, 6, 7])
def test_v1_plus_earliest_and_latest(broker, version):
    fill(broker)
    earliest = list_offsets(broker, version, EARLIEST)
    assert (earliest.error_code, earliest.offset, earliest.timestamp) == (ErrorCode.NONE, 0, -1)
    latest = list_offsets(broker, version, LATEST)
    assert (latest.error_code, latest.offset, latest.timestamp) == (ErrorCode.NONE, 5, -1)


@pytest.mark.parametrize("version", [1, 4, 7])
@pytest.mark.parametrize(
    ("asked", "offset", "found_time"),
    [
        (0, 0, 0),
        (5, 1, 10),
        (10, 1, 10),
        (11, 2, 20),
        (21, 3, 30),
        (40, 4, 40),
    ],
)
def test_v1_plus_by_timestamp(broker, version, asked, offset, found_time):
    fill(broker)
    answer = list_offsets(broker, version, BASE_TIME_MS + asked)
    assert (answer.error_code, answer.offset, answer.timestamp) == (
        ErrorCode.NONE,
        offset,
        BASE_TIME_MS + found_time,
    )


def test_v1_plus_by_timestamp_after_every_record(broker):
    fill(broker)
    answer = list_offsets(broker, 4, BASE_TIME_MS + 41)
    assert (answer.error_code, answer.offset, answer.timestamp) == (ErrorCode.NONE, -1, -1)


def test_by_timestamp_skips_deleted_records(broker):
    fill(broker)
    broker.call(
        ApiKey.DELETE_RECORDS,
        2,
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsTopic(
                    name="t", partitions=[DeleteRecordsPartition(partition_index=0, offset=2)]
                )
            ],
            timeout_ms=1000,
        ),
    )
    answer = list_offsets(broker, 4, BASE_TIME_MS)
    assert (answer.offset, answer.timestamp) == (2, BASE_TIME_MS + 20)
    assert list_offsets(broker, 4, EARLIEST).offset == 2


def test_v7_max_timestamp(broker):
    fill(broker)
    answer = list_offsets(broker, 7, MAX_TIMESTAMP)
    assert (answer.error_code, answer.offset, answer.timestamp) == (
        ErrorCode.NONE,
        4,
        BASE_TIME_MS + 40,
    )


def test_v7_max_timestamp_inside_a_batch(broker):
    """Kafka 3.9 answers with the offset of the record holding the max timestamp,
    not the last offset of its batch (KAFKA-16310)."""
    broker.create_topic("t")
    times = [BASE_TIME_MS, BASE_TIME_MS + 500, BASE_TIME_MS + 100]
    broker.produce("t", make_batch([b"a", b"b", b"c"], timestamps=times))
    answer = list_offsets(broker, 7, MAX_TIMESTAMP)
    assert (answer.offset, answer.timestamp) == (1, BASE_TIME_MS + 500)


def test_v7_max_timestamp_on_an_empty_partition(broker):
    broker.create_topic("t")
    answer = list_offsets(broker, 7, MAX_TIMESTAMP)
    assert (answer.error_code, answer.offset, answer.timestamp) == (ErrorCode.NONE, -1, -1)


def test_log_append_time_topic_is_found_by_append_time(broker):
    broker.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
    broker.clock.now_ms = BASE_TIME_MS + 1_000
    broker.produce("t", make_batch([b"a", b"b"], timestamps=[1, 2]))
    broker.clock.now_ms = BASE_TIME_MS + 2_000
    broker.produce("t", make_batch([b"c"], timestamps=[3]))
    answer = list_offsets(broker, 4, BASE_TIME_MS + 1_500)
    assert (answer.offset, answer.timestamp) == (2, BASE_TIME_MS + 2_000)
    first = list_offsets(broker, 4, 0)
    assert (first.offset, first.timestamp) == (0, BASE_TIME_MS + 1_000)


@pytest.mark.parametrize("version", [0, 1, 7])
def test_unknown_topic_and_partition(broker, version):
    broker.create_topic("t")
    assert list_offsets(broker, version, LATEST, topic="nope").error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert list_offsets(broker, version, LATEST, partition=1).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


def test_v7_max_timestamp_of_a_log_append_time_batch_is_its_first_offset(broker):
    """Every record of a LogAppendTime batch carries the append time: Kafka 3.9 answers
    with the first of them."""
    broker.create_topic("t", configs={"message.timestamp.type": "LogAppendTime"})
    broker.clock.now_ms = BASE_TIME_MS + 1_000
    broker.produce("t", make_batch([b"x"]))
    broker.clock.now_ms = BASE_TIME_MS + 2_000
    broker.produce("t", make_batch([b"a", b"b", b"c"]))
    answer = list_offsets(broker, 7, MAX_TIMESTAMP)
    assert (answer.offset, answer.timestamp) == (1, BASE_TIME_MS + 2_000)
