"""Benchmark: acks=all throughput and latency at replication factor 3 against 1, in one run.

One cluster serves both sides: a real ZooKeeper (Debian's ``zookeeper``
package, started as the interop tests start it, ``interop_tests/zookeeper.py``)
and three wirekafka brokers from this checkout on it (``broker.id`` 0-2,
ephemeral ports, temporary data dirs, ``min.insync.replicas=2``,
``default.replication.factor=3``, otherwise the defaults: followers fetch with
``replica.fetch.wait.max.ms=500``, ``replica.lag.time.max.ms=30000``). Every
run writes a new topic of one partition, of replication factor 1 (the peer
``RF=1``: only its leader works) or 3 (``RF=3``: the leader and two followers
fetching from it; acks=all answers once the ISR has the records). The RF=1
topics have ``min.insync.replicas=1`` (a topic config), or acks=all would be
refused with NOT_ENOUGH_REPLICAS, as Kafka refuses it. A run starts
once every broker answers Metadata with all three brokers and the topic's
partition with a leader and all its replicas in the ISR; the topic is deleted
after it. RF=1 and RF=3 runs alternate, ``--reps`` times each (the first of
each rep alternates too), so a noisy machine weighs on both alike.

The load is librdkafka's ``rdkafka_performance`` (built by
``tools/bench_support.py``), 200-byte records, acks=all (``-a -1``), no
idempotence, bootstrapped from all three brokers. Rows (``--row``, default both):

* ``max-throughput``: as fast as the producer goes at librdkafka's default
  batching (batches of up to 10,000 records and 1 MB, ~4,700 records of 200 B,
  linger.ms=5; ``rdkafka_performance`` sets 1000 of its own, which would add a
  second to every run, the last batch's wait); msg/s and MB/s. Each
  run writes the same number of records: ``--seconds`` times the rate RF=3
  reached in the warm-up (so an RF=3 run takes roughly that long, an RF=1
  run less);
* ``latency``: end-to-end latency at a fixed rate (``--rate``, 10,000 msg/s
  by default, for ``--seconds``): ``tools/bench_peers.py``'s latency row, a
  consumer reading the partition (``rdkafka_performance -C -l``) while the
  producer writes records stamped with the wall clock (``-P -l -r RATE``,
  linger.ms=5 too);
  p50 and p99 of the consumer's per-record latencies. The consumer sees a
  record once the high watermark passes it, which at RF=3 is when the
  followers have fetched it: the same moment acks=all answers.

For each run it prints the figure and the brokers' CPU (user + system from
``/proc/<pid>/stat``, summed over the three broker processes, over the timed
part) per message and per request (requests as the clients count them:
librdkafka's statistics, the producer's and the consumer's, not the followers'
fetches). Then a table of medians with the ratio RF=3/RF=1 (of msg/s, and of
p99 latency: above 1, RF=3 slower). Before the rows, each side is warmed up
with 500,000 records at full speed. What the brokers logged (warnings and
worse) is printed at the end.

    python -m tools.bench_replication [--reps R] [--seconds S] [--rate N] [--row NAME ...]

Needs gcc, librdkafka-dev and zookeeper (``apt-get install librdkafka-dev
zookeeper``, which brings a JRE).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from confluent_kafka.admin import AdminClient

from interop_tests.protocol_client import ProtocolClient
from interop_tests.zookeeper import ZooKeeper
from tools.bench_peers import (
    PRODUCED,
    TOPIC_TIMEOUT_S,
    AdminPeer,
    Pids,
    Result,
    Row,
    last_match,
    latency_row,
    print_table,
    produce_row,
    raise_on_sigterm,
    rdkafka_produce,
    run,
    run_row,
    wait_for,
)
from tools.bench_support import ROOT, rdkafka_performance, start_wirekafka, stop_wirekafka

BROKERS = 3
CLUSTER_SETTINGS = {
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "1",  # no group here: no need for three
}
RECORD_BYTES = 200
# acks=all; rdkafka_produce runs every producer at librdkafka's default linger.ms
PRODUCER_OPTIONS = ("-a", "-1")
DEFAULT_RATE = 10_000  # msg/s, of the latency row
START_TIMEOUT_S = 60.0
WARM_UP_RECORDS = 500_000
LOG_TAIL_LINES = 20


class ClusterPeer(AdminPeer):
    """The cluster, serving topics of one replication factor; the load goes to all
    its brokers' addresses and their CPU is summed. Named ``RF=<factor>`` unless
    ``name`` is given."""

    def __init__(
        self, ports: list[int], pids: Pids, replication_factor: int, name: str | None = None
    ) -> None:
        bootstrap = ",".join(f"127.0.0.1:{port}" for port in ports)
        super().__init__(
            name or f"RF={replication_factor}", bootstrap, pids, None, replication_factor
        )
        self.ports = ports
        # acks=all needs min.insync.replicas in the ISR: the cluster's 2, 1 at RF=1
        self.topic_configs = {"min.insync.replicas": str(min(replication_factor, 2))}

    @contextlib.contextmanager
    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> Iterator[tuple[str, Pids]]:
        with super().serving(topic, partitions, {**self.topic_configs, **(configs or {})}) as on:
            yield on

    def ready(self, admin: AdminClient, topic: str, partitions: int) -> bool:
        """Whether every broker's own Metadata gives each partition of ``topic`` a
        leader and a full ISR: a producer may ask any of them."""
        for port in self.ports:
            with ProtocolClient("127.0.0.1", port, timeout_s=TOPIC_TIMEOUT_S) as client:
                (found,) = client.metadata(topic).topics
            if found.error_code != 0 or len(found.partitions) != partitions:
                return False
            if any(
                p.leader_id < 0 or len(p.isr_nodes) != self.replication_factor
                for p in found.partitions
            ):
                return False
        return True


def known_brokers(port: int) -> int:
    with ProtocolClient("127.0.0.1", port, timeout_s=TOPIC_TIMEOUT_S) as client:
        return len(client.metadata().brokers)


@contextlib.contextmanager
def cluster(
    scratch: Path, brokers: int = BROKERS, cluster_settings: Mapping[str, str] = CLUSTER_SETTINGS
) -> Iterator[tuple[list[int], Pids]]:
    """ZooKeeper and ``brokers`` brokers on it (with ``cluster_settings``), each
    knowing them all; their ports and pids. Each broker's log goes to
    ``scratch/broker-N.log``."""
    with ZooKeeper(scratch / "zookeeper") as zookeeper, contextlib.ExitStack() as stack:
        processes: list[subprocess.Popen[bytes]] = []
        ports: list[int] = []
        for node in range(brokers):
            data_dir = scratch / f"broker-{node}"
            data_dir.mkdir()
            log = stack.enter_context((scratch / f"broker-{node}.log").open("wb"))
            settings = {
                "broker.id": str(node),
                "zookeeper.connect": zookeeper.connect_string,
                **cluster_settings,
            }
            process, port = start_wirekafka(ROOT, data_dir, settings, log)
            stack.callback(stop_wirekafka, process)
            processes.append(process)
            ports.append(port)
        wait_for(
            lambda: all(known_brokers(port) == brokers for port in ports),
            f"every broker to know all {brokers} brokers",
            START_TIMEOUT_S,
        )
        yield ports, tuple(p.pid for p in processes)


def warm_up(peer: AdminPeer, records: int) -> float:
    """``records`` produced at full speed to a topic of the peer's; the rate (msg/s)."""
    topic = f"warm-up-rf{peer.replication_factor}"
    with peer.serving(topic) as (bootstrap, _):
        output = run(rdkafka_produce(bootstrap, topic, RECORD_BYTES, records, *PRODUCER_OPTIONS))
    return float(last_match(PRODUCED, output, "rdkafka_performance")[0])


