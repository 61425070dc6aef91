"""Internal topics belong to the broker; metadata saves that fail change nothing and
answer a code clients retry; ``__consumer_offsets`` data that cannot be read is
passed over at startup."""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Iterator

import pytest

from tests.handlers.support import TestBroker, make_batch
from tests.handlers.test_groups import commit, fetch, join_request
from tests.handlers.test_metadata import metadata
from tests.handlers.test_topics_admin import RESOURCE_TOPIC, creatable, create, describe
from tests.storage.helpers import spoil_header, unparsable_batch
from wirekafka.broker.topics import INTERNAL_TOPICS, OFFSETS_TOPIC
from wirekafka.groups.offsets_topic import partition_for_group
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.delete_groups import DeleteGroupsRequest
from wirekafka.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from wirekafka.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from wirekafka.protocol.messages.describe_groups import DescribeGroupsRequest
from wirekafka.protocol.messages.find_coordinator import FindCoordinatorRequest
from wirekafka.protocol.messages.heartbeat import HeartbeatRequest
from wirekafka.protocol.messages.init_producer_id import InitProducerIdRequest
from wirekafka.protocol.messages.leave_group import LeaveGroupRequest
from wirekafka.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from wirekafka.protocol.messages.sync_group import SyncGroupRequest
from wirekafka.storage.cluster_metadata import CLUSTER_METADATA_FILE, TopicDefinition

PROPS = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "4"}
TRANSACTION_STATE = "__transaction_state"


@pytest.fixture
def ib(tmp_path) -> Iterator[TestBroker]:
    made = TestBroker(tmp_path / "logs", PROPS)
    yield made
    made.close()


def stored_topics(broker: TestBroker) -> dict:
    path = broker.directory / CLUSTER_METADATA_FILE
    return json.loads(path.read_text())["topics"] if path.exists() else {}


def find_coordinator(broker: TestBroker, version: int, group: str = "g"):
    if version >= 4:
        request = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        [found] = broker.call(ApiKey.FIND_COORDINATOR, version, request).coordinators
        return found
    return broker.call(ApiKey.FIND_COORDINATOR, version, FindCoordinatorRequest(key=group))


def delete_topics(broker: TestBroker, version: int, *names: str):
    if version >= 6:
        request = DeleteTopicsRequest(topics=[DeleteTopicState(name=n) for n in names])
    else:
        request = DeleteTopicsRequest(topic_names=list(names), timeout_ms=1000)
    return broker.call(ApiKey.DELETE_TOPICS, version, request).responses


def delete_records(broker: TestBroker, topic: str, partition: int, offset: int):
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsTopic(
                name=topic,
                partitions=[DeleteRecordsPartition(partition_index=partition, offset=offset)],
            )
        ],
        timeout_ms=1000,
    )
    [topic_result] = broker.call(ApiKey.DELETE_RECORDS, 2, request).topics
    [result] = topic_result.partitions
    return result.error_code, result.low_watermark


def init_producer_id(broker: TestBroker):
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    return broker.call(ApiKey.INIT_PRODUCER_ID, 4, request)


# Clients cannot create, delete or trim internal topics


@pytest.mark.parametrize("name", sorted(INTERNAL_TOPICS))
@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize("version", [0, 5, 7])
def test_clients_cannot_create_internal_topics(ib, name, validate_only, version):
    [result] = create(ib, version, creatable(name, 4), validate_only=validate_only)
    assert result.error_code == ErrorCode.INVALID_REQUEST
    if version >= 1:
        assert result.error_message == (
            f"Creation of internal topic {name} is prohibited: the broker creates it"
        )
    assert ib.ctx.topics.topic(name) is None
    assert stored_topics(ib) == {}
    assert not list(ib.directory.glob(f"{name}-*"))


def test_creating_the_offsets_topic_is_refused_once_it_exists_too(ib):
    assert find_coordinator(ib, 3).error_code == ErrorCode.NONE
    [result] = create(ib, 7, creatable(OFFSETS_TOPIC, 1))
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) == TopicDefinition(
        OFFSETS_TOPIC, 4, {"cleanup.policy": "compact", "segment.bytes": "104857600"}
    )


