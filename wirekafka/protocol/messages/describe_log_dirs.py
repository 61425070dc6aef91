"""DescribeLogDirs (key 35): the log dirs of this broker and the partitions in each."""

from __future__ import annotations

from wirekafka.protocol import schema as wire


@wire.message
class DescribableLogDirTopic:
    topic: str = wire.string("0+")
    partitions: list[int] = wire.array(wire.INT32, "0+")


@wire.message
class DescribeLogDirsRequest:
    # null: every topic
    topics: list[DescribableLogDirTopic] | None = wire.array(
        DescribableLogDirTopic, "0+", nullable="0+"
    )


@wire.message
class DescribeLogDirsPartition:
    partition_index: int = wire.int32("0+")
    partition_size: int = wire.int64("0+")
    offset_lag: int = wire.int64("0+")
    is_future_key: bool = wire.boolean("0+")


@wire.message
class DescribeLogDirsTopic:
    name: str = wire.string("0+")
    partitions: list[DescribeLogDirsPartition] = wire.array(DescribeLogDirsPartition, "0+")


@wire.message
class DescribeLogDirsResult:
    error_code: int = wire.int16("0+")
    log_dir: str = wire.string("0+")
    topics: list[DescribeLogDirsTopic] = wire.array(DescribeLogDirsTopic, "0+")
    total_bytes: int = wire.int64("4+", default=-1)
    usable_bytes: int = wire.int64("4+", default=-1)


@wire.message
class DescribeLogDirsResponse:
    throttle_time_ms: int = wire.int32("0+")
    error_code: int = wire.int16("3+")
    results: list[DescribeLogDirsResult] = wire.array(DescribeLogDirsResult, "0+")
