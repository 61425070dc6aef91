"""Benchmark: what TLS and SASL cost, wirekafka against Apache Kafka (issue 20).

Two brokers, each with a PLAINTEXT and a SASL_SSL listener, run for the whole
benchmark: wirekafka from this checkout and Apache Kafka 4.3 (``tools/apache_kafka.py``,
one JVM with -Xmx1g). The SASL_SSL listeners have the same settings: a PEM key
store (PKCS#8 key and certificate chain in one file) and trust store made for the
run (``wirekafka/testing/certificates.py``), SASL PLAIN with users from
``listener.name.sasl_ssl.plain.sasl.jaas.config``; clients trust the run's CA.
The TLS version and cipher are left to the two sides (each offers TLS 1.2 and
1.3). So there are four peers: each broker through each listener, taking
turns as in ``tools/bench_peers.py`` (whose run loop, rows and table this reuses).
Topics are made through the PLAINTEXT listener. Each broker is first warmed up
through both listeners (250 MB written and read back through each, times
``--scale``).

Rows (``--row``, default both), by librdkafka's ``rdkafka_performance``:

* ``produce-1k``: 1 KiB records, acks=1, librdkafka's default batching
  (linger.ms=5);
* ``consume-1k``: 1 KiB records, written first (not timed) and read from offset 0,
  from the page cache. Over TLS wirekafka cannot use sendfile: it reads the
  segment's bytes and encrypts them.

For each run: msg/s, MB/s and the broker's CPU (user + system from
``/proc/<pid>/stat`` over the timed part; for Kafka the JVM's) per message, per
request and per GB of payload. Then a table of medians, with the ratios of
wirekafka over SASL_SSL to each other peer (to wirekafka over PLAINTEXT: what
TLS and SASL cost it; to Kafka over SASL_SSL: the like-for-like comparison).

    python -m tools.bench_security [--reps R] [--row NAME ...] [--scale F]

Needs gcc, librdkafka-dev, Java 17, the fetched jars and trustme.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from interop_tests.security import PLAIN_JAAS, USERS
from tools.apache_kafka import HOST, ApacheKafka, free_port
from tools.bench_peers import (
    DELETE_DELAY_OVERRIDES,
    WARM_UP_RECORDS,
    AdminPeer,
    Pids,
    Result,
    Row,
    apache_kafka_peer,
    consume_row,
    print_table,
    produce_row,
    raise_on_sigterm,
    run_row,
    wirekafka_peer,
)
from tools.bench_support import rdkafka_performance
from wirekafka.testing.certificates import Certificates, make_certificates

SASL_SSL = "SASL_SSL"
MECHANISM = "PLAIN"
USER = "alice"
RECORD_BYTES = 1024
PRODUCE_RECORDS = 1_000_000
CONSUME_RECORDS = 500_000
ROW_NAMES = ("produce-1k", "consume-1k")
MEASURED = "wirekafka SASL_SSL"
OTHERS = ("wirekafka PLAINTEXT", "Kafka SASL_SSL", "Kafka PLAINTEXT")

Measure = Callable[[str, Pids, str], Result]


def listener_settings(certs: Certificates) -> dict[str, str]:
    """The SASL_SSL listener's keys, the same for both brokers."""
    prefix = f"listener.name.{SASL_SSL.lower()}."
    return {
        prefix + "ssl.keystore.type": "PEM",
        prefix + "ssl.truststore.type": "PEM",
        **certs.broker_settings(SASL_SSL),
        prefix + "sasl.enabled.mechanisms": MECHANISM,
        prefix + f"{MECHANISM.lower()}.sasl.jaas.config": PLAIN_JAAS,
    }


def client_options(certs: Certificates) -> tuple[str, ...]:
    """``rdkafka_performance``'s options for the SASL_SSL listeners."""
    settings = {
        "security.protocol": SASL_SSL,
        "sasl.mechanism": MECHANISM,
        "sasl.username": USER,
        "sasl.password": USERS[USER],
        "ssl.ca.location": str(certs.ca),
    }
    return tuple(part for key, value in settings.items() for part in ("-X", f"{key}={value}"))


