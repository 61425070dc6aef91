"""DescribeLogDirs: this broker's log dirs, the partitions in each with their
size on disk, and (v4) the dirs' total and usable bytes, as ``kafka-log-dirs``
shows them. Nothing is replicated and no log moves between dirs, so every
offset lag is 0 and no log is a future one. Without Describe on the cluster the
answer lists no dirs (CLUSTER_AUTHORIZATION_FAILED from v3), as in Kafka."""

from __future__ import annotations

import os
from pathlib import Path

from wirekafka.broker.context import BrokerContext
from wirekafka.handlers.authorization import cluster_authorized
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from wirekafka.protocol.rpc import Request
from wirekafka.security.acl import AclOperation
from wirekafka.worker_threads import LOG_DIRS, blocking, run_blocking

UNKNOWN_BYTES = -1


@blocking
def _space(log_dir: Path) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``log_dir``; blocks briefly."""
    try:
        stats = os.statvfs(log_dir)
    except OSError:
        return UNKNOWN_BYTES, UNKNOWN_BYTES
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


def _wanted(body: DescribeLogDirsRequest) -> dict[str, set[int]] | None:
    if body.topics is None:
        return None
    wanted: dict[str, set[int]] = {}
    for topic in body.topics:
        wanted.setdefault(topic.topic, set()).update(topic.partitions)
    return wanted


async def handle_describe_log_dirs(ctx: BrokerContext, request: Request) -> DescribeLogDirsResponse:
    body: DescribeLogDirsRequest = request.body
    if not cluster_authorized(ctx, request, AclOperation.DESCRIBE):  # as Kafka: no dirs
        return DescribeLogDirsResponse(
            throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[]
        )
    wanted = _wanted(body)
    by_dir: dict[Path, dict[str, list[DescribeLogDirsPartition]]] = {
        log_dir: {} for log_dir in ctx.logs.log_dirs
    }
    for partition_log in sorted(ctx.logs.all_logs(), key=lambda p: (p.topic, p.partition)):
        topic, index = partition_log.topic, partition_log.partition
        if wanted is not None and index not in wanted.get(topic, ()):
            continue
        topics = by_dir.get(partition_log.directory.parent)
        if topics is None:
            continue
        topics.setdefault(topic, []).append(
            DescribeLogDirsPartition(
                partition_index=index,
                partition_size=sum(segment.size for segment in partition_log.segments),
                offset_lag=0,
                is_future_key=False,
            )
        )
    space = {}
    if request.version >= 4:
        for log_dir in by_dir:
            space[log_dir] = await run_blocking(LOG_DIRS, _space, log_dir)
    return DescribeLogDirsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        results=[
            DescribeLogDirsResult(
                error_code=ErrorCode.NONE,
                log_dir=str(log_dir.absolute()),
                topics=[
                    DescribeLogDirsTopic(name=name, partitions=partitions)
                    for name, partitions in topics.items()
                ],
                total_bytes=space.get(log_dir, (UNKNOWN_BYTES, UNKNOWN_BYTES))[0],
                usable_bytes=space.get(log_dir, (UNKNOWN_BYTES, UNKNOWN_BYTES))[1],
            )
            for log_dir, topics in by_dir.items()
        ],
    )