@pytest.mark.parametrize("version", [0, 4, 5, 6])
def test_clients_cannot_delete_internal_topics(ib, version):
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    ib.create_topic("t")
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    results = delete_topics(ib, version, OFFSETS_TOPIC, TRANSACTION_STATE)
    assert [(r.name, r.error_code) for r in results] == [
        (OFFSETS_TOPIC, ErrorCode.INVALID_TOPIC_EXCEPTION),
        (TRANSACTION_STATE, ErrorCode.INVALID_TOPIC_EXCEPTION),
    ]
    if version >= 5:
        assert [r.error_message for r in results] == [
            f"Cannot delete internal topic {name}: it belongs to the broker"
            for name in (OFFSETS_TOPIC, TRANSACTION_STATE)
        ]
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) is not None
    assert OFFSETS_TOPIC in stored_topics(ib)
    assert len(ib.ctx.logs.all_logs()) == 5  # the 4 offsets partitions and t-0
    assert fetch(ib, 5, {"t": [0]})[("t", 0)][0] == 5


def test_clients_cannot_delete_records_of_internal_topics(ib):
    ib.create_topic("t")
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    partition = partition_for_group("g", 4)
    end = ib.log_end(OFFSETS_TOPIC, partition)
    assert end > 0
    for offset in (-1, end):
        assert delete_records(ib, OFFSETS_TOPIC, partition, offset) == (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            -1,
        )
    assert ib.log(OFFSETS_TOPIC, partition).log_start_offset == 0
    assert delete_records(ib, OFFSETS_TOPIC, 4, -1)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert delete_records(ib, TRANSACTION_STATE, 0, -1)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    ib.restart()
    assert fetch(ib, 5, {"t": [0]})[("t", 0)][0] == 5


# Metadata does not create them; the broker does, its way


@pytest.mark.parametrize("version", [1, 4, 12])
def test_metadata_does_not_create_internal_topics(ib, version):
    response = metadata(ib, version, [OFFSETS_TOPIC, TRANSACTION_STATE, "plain"])
    assert [(t.name, t.error_code, t.is_internal, len(t.partitions)) for t in response.topics] == [
        (OFFSETS_TOPIC, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True, 0),
        (TRANSACTION_STATE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True, 0),
        ("plain", ErrorCode.NONE, False, 1),  # auto-created as before
    ]
    assert sorted(ib.ctx.topics.names()) == ["plain"]
    assert sorted(stored_topics(ib)) == ["plain"]


def test_the_broker_creates_the_offsets_topic_compacted_with_its_partition_count(ib):
    assert find_coordinator(ib, 4).error_code == ErrorCode.NONE
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) == TopicDefinition(
        OFFSETS_TOPIC, 4, {"cleanup.policy": "compact", "segment.bytes": "104857600"}
    )
    assert sorted(lg.partition for lg in ib.ctx.logs.all_logs()) == [0, 1, 2, 3]
    assert all(lg.config.compact for lg in ib.ctx.logs.all_logs())
    [result] = describe(ib, 4, (RESOURCE_TOPIC, OFFSETS_TOPIC, ["cleanup.policy"]))
    assert [(c.name, c.value) for c in result.configs] == [("cleanup.policy", "compact")]
    [topic] = metadata(ib, 12, [OFFSETS_TOPIC]).topics
    assert (topic.error_code, topic.is_internal, len(topic.partitions)) == (ErrorCode.NONE, True, 4)


def test_a_client_made_offsets_topic_gets_compaction_back_at_startup(ib, caplog):
    # what the old broker let a client do: __consumer_offsets with 2 partitions, not compacted
    ib.ctx.topics.metadata.put_topics([TopicDefinition(OFFSETS_TOPIC, 2, {"retention.ms": "99"})])
    for partition in range(2):
        ib.ctx.logs.get_or_create_log(
            OFFSETS_TOPIC, partition, ib.ctx.topics.log_config(OFFSETS_TOPIC)
        )
    assert not ib.log(OFFSETS_TOPIC, 0).config.compact
    with caplog.at_level(logging.WARNING, logger="wirekafka.topics"):
        ib.restart()
    assert "restoring compaction, keeping its 2 partitions" in caplog.text
    expected = TopicDefinition(
        OFFSETS_TOPIC,
        2,  # not offsets.topic.num.partitions: groups are placed by the count it has
        {"cleanup.policy": "compact", "segment.bytes": "104857600", "retention.ms": "99"},
    )
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) == expected
    assert stored_topics(ib)[OFFSETS_TOPIC]["configs"] == expected.configs
    assert all(ib.log(OFFSETS_TOPIC, p).config.compact for p in range(2))
    assert ib.ctx.groups.offsets_log.partitions == 2
    ib.create_topic("t")
    assert commit(ib, 2, {("t", 0): 3}) == {("t", 0): ErrorCode.NONE}
    assert ib.log_end(OFFSETS_TOPIC, partition_for_group("g", 2)) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="wirekafka.topics"):
        ib.restart()
    assert "restoring compaction" not in caplog.text  # once is enough


