"""DeleteRecords, OffsetForLeaderEpoch, ApiVersions and FindCoordinator."""

from __future__ import annotations

import logging

import pytest

from tests.handlers.support import TestBroker, make_batch
from wirekafka.handlers import offset_for_leader_epoch
from wirekafka.log_limiter import LogLimiter
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest
from wirekafka.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from wirekafka.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from wirekafka.protocol.messages.find_coordinator import FindCoordinatorRequest
from wirekafka.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from wirekafka.zk.cluster import BrokerNotAvailable, NotController, StaleBrokerEpoch
from wirekafka.zk.session import ZooKeeperError
from wirekafka.zk.znodes import PartitionState

# DeleteRecords


def delete_records(broker: TestBroker, version: int, *asked: tuple[str, int, int]):
    topics: dict[str, list[DeleteRecordsPartition]] = {}
    for topic, partition, offset in asked:
        topics.setdefault(topic, []).append(
            DeleteRecordsPartition(partition_index=partition, offset=offset)
        )
    request = DeleteRecordsRequest(
        topics=[DeleteRecordsTopic(name=n, partitions=p) for n, p in topics.items()],
        timeout_ms=1000,
    )
    response = broker.call(ApiKey.DELETE_RECORDS, version, request)
    return [
        (t.name, p.partition_index, p.error_code, p.low_watermark)
        for t in response.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_log_start(broker, version):
    broker.create_topic("t", 2)
    broker.produce("t", make_batch([b"a", b"b", b"c", b"d", b"e"]))
    broker.produce("t", make_batch([b"x", b"y"]), partition=1)
    answers = delete_records(broker, version, ("t", 0, 3), ("t", 1, -1))
    assert answers == [("t", 0, ErrorCode.NONE, 3), ("t", 1, ErrorCode.NONE, 2)]
    assert broker.log("t", 0).log_start_offset == 3
    assert broker.log("t", 1).log_start_offset == 2
    assert broker.fetch("t", 2).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert broker.fetch("t", 3).log_start_offset == 3


def test_delete_records_never_moves_back(broker):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b", b"c"]))
    assert delete_records(broker, 2, ("t", 0, 2)) == [("t", 0, ErrorCode.NONE, 2)]
    assert delete_records(broker, 2, ("t", 0, 1)) == [("t", 0, ErrorCode.NONE, 2)]
    assert broker.log("t").log_start_offset == 2


def test_delete_records_beyond_the_end_is_out_of_range(broker):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b"]))
    assert delete_records(broker, 2, ("t", 0, 3), ("t", 0, -2)) == [
        ("t", 0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
        ("t", 0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
    ]
    assert broker.log("t").log_start_offset == 0


def test_delete_records_unknown_topic_and_partition(broker):
    broker.create_topic("t")
    assert delete_records(broker, 2, ("nope", 0, 0), ("t", 4, 0)) == [
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("t", 4, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]


def test_deleted_records_stay_deleted_after_a_restart(broker):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b", b"c"]))
    delete_records(broker, 2, ("t", 0, 2))
    broker.restart()
    assert broker.log("t").log_start_offset == 2
    assert broker.fetch("t", 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


# OffsetForLeaderEpoch


def end_offsets(broker: TestBroker, version: int, *asked: tuple[str, int, int]):
    topics: dict[str, list[OffsetForLeaderPartition]] = {}
    for topic, partition, epoch in asked:
        topics.setdefault(topic, []).append(
            OffsetForLeaderPartition(partition=partition, leader_epoch=epoch)
        )
    request = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[OffsetForLeaderTopic(topic=n, partitions=p) for n, p in topics.items()],
    )
    response = broker.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, request)
    return [
        (t.topic, p.partition, p.error_code, p.leader_epoch, p.end_offset)
        for t in response.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_offset_for_leader_epoch(broker, version):
    broker.create_topic("t", 2)
    broker.produce("t", make_batch([b"a", b"b", b"c"]))
    assert end_offsets(broker, version, ("t", 0, 0), ("t", 1, 0), ("t", 0, -1), ("x", 0, 0)) == [
        ("t", 0, ErrorCode.NONE, 0, 3),
        ("t", 1, ErrorCode.NONE, 0, 0),
        ("t", 0, ErrorCode.NONE, -1, -1),
        ("x", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    ]


def answers_told(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "OffsetForLeaderEpoch" in r.getMessage()]


def fresh_answer_log(monkeypatch: pytest.MonkeyPatch, clock: list[float]) -> None:
    """The handler's limit on logged answers anew, on a clock the test moves."""
    limiter = LogLimiter(
        offset_for_leader_epoch.LOGGED_ANSWERS_WINDOW_S,
        lines=offset_for_leader_epoch.MAX_LOGGED_ANSWERS,
        clock=lambda: clock[0],
    )
    monkeypatch.setattr(offset_for_leader_epoch, "answers_logged", limiter)


def test_a_clients_offset_for_leader_epoch_and_its_answer_are_logged(
    broker: TestBroker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b", b"c"]))
    caplog.set_level(logging.INFO, logger="wirekafka.handlers")
    fresh_answer_log(monkeypatch, [0.0])  # none logged lately
    end_offsets(broker, 2, ("t", 0, 0), ("x", 0, 0))
    told = answers_told(caplog)
    assert len(told) == 2
    assert told[0].startswith("t-0: OffsetForLeaderEpoch from client ")
    assert told[0].endswith("for epoch 0 (its current leader epoch -1): epoch 0 ends at offset 3")
    assert told[1].endswith(": UNKNOWN_TOPIC_OR_PARTITION")
    caplog.clear()
    request = OffsetForLeaderEpochRequest(
        replica_id=1,  # a follower's: its truncations are logged where they happen
        topics=[
            OffsetForLeaderTopic(
                topic="t", partitions=[OffsetForLeaderPartition(partition=0, leader_epoch=0)]
            )
        ],
    )
    broker.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, request)
    assert not answers_told(caplog)


def test_a_client_asking_in_a_loop_does_not_fill_the_log(
    broker: TestBroker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.create_topic("t")
    caplog.set_level(logging.INFO, logger="wirekafka.handlers")
    clock = [0.0]
    fresh_answer_log(monkeypatch, clock)
    for _ in range(offset_for_leader_epoch.MAX_LOGGED_ANSWERS + 5):
        end_offsets(broker, 2, ("t", 0, 0))
    assert len(answers_told(caplog)) == offset_for_leader_epoch.MAX_LOGGED_ANSWERS
    clock[0] += offset_for_leader_epoch.LOGGED_ANSWERS_WINDOW_S + 1
    end_offsets(broker, 2, ("t", 0, 0), ("t", 0, 0))  # a new window
    told = answers_told(caplog)
    assert len(told) == offset_for_leader_epoch.MAX_LOGGED_ANSWERS + 2
    assert told[-2].endswith(" (and 5 more since the last report)")
    assert told[-1].endswith("ends at offset 0")  # nothing left out since told[-2]


def test_offset_for_leader_epoch_v0_has_no_epoch_field(broker):
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b"]))
    assert end_offsets(broker, 0, ("t", 0, 0)) == [("t", 0, ErrorCode.NONE, -1, 2)]


@pytest.mark.parametrize("leader", [0, 1])
def test_offset_for_leader_epoch_is_answered_by_the_leader_only(
    broker: TestBroker, leader: int
) -> None:
    """The cluster names this broker (0) leader, but its replica manager may not
    have taken over yet (``leader`` 1: it still follows broker 1). A follower's
    log end is not the epoch's end: a consumer would think its position gone."""
    broker.create_topic("t")
    broker.produce("t", make_batch([b"a", b"b"]))
    broker.join_cluster(PartitionState(leader, 3, (0, 1), 1))
    answer = end_offsets(broker, 4, ("t", 0, 0))
    if leader == 0:
        assert answer == [("t", 0, ErrorCode.NONE, 0, 2)]
    else:
        assert answer == [("t", 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)]


# ApiVersions

EXPECTED_RANGES = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 12),
    ApiKey.LIST_OFFSETS: (0, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.CONTROLLED_SHUTDOWN: (0, 3),  # as Kafka 3.9 in ZooKeeper mode, in both modes
}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions(broker, version):
    request = ApiVersionsRequest(client_software_name="tests", client_software_version="1.0")
    response = broker.call(ApiKey.API_VERSIONS, version, request)
    assert response.error_code == ErrorCode.NONE
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    for key, expected in EXPECTED_RANGES.items():
        assert advertised[key] == expected, key.name
    keys = [k.api_key for k in response.api_keys]
    assert keys == sorted(keys)
    assert len(keys) == len(set(keys))


# FindCoordinator


@pytest.mark.parametrize("version", [0, 1, 3])
def test_find_coordinator_names_this_broker(broker, version):
    request = FindCoordinatorRequest(key="group", key_type=0)
    response = broker.call(ApiKey.FIND_COORDINATOR, version, request)
    assert response.error_code == ErrorCode.NONE
    assert (response.node_id, response.host, response.port) == (0, "localhost", 9092)
    assert broker.ctx.topics.topic("__consumer_offsets") is not None  # created on first use


def test_find_coordinator_v4_answers_every_key(broker):
    request = FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"])
    response = broker.call(ApiKey.FIND_COORDINATOR, 4, request)
    assert [(c.key, c.error_code, c.node_id) for c in response.coordinators] == [
        ("g1", ErrorCode.NONE, 0),
        ("g2", ErrorCode.NONE, 0),
    ]


def test_find_coordinator_refuses_transaction_keys(broker):
    request = FindCoordinatorRequest(key_type=1, coordinator_keys=["txn"])
    response = broker.call(ApiKey.FIND_COORDINATOR, 4, request)
    assert [c.error_code for c in response.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]


# ControlledShutdown


def shutdown_answer(broker: TestBroker, version: int, broker_id: int, epoch: int = -1) -> tuple:
    request = ControlledShutdownRequest(broker_id=broker_id, broker_epoch=epoch)
    response = broker.call(ApiKey.CONTROLLED_SHUTDOWN, version, request)
    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
    return response.error_code, remaining


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_controlled_shutdown_embedded_has_nothing_to_move(broker, version):
    broker.create_topic("t", 2)
    assert shutdown_answer(broker, version, 0) == (ErrorCode.NONE, [])
    assert shutdown_answer(broker, version, 5) == (ErrorCode.BROKER_NOT_AVAILABLE, [])


class FakeController:
    """The ZooKeeper cluster as the handler sees it: who controls, and the controller's
    answer (the partitions still led, or the exception it raises)."""

    def __init__(self, controller_id: int, answer: list[tuple[str, int]] | Exception) -> None:
        self.id = controller_id
        self.answer = answer
        self.asked: list[tuple[int, int]] = []

    def controller_id(self) -> int:
        return self.id

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        self.asked.append((broker_id, broker_epoch))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_controlled_shutdown_is_answered_by_the_controller(broker):
    fake = FakeController(0, [("t", 1)])
    broker.ctx.zookeeper = fake  # type: ignore[assignment]
    assert shutdown_answer(broker, 3, 2, 77) == (ErrorCode.NONE, [("t", 1)])
    assert shutdown_answer(broker, 1, 2, 77) == (ErrorCode.NONE, [("t", 1)])
    assert fake.asked == [(2, 77), (2, -1)]  # v0 and v1 carry no broker epoch
    fake.id = 1
    assert shutdown_answer(broker, 3, 2) == (ErrorCode.NOT_CONTROLLER, [])
    fake.id = 0
    for error, code in [
        (NotController("moved"), ErrorCode.NOT_CONTROLLER),
        (BrokerNotAvailable("gone"), ErrorCode.BROKER_NOT_AVAILABLE),
        (StaleBrokerEpoch("old"), ErrorCode.STALE_BROKER_EPOCH),
        (ZooKeeperError("down"), ErrorCode.UNKNOWN_SERVER_ERROR),
    ]:
        fake.answer = error
        assert shutdown_answer(broker, 2, 2, 5) == (code, [])
