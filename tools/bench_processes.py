"""Benchmark: the 1,000-partition produce row on one wirekafka process and on several.

Issue 16 asks, where one Python process cannot reach the C peer, what a design of
several broker processes on one host would reach. This runs that design as it
exists here: ``--processes`` wirekafka brokers from this checkout on one host,
registered in a real ZooKeeper (Debian's ``zookeeper``, started as the interop
tests start it) as a cluster, each leading a share of the topic's partitions
(replication factor 1, so no broker copies another's records), presented to the
client as Kafka presents a cluster. Beside it, in the same run and taking turns
rep by rep: one wirekafka process (the embedded default) and librdkafka's mock
cluster (``tools/bench_peers.py``'s peers).

The row is ``tools/bench_peers.py``'s ``partitions-1000``: ``rdkafka_performance``
writes 100-byte records, acks=1, linger.ms=5, each to a random partition of a
topic of 1,000 partitions, bootstrapped from every broker of the side it loads.
A run on the cluster starts once its brokers are idle (each under a tenth of a
core over half a second): after a topic of 1,000 partitions is created, the
controller's ZooKeeper rounds, each of which reads every partition's state, keep
it busy for a few seconds. Each run prints msg/s and the brokers' CPU (summed
over the processes of the side) per message and per request; then a table of
medians with the ratios.

    python -m tools.bench_processes [--processes N] [--reps R] [--scale F]

Needs gcc, librdkafka-dev and zookeeper (``apt-get install librdkafka-dev
zookeeper``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from tools.bench_peers import (
    PARTITIONS_OPTIONS,
    MockPeer,
    Peer,
    Pids,
    Row,
    print_table,
    produce_row,
    raise_on_sigterm,
    run_row,
    wait_for,
    wirekafka_peer,
)
from tools.bench_replication import ClusterPeer, cluster, print_logs
from tools.bench_support import cpu_seconds, mock_cluster, rdkafka_performance

RECORDS = 2_000_000
PARTITIONS = 1000
# Replication factor 1 throughout: each record is written once, by its partition's leader.
SETTINGS = {
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "min.insync.replicas": "1",
}


QUIET_SECONDS = 0.5
QUIET_SHARE = 0.1  # of a core, each process: a broker this busy is still settling
SETTLE_TIMEOUT_S = 60.0


class SettledCluster(ClusterPeer):
    """The cluster, whose runs start once its brokers are idle: after a topic of
    1,000 partitions is created, the controller's ZooKeeper rounds (each reads
    every partition's state) keep it busy for a few seconds, which would weigh on
    the run and on the peers' runs after it."""

    @contextlib.contextmanager
    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> Iterator[tuple[str, Pids]]:
        with super().serving(topic, partitions, configs) as on:
            wait_for(self.quiet, "the brokers to settle", SETTLE_TIMEOUT_S)
            yield on

    def quiet(self) -> bool:
        before = [cpu_seconds(pid) for pid in self.pids]
        time.sleep(QUIET_SECONDS)
        used = [cpu_seconds(pid) - b for pid, b in zip(self.pids, before, strict=True)]
        return max(used) < QUIET_SHARE * QUIET_SECONDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2, help="broker processes of the cluster")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the record count")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # ZooKeeper's probes while it starts
    rdkafka_performance(), mock_cluster()  # built before any broker starts
    name = f"{args.processes} processes"
    row = Row(
        produce_row(100, max(1, int(RECORDS * args.scale)), PARTITIONS_OPTIONS),
        "msg/s",
        partitions=PARTITIONS,
    )
    with tempfile.TemporaryDirectory(prefix="wirekafka-bench-processes-") as scratch:
        try:
            with (
                wirekafka_peer() as one,
                cluster(Path(scratch), args.processes, SETTINGS) as (ports, pids),
            ):
                many = SettledCluster(ports, pids, replication_factor=1, name=name)
                peers: list[Peer] = [one, many, MockPeer()]
                medians = {"partitions-1000": run_row("partitions-1000", row, peers, args.reps)}
                print_table(medians, {"partitions-1000": row.unit}, "wirekafka", (name, "mock"))
        finally:
            with contextlib.suppress(OSError):
                print_logs(Path(scratch), args.processes)
    print(f"\npython -m tools.bench_processes {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