def test_an_offsets_topic_found_only_on_disk_is_adopted_compacted(ib):
    ib.create_topic("t")
    assert commit(ib, 2, {("t", 0): 3}) == {("t", 0): ErrorCode.NONE}
    ib.close()
    (ib.directory / CLUSTER_METADATA_FILE).unlink()
    ib.restart()
    topic = ib.ctx.topics.topic(OFFSETS_TOPIC)
    assert topic is not None and topic.partitions == 4
    assert topic.configs["cleanup.policy"] == "compact"
    assert all(ib.log(OFFSETS_TOPIC, p).config.compact for p in range(4))
    assert fetch(ib, 5, {"t": [0]})[("t", 0)][0] == 3


# A metadata save that fails changes nothing and answers a retriable code


@pytest.mark.parametrize("version", [0, 3, 4])
def test_find_coordinator_answers_coordinator_not_available_when_the_topic_cannot_be_saved(
    ib, full_disk, version
):
    full_disk["full"] = True
    found = find_coordinator(ib, version)
    assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (found.node_id, found.port) == (-1, -1)
    if version >= 1:
        assert found.error_message == f"{OFFSETS_TOPIC} could not be created; try again"
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) is None
    assert ib.ctx.logs.all_logs() == []
    assert stored_topics(ib) == {}
    full_disk["full"] = False
    assert find_coordinator(ib, version).error_code == ErrorCode.NONE
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) is not None
    assert OFFSETS_TOPIC in stored_topics(ib)


def test_group_apis_answer_coordinator_not_available_when_the_topic_cannot_be_saved(ib, full_disk):
    ib.create_topic("t")
    full_disk["full"] = True
    unavailable = ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert ib.call(ApiKey.JOIN_GROUP, 5, join_request()).error_code == unavailable
    sync = SyncGroupRequest(group_id="g", generation_id=1, member_id="m", assignments=[])
    assert ib.call(ApiKey.SYNC_GROUP, 3, sync).error_code == unavailable
    beat = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    assert ib.call(ApiKey.HEARTBEAT, 3, beat).error_code == unavailable
    leave = LeaveGroupRequest(group_id="g", member_id="m")
    assert ib.call(ApiKey.LEAVE_GROUP, 1, leave).error_code == unavailable
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): unavailable}
    asked = OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
    )
    assert ib.call(ApiKey.OFFSET_FETCH, 5, asked).error_code == unavailable
    [described] = ib.call(ApiKey.DESCRIBE_GROUPS, 3, DescribeGroupsRequest(groups=["g"])).groups
    assert described.error_code == unavailable
    [deleted] = ib.call(ApiKey.DELETE_GROUPS, 1, DeleteGroupsRequest(groups_names=["g"])).results
    assert deleted.error_code == unavailable
    assert ib.ctx.topics.topic(OFFSETS_TOPIC) is None
    full_disk["full"] = False
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}


def test_auto_creation_that_cannot_be_saved_answers_leader_not_available(ib, full_disk):
    full_disk["full"] = True
    [topic] = metadata(ib, 12, ["auto"]).topics
    assert (topic.name, topic.error_code, topic.partitions) == (
        "auto",
        ErrorCode.LEADER_NOT_AVAILABLE,
        [],
    )
    assert ib.ctx.topics.names() == []
    assert not (ib.directory / "auto-0").exists()
    full_disk["full"] = False
    [topic] = metadata(ib, 12, ["auto"]).topics
    assert (topic.error_code, len(topic.partitions)) == (ErrorCode.NONE, 1)
    assert ib.produce("auto", make_batch([b"x"])).error_code == ErrorCode.NONE


def test_create_topics_that_cannot_be_saved_answers_a_storage_error(ib, full_disk):
    full_disk["full"] = True
    [result] = create(ib, 7, creatable("new", 3))
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert result.error_message is not None and "'new' could not be recorded" in (
        result.error_message
    )
    assert "No space left on device" in result.error_message
    assert ib.ctx.topics.topic("new") is None
    assert not list(ib.directory.glob("new-*"))
    full_disk["full"] = False
    [result] = create(ib, 7, creatable("new", 3))
    assert result.error_code == ErrorCode.NONE


