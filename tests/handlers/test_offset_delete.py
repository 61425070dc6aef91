"""OffsetDelete: a group's offsets of some partitions removed, as Kafka's coordinator does."""

from __future__ import annotations

import struct

import pytest

from tests.handlers.support import TestBroker
from tests.handlers.test_groups import PROPS, commit, fetch, join, offsets_records, sync
from wirekafka.groups.consumer_protocol import subscribed_topics
from wirekafka.groups.offsets_topic import OffsetCommitKey
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from wirekafka.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)


@pytest.fixture
def gb(tmp_path):
    made = TestBroker(tmp_path / "logs", PROPS)
    made.create_topic("a", 2)
    made.create_topic("b", 1)
    yield made
    made.close()


def subscription(*topics: str, version: int = 1) -> bytes:
    out = struct.pack(">hi", version, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1) + b"\x00\x00\x00\x00"  # user data, owned partitions


def delete_offsets(broker: TestBroker, group: str, asked: dict[str, list[int]]):
    request = OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequestTopic(
                name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps]
            )
            for t, ps in asked.items()
        ],
    )
    response = broker.call(ApiKey.OFFSET_DELETE, 0, request)
    return response.error_code, {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def committed(broker: TestBroker, group: str = "g") -> dict[tuple[str, int], int]:
    return {tp: offset for tp, (offset, _, _) in fetch(broker, 8, None, group).items()}


def test_subscribed_topics_parse_and_refuse_junk():
    assert subscribed_topics(subscription("a", "bb")) == {"a", "bb"}
    assert subscribed_topics(subscription()) == set()
    assert subscribed_topics(b"m") is None
    assert subscribed_topics(subscription("abc")[:9]) is None
    assert subscribed_topics(struct.pack(">hi", 0, 1) + b"\xff\xff") is None


def test_an_empty_group_loses_the_offsets_asked_for(gb):
    assert commit(gb, 8, {("a", 0): 5, ("a", 1): 6, ("b", 0): 7}) == {
        ("a", 0): 0, ("a", 1): 0, ("b", 0): 0
    }  # fmt: skip
    error, partitions = delete_offsets(gb, "g", {"a": [0, 1], "b": [3], "gone": [0]})
    assert error == ErrorCode.NONE
    assert partitions == {
        ("a", 0): ErrorCode.NONE,
        ("a", 1): ErrorCode.NONE,
        ("b", 3): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert committed(gb) == {("b", 0): 7}
    tombstones = [key for key, value in offsets_records(gb, "g") if value is None]
    assert tombstones == [
        OffsetCommitKey(group="g", topic="a", partition=0),
        OffsetCommitKey(group="g", topic="a", partition=1),
    ]
    gb.restart()
    assert committed(gb) == {("b", 0): 7}


def test_a_consumer_group_keeps_the_offsets_of_subscribed_topics(gb):
    first = join(gb, 7, meta=subscription("a"))
    joined = join(gb, 7, member_id=first.member_id, meta=subscription("a"))
    assert joined.error_code == ErrorCode.NONE
    member, generation = joined.member_id, joined.generation_id
    assert sync(gb, 5, member, generation, {member: b""}).error_code == ErrorCode.NONE
    assert commit(gb, 8, {("a", 0): 1, ("b", 0): 2}, generation=generation, member=member) == {
        ("a", 0): 0, ("b", 0): 0
    }  # fmt: skip
    error, partitions = delete_offsets(gb, "g", {"a": [0], "b": [0]})
    assert error == ErrorCode.NONE
    assert partitions == {("a", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("b", 0): ErrorCode.NONE}
    assert committed(gb) == {("a", 0): 1}


def test_other_groups_with_members_are_refused_whole(gb):
    request = JoinGroupRequest(
        group_id="c",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        member_id="",
        protocol_type="connect",
        protocols=[JoinGroupRequestProtocol(name="sessioned", metadata=b"m")],
    )
    first = gb.call(ApiKey.JOIN_GROUP, 7, request)
    request.member_id = first.member_id
    assert gb.call(ApiKey.JOIN_GROUP, 7, request).error_code == ErrorCode.NONE
    assert delete_offsets(gb, "c", {"a": [0]}) == (ErrorCode.NON_EMPTY_GROUP, {})


def test_unknown_and_invalid_groups(gb):
    assert delete_offsets(gb, "nobody", {"a": [0]}) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
    assert delete_offsets(gb, "", {"a": [0]}) == (ErrorCode.INVALID_GROUP_ID, {})
