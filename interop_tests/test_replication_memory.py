"""What acks=all waiting on stopped followers costs the leader (issue 17): bounded memory,
and nothing else waits.

Both followers of a partition are stopped (SIGSTOP) while staying in the ISR
(``replica.lag.time.max.ms`` is longer than the test), so every acks=all
Produce to it waits. Twenty connections each pipeline five 900 KB Produce
requests, 90 MB in all. A connection reads no further request while one of
its own is handled, and the frames being handled take their bytes from the
memory pool (``queued.max.request.bytes``, 16 MiB here): the leader's RSS
grows by about that much, not by what the clients sent, and it goes on
answering other requests. Once the followers go on, every request is answered,
each with the offset its batch got.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interop_tests.protocol_client import ProtocolClient, produce_request
from interop_tests.test_replication import ReplicatedCluster, create_topic
from interop_tests.test_zk_cluster import wait_for
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch

TOPIC = "held"
CONNECTIONS = 20
REQUESTS_EACH = 5
VALUE_BYTES = 900_000
POOL_BYTES = 16 * 1024 * 1024
HELD_S = 6.0  # how long the followers stay stopped
PRODUCE_TIMEOUT_MS = 60_000  # longer than HELD_S: the waits end when the followers go on
MIB = 1024 * 1024
# What the leader may grow by: the pool, and room for what one connection holds
# without a reservation and for Python's allocator. Reading every request sent
# would take 90 MB.
GROWTH_LIMIT_BYTES = POOL_BYTES + 24 * MIB


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(
        tmp_path,
        {
            "replica.lag.time.max.ms": "120000",
            "queued.max.request.bytes": str(POOL_BYTES),
            "socket.request.max.bytes": str(POOL_BYTES),
        },
    )
    with made.running():
        yield made


@pytest.mark.slow
def test_acks_all_waiting_on_stopped_followers_holds_bounded_memory(
    cluster: ReplicatedCluster,
) -> None:
    create_topic(cluster, TOPIC, 1)
    leader_id = cluster.state(TOPIC, 0)["leader"]
    leader = cluster.brokers[leader_id]
    assert leader.process is not None
    followers = [n for n in cluster.replicas(TOPIC, 0) if n != leader_id]
    batch = encode_batch([Record(0, int(time.time() * 1000), None, b"x" * VALUE_BYTES)])
    request = produce_request(TOPIC, batch, acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS)
    clients = [ProtocolClient(*leader.address, timeout_s=120) for _ in range(CONNECTIONS)]
    answers: list[list[tuple[int, int]]] = [[] for _ in clients]

    def pipeline(client: ProtocolClient, answered: list[tuple[int, int]]) -> None:
        sent = [client.send(ApiKey.PRODUCE, 9, request) for _ in range(REQUESTS_EACH)]
        for correlation_id in sent:
            response = client.receive(ApiKey.PRODUCE, 9, correlation_id)
            (partition,) = response.responses[0].partition_responses
            answered.append((partition.error_code, partition.base_offset))

    before = rss_bytes(leader.process.pid)
    for node in followers:
        cluster.signal(node, signal.SIGSTOP)
    threads = [
        threading.Thread(target=pipeline, args=(c, a), daemon=True)
        for c, a in zip(clients, answers, strict=True)
    ]
    try:
        for thread in threads:
            thread.start()
        peak = before
        held_until = time.monotonic() + HELD_S
        with ProtocolClient(*leader.address, timeout_s=10) as other:
            while time.monotonic() < held_until:
                peak = max(peak, rss_bytes(leader.process.pid))
                assert other.api_versions()  # the leader answers other requests meanwhile
                time.sleep(0.2)
        assert not any(a for a in answers), "acks=all answered before the followers had it"
    finally:
        for node in followers:
            cluster.signal(node, signal.SIGCONT)
    for thread in threads:
        thread.join(120)
    for client in clients:
        client.close()
    growth = peak - before
    print(
        f"leader RSS {before / MIB:.0f} MiB before, {peak / MIB:.0f} MiB at most while "
        f"{CONNECTIONS * REQUESTS_EACH * VALUE_BYTES / MIB:.0f} MiB of acks=all requests waited"
    )
    assert growth < GROWTH_LIMIT_BYTES, f"the leader grew by {growth / MIB:.0f} MiB"
    codes = [code for answered in answers for code, _ in answered]
    assert codes == [ErrorCode.NONE] * CONNECTIONS * REQUESTS_EACH
    offsets = sorted(offset for answered in answers for _, offset in answered)
    assert offsets == list(range(CONNECTIONS * REQUESTS_EACH))
    wait_for(lambda: len(cluster.state(TOPIC, 0)["isr"]) == 3, "the followers in the ISR")