def test_delete_topics_that_cannot_be_saved_answers_a_storage_error(ib, full_disk):
    ib.create_topic("kept")
    assert ib.produce("kept", make_batch([b"x"])).error_code == ErrorCode.NONE
    full_disk["full"] = True
    [result] = delete_topics(ib, 6, "kept")
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert result.error_message is not None and "No space left" in result.error_message
    assert ib.ctx.topics.topic("kept") is not None
    assert ib.fetch("kept").records  # its data is still there
    full_disk["full"] = False
    [result] = delete_topics(ib, 6, "kept")
    assert result.error_code == ErrorCode.NONE
    assert ib.ctx.topics.topic("kept") is None


def test_init_producer_id_that_cannot_record_a_block_answers_coordinator_load_in_progress(
    ib, full_disk
):
    full_disk["full"] = True
    response = init_producer_id(ib)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        -1,
        -1,
    )
    full_disk["full"] = False
    response = init_producer_id(ib)
    assert (response.error_code, response.producer_id) == (ErrorCode.NONE, 0)
    assert (
        json.loads((ib.directory / CLUSTER_METADATA_FILE).read_text())["producer_id_block_end"]
        == 1000
    )


def test_a_partition_dir_that_cannot_be_made_is_made_on_first_use(ib, monkeypatch):
    logs = ib.ctx.logs
    real = logs.get_or_create_log
    failing = {"on": True}

    def get_or_create_log(topic, partition, config=None):
        if failing["on"]:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(topic, partition, config)

    monkeypatch.setattr(logs, "get_or_create_log", get_or_create_log)
    [result] = create(ib, 7, creatable("late", 2))
    assert result.error_code == ErrorCode.NONE  # recorded: the topic exists
    assert ib.ctx.topics.topic("late") == TopicDefinition("late", 2, {})
    assert not list(ib.directory.glob("late-*"))
    produced = ib.produce("late", make_batch([b"x"]))  # still no file descriptor: an error
    assert produced.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    failing["on"] = False
    assert ib.produce("late", make_batch([b"x"]), partition=1).error_code == ErrorCode.NONE
    assert ib.log_end("late", 1) == 1
    ib.restart()
    assert ib.ctx.topics.topic("late") == TopicDefinition("late", 2, {})
    assert ib.produce("late", make_batch([b"y"])).base_offset == 0


# __consumer_offsets data that cannot be read never stops the broker


def test_a_batch_of_junk_in_the_offsets_topic_is_skipped_at_startup(ib, caplog):
    ib.create_topic("t", 3)
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    partition = partition_for_group("g", 4)
    junk = ib.log(OFFSETS_TOPIC, partition).append(bytearray(unparsable_batch([b"a", b"b"])))
    assert commit(ib, 2, {("t", 1): 6}) == {("t", 1): ErrorCode.NONE}
    with caplog.at_level(logging.ERROR, logger="wirekafka.storage"):
        ib.restart()
    reports = [r.getMessage() for r in caplog.records if "cannot be parsed" in r.getMessage()]
    assert reports == [
        f"{OFFSETS_TOPIC}-{partition}: the batch at offsets {junk.first_offset}.."
        f"{junk.last_offset} holds records that cannot be parsed "
        "(record length is a varint longer than 5 bytes); skipping it"
    ]
    assert commit(ib, 2, {("t", 2): 7}) == {("t", 2): ErrorCode.NONE}
    ib.restart()
    assert {tp: got[0] for tp, got in fetch(ib, 5, {"t": [0, 1, 2]}).items()} == {
        ("t", 0): 5,
        ("t", 1): 6,
        ("t", 2): 7,
    }


def test_an_offsets_segment_that_cannot_be_read_to_its_end_is_skipped_at_startup(ib, caplog):
    ib.create_topic("t", 3)
    partition = partition_for_group("g", 4)
    assert commit(ib, 2, {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    assert commit(ib, 2, {("t", 1): 6}) == {("t", 1): ErrorCode.NONE}
    ib.log(OFFSETS_TOPIC, partition).roll()
    assert commit(ib, 2, {("t", 2): 7}) == {("t", 2): ErrorCode.NONE}
    spoil_header(ib.log(OFFSETS_TOPIC, partition), 1)  # the commit of ("t", 1)
    with caplog.at_level(logging.ERROR, logger="wirekafka.groups"):
        ib.restart()
    assert f"{OFFSETS_TOPIC}-{partition}: cannot read from offset 1" in caplog.text
    assert {tp: got[0] for tp, got in fetch(ib, 5, {"t": [0, 1, 2]}).items()} == {
        ("t", 0): 5,
        ("t", 1): -1,  # lost with the header that cannot be read
        ("t", 2): 7,
    }