def rows(throughput_records: int, rate: int, seconds: float) -> dict[str, Row]:
    return {
        "max-throughput": Row(
            produce_row(RECORD_BYTES, throughput_records, PRODUCER_OPTIONS), "msg/s, MB/s"
        ),
        "latency": Row(
            latency_row(max(1, int(rate * seconds)), RECORD_BYTES, PRODUCER_OPTIONS, rate), "ms"
        ),
    }


def print_logs(scratch: Path, brokers: int = BROKERS) -> None:
    """The last lines each broker logged (warnings and worse), if it logged any."""
    for node in range(brokers):
        lines = (scratch / f"broker-{node}.log").read_text(errors="replace").splitlines()
        if lines:
            print(f"\nbroker {node} logged {len(lines)} lines, the last {LOG_TAIL_LINES}:")
            print("\n".join(lines[-LOG_TAIL_LINES:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3, help="runs of each row on each side")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="about how long a run lasts (RF=3's)"
    )
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE, help="msg/s of the latency row")
    parser.add_argument("--row", action="append", choices=list(rows(1, 1, 1)), dest="rows")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # ZooKeeper's probes while it starts
    rdkafka_performance()  # built before any broker starts
    with tempfile.TemporaryDirectory(prefix="wirekafka-bench-replication-") as scratch:
        try:
            with cluster(Path(scratch)) as (ports, pids):
                peers = [ClusterPeer(ports, pids, factor) for factor in (1, 3)]
                rates = {peer.name: warm_up(peer, WARM_UP_RECORDS) for peer in peers}
                print(
                    f"warm-up, {WARM_UP_RECORDS:,} records: "
                    + ", ".join(f"{name} {rate:,.0f} msg/s" for name, rate in rates.items()),
                    flush=True,
                )
                throughput_records = max(10_000, int(round(args.seconds * rates["RF=3"], -4)))
                table = rows(throughput_records, args.rate, args.seconds)
                medians: dict[str, dict[str, Result]] = {}
                for name in args.rows or list(table):
                    medians[name] = run_row(name, table[name], peers, args.reps)
                print(
                    f"\nmax-throughput: {throughput_records:,} records of {RECORD_BYTES} B; "
                    f"latency: {args.rate:,} msg/s for {args.seconds:g} s"
                )
                print_table(medians, {n: table[n].unit for n in medians}, "RF=3", ("RF=1",))
        finally:
            print_logs(Path(scratch))
    print(f"\npython -m tools.bench_replication {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
