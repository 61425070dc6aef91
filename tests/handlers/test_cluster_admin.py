"""CreatePartitions, DescribeCluster and DescribeLogDirs through the real codec."""

from __future__ import annotations

import pytest

from tests.handlers.support import TestBroker, make_batch
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from wirekafka.protocol.messages.describe_cluster import DescribeClusterRequest
from wirekafka.protocol.messages.describe_log_dirs import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
)
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic


def add_partitions(
    broker: TestBroker,
    *topics: tuple[str, int, list[list[int]] | None],
    version: int = 3,
    validate_only: bool = False,
) -> list[tuple[str, int, str | None]]:
    request = CreatePartitionsRequest(
        topics=[
            CreatePartitionsTopic(
                name=name,
                count=count,
                assignments=None
                if assignments is None
                else [CreatePartitionsAssignment(broker_ids=ids) for ids in assignments],
            )
            for name, count, assignments in topics
        ],
        timeout_ms=1000,
        validate_only=validate_only,
    )
    response = broker.call(ApiKey.CREATE_PARTITIONS, version, request)
    return [(r.name, r.error_code, r.error_message) for r in response.results]


def partition_count(broker: TestBroker, topic: str) -> int:
    request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)])
    [described] = broker.call(ApiKey.METADATA, 12, request).topics
    assert described.error_code == ErrorCode.NONE
    return len(described.partitions)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_partitions_adds_partitions_that_take_records(broker, version):
    broker.create_topic("t", 2)
    assert add_partitions(broker, ("t", 5, None), version=version) == [("t", 0, None)]
    assert partition_count(broker, "t") == 5
    assert (broker.directory / "t-4").is_dir()
    assert broker.produce("t", make_batch([b"v"]), partition=4).error_code == ErrorCode.NONE
    broker.restart()
    assert partition_count(broker, "t") == 5
    assert broker.log_end("t", 4) == 1


def test_create_partitions_with_assignments(broker):
    broker.create_topic("t", 1)
    assert add_partitions(broker, ("t", 3, [[0], [0]])) == [("t", 0, None)]
    assert partition_count(broker, "t") == 3


@pytest.mark.parametrize(
    ("count", "assignments", "code", "message"),
    [
        (2, None, ErrorCode.INVALID_PARTITIONS,
         "Topic currently has 3 partitions, which is higher than the requested 2."),
        (3, None, ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions."),
        (5, [[0]], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Increasing the number of partitions by 2 but 1 assignments provided."),
        (4, [[0, 0]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Inconsistent replication factor"),
        (4, [[5]], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "Unknown broker(s) in replica assignment: 5."),
    ],
)  # fmt: skip
def test_create_partitions_refusals(broker, count, assignments, code, message):
    broker.create_topic("t", 3)
    [(_, error, text)] = add_partitions(broker, ("t", count, assignments))
    assert error == code
    assert text is not None and message in text
    assert partition_count(broker, "t") == 3


def test_create_partitions_unknown_duplicate_internal_and_validate_only(broker):
    broker.create_topic("t", 1)
    broker.create_topic("u", 1)
    assert broker.ctx.topics.create_internal_topic("__consumer_offsets", 1) is None
    answers = add_partitions(
        broker, ("gone", 2, None), ("t", 2, None), ("t", 3, None), ("__consumer_offsets", 5, None)
    )
    assert [(name, code) for name, code, _ in answers] == [
        ("gone", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", ErrorCode.INVALID_REQUEST),
        ("t", ErrorCode.INVALID_REQUEST),
        ("__consumer_offsets", ErrorCode.INVALID_REQUEST),
    ]
    assert add_partitions(broker, ("u", 4, None), validate_only=True) == [("u", 0, None)]
    assert partition_count(broker, "u") == 1


def test_create_partitions_past_max_broker_partitions(make_broker):
    broker = make_broker({"max.broker.partitions": "60", "offsets.topic.num.partitions": "50"})
    broker.create_topic("t", 5)
    [(_, code, text)] = add_partitions(broker, ("t", 11, None))
    assert code == ErrorCode.POLICY_VIOLATION and text is not None
    assert "max.broker.partitions=60" in text
    assert add_partitions(broker, ("t", 10, None)) == [("t", 0, None)]


# DescribeCluster


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster(broker, version):
    response = broker.call(
        ApiKey.DESCRIBE_CLUSTER,
        version,
        DescribeClusterRequest(include_cluster_authorized_operations=True),
    )
    assert response.error_code == ErrorCode.NONE
    assert response.cluster_id == broker.ctx.cluster_id
    assert response.controller_id == 0
    assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (0, "localhost", 9092, None)
    ]
    # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
    assert response.cluster_authorized_operations == 0b1_1111_1010_0000
    plain = broker.call(ApiKey.DESCRIBE_CLUSTER, version, DescribeClusterRequest())
    assert plain.cluster_authorized_operations == -(2**31)


@pytest.mark.parametrize(
    ("endpoint_type", "code"),
    [(2, ErrorCode.MISMATCHED_ENDPOINT_TYPE), (7, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)],
)
def test_describe_cluster_other_endpoint_types(broker, endpoint_type, code):
    request = DescribeClusterRequest(endpoint_type=endpoint_type)
    response = broker.call(ApiKey.DESCRIBE_CLUSTER, 1, request)
    assert response.error_code == code
    assert response.brokers == []


# DescribeLogDirs


def log_dirs(broker: TestBroker, version: int, topics: dict[str, list[int]] | None):
    request = DescribeLogDirsRequest(
        topics=None
        if topics is None
        else [DescribableLogDirTopic(topic=t, partitions=p) for t, p in topics.items()]
    )
    return broker.call(ApiKey.DESCRIBE_LOG_DIRS, version, request)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_describe_log_dirs(make_broker, tmp_path, version):
    broker = make_broker({"log.dirs": f"{tmp_path}/a,{tmp_path}/b"})
    broker.create_topic("t", 2)
    broker.create_topic("u", 1)
    batch = make_batch([b"v" * 100])
    assert broker.produce("t", batch, partition=1).error_code == ErrorCode.NONE
    response = log_dirs(broker, version, None)
    assert response.error_code == ErrorCode.NONE
    found = {}
    for result in response.results:
        assert result.error_code == ErrorCode.NONE
        if version >= 4:
            assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
        else:
            assert (result.total_bytes, result.usable_bytes) == (-1, -1)
        for topic in result.topics:
            for p in topic.partitions:
                assert (p.offset_lag, p.is_future_key) == (0, False)
                found[(topic.name, p.partition_index)] = (result.log_dir, p.partition_size)
    assert sorted(r.log_dir for r in response.results) == [f"{tmp_path}/a", f"{tmp_path}/b"]
    assert sorted(found) == [("t", 0), ("t", 1), ("u", 0)]
    assert found[("t", 1)][1] == len(batch)
    assert found[("t", 0)][1] == found[("u", 0)][1] == 0
    for (topic, partition), (log_dir, _) in found.items():
        assert broker.log(topic, partition).directory.parent.as_posix() == log_dir

    asked = log_dirs(broker, version, {"t": [1, 7], "gone": [0]})
    listed = [(t.name, p.partition_index) for r in asked.results for t in r.topics
              for p in t.partitions]  # fmt: skip
    assert listed == [("t", 1)]
    assert [r.topics for r in log_dirs(broker, version, {}).results] == [[], []]