@dataclass
class Endpoint:
    """One listener of a broker, a peer of ``bench_peers.run_row``: topics are made
    through the broker's PLAINTEXT listener; clients go to ``bootstrap`` with the
    options ``client``."""

    name: str
    broker: AdminPeer
    bootstrap: str
    client: tuple[str, ...] = ()

    @contextlib.contextmanager
    def serving(
        self, topic: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> Iterator[tuple[str, Pids]]:
        with self.broker.serving(topic, partitions, configs) as (_, pids):
            yield self.bootstrap, pids


def with_client_options(
    measure: Callable[[Sequence[str]], Measure], endpoints: Sequence[Endpoint]
) -> Measure:
    """A row's measure that runs its load with the client options of the endpoint
    whose bootstrap it is given."""
    options = {endpoint.bootstrap: endpoint.client for endpoint in endpoints}
    return lambda bootstrap, pids, topic: measure(options[bootstrap])(bootstrap, pids, topic)


def rows(scale: float, endpoints: Sequence[Endpoint]) -> dict[str, Row]:
    def n(count: int) -> int:
        return max(1, int(count * scale))

    def produce(options: Sequence[str]) -> Measure:
        return produce_row(RECORD_BYTES, n(PRODUCE_RECORDS), ("-a", "1", *options))

    def consume(options: Sequence[str]) -> Measure:
        return consume_row(n(CONSUME_RECORDS), options)

    return {
        "produce-1k": Row(with_client_options(produce, endpoints), "msg/s, MB/s"),
        "consume-1k": Row(with_client_options(consume, endpoints), "msg/s, MB/s"),
    }


@contextlib.contextmanager
def endpoints(certs: Certificates) -> Iterator[list[Endpoint]]:
    """Both brokers started, each through each of its listeners."""
    settings, client = listener_settings(certs), client_options(certs)
    sasl_port = free_port()
    with contextlib.ExitStack() as stack:
        wirekafka = stack.enter_context(
            wirekafka_peer(
                overrides={
                    "listeners": f"PLAINTEXT://{HOST}:0,{SASL_SSL}://{HOST}:{sasl_port}",
                    **settings,
                }
            )
        )
        kafka = ApacheKafka({**DELETE_DELAY_OVERRIDES, **settings}, extra_listeners=(SASL_SSL,))
        apache = stack.enter_context(apache_kafka_peer(kafka))
        yield [
            Endpoint("wirekafka PLAINTEXT", wirekafka, wirekafka.bootstrap),
            Endpoint(MEASURED, wirekafka, f"{HOST}:{sasl_port}", client),
            Endpoint("Kafka PLAINTEXT", apache, apache.bootstrap),
            Endpoint("Kafka SASL_SSL", apache, kafka.listener_bootstrap(SASL_SSL), client),
        ]


def warm_up(found: Sequence[Endpoint], scale: float) -> None:
    """Write 250 MB (times ``scale``) through each endpoint and read them back."""
    measure = with_client_options(
        lambda options: consume_row(max(1, int(WARM_UP_RECORDS * scale)), options), found
    )
    for number, endpoint in enumerate(found):
        topic = f"warm-up-{number}"
        with endpoint.serving(topic) as (bootstrap, pids):
            measure(bootstrap, pids, topic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--row", action="append", choices=ROW_NAMES, dest="rows")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the record counts")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    rdkafka_performance()  # built before any broker starts
    with (
        tempfile.TemporaryDirectory(prefix="wirekafka-bench-certificates-") as directory,
        endpoints(make_certificates(Path(directory))) as found,
    ):
        warm_up(found, args.scale)
        table = rows(args.scale, found)
        medians = {
            name: run_row(name, table[name], found, args.reps) for name in args.rows or table
        }
        print_table(medians, {name: table[name].unit for name in medians}, MEASURED, OTHERS)
    print(f"\npython -m tools.bench_security {' '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
