"""Brokers on a real ZooKeeper that reach each other over SASL_SSL (issue 20).

Three brokers listen on PLAINTEXT and SASL_SSL, the latter their
``inter.broker.listener.name``, with certificates made for the run: the
followers' fetches and the ControlledShutdown to the controller go through a
TLS handshake (host name checked) and SASL, and authenticate again when their
sessions end (``connections.max.reauth.ms``). Records produced with acks=all by
a client on SASL_SSL reach every replica, which stays in the ISR; a stopped
leader's leaderships move, and restarted it catches up again. With SCRAM, a
broker given the wrong password logs why and stays out of the ISR, still
running, while the others replicate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, TopicPartition

from interop_tests.broker import Broker
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from interop_tests.test_replication import BROKERS, LAG_MS, TIMEOUT_S, ReplicatedCluster
from interop_tests.test_replication import create_topic as create_replicated_topic
from interop_tests.test_zk_cluster import wait_for
from wirekafka.testing.certificates import Certificates, make_certificates

INTER_BROKER = "SASL_SSL"
BROKER_USER, BROKER_PASSWORD = "broker", "broker-secret"
WRONG_PASSWORD = "not-the-broker-secret"
CLIENT_USER, CLIENT_PASSWORD = "alice", "alice-secret"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PARTITIONS = 2
RECORDS = 200
FETCH_WARNING = "fetching from broker"
REAUTH_MS = 3000


def failed_logins(output: str) -> list[str]:
    """The follower fetches ``output`` logs as refused by TLS or SASL; a leader that
    stops may still reset its followers' connections, which is not a login failure."""
    return [
        line
        for line in output.splitlines()
        if FETCH_WARNING in line and ("SASL" in line or "TLS" in line)
    ]


def secure_settings(certs: Certificates, mechanism: str, password: str) -> dict[str, str]:
    """A broker that reaches the others on SASL_SSL with ``mechanism`` as BROKER_USER."""
    prefix = f"listener.name.{INTER_BROKER.lower()}."
    settings = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,{INTER_BROKER}://127.0.0.1:0",
        "inter.broker.listener.name": INTER_BROKER,
        "sasl.mechanism.inter.broker.protocol": mechanism,
        **certs.broker_settings(INTER_BROKER),
        prefix + "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        prefix + "plain.sasl.jaas.config": (
            f"{PLAIN_MODULE} required "
            + (f'username="{BROKER_USER}" password="{password}" ' if mechanism == "PLAIN" else "")
            + f'user_{BROKER_USER}="{BROKER_PASSWORD}" user_{CLIENT_USER}="{CLIENT_PASSWORD}";'
        ),
    }
    if mechanism != "PLAIN":
        settings[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = (
            f'{SCRAM_MODULE} required username="{BROKER_USER}" password="{password}";'
        )
    return settings


def brokers_with_password(
    certs: Certificates, mechanism: str, passwords: dict[int, str]
) -> Callable[[int, Path, dict[str, str]], Broker]:
    """``make_broker`` of a cluster whose broker ``n`` authenticates with ``passwords[n]``
    (BROKER_PASSWORD if not given)."""

    def make(node: int, data_dir: Path, keys: dict[str, str]) -> Broker:
        password = passwords.get(node, BROKER_PASSWORD)
        return Broker(data_dir, {**keys, **secure_settings(certs, mechanism, password)})

    return make


@pytest.fixture
def certs(tmp_path: Path) -> Certificates:
    return make_certificates(tmp_path / "certs")


def client_config(cluster: ReplicatedCluster, certs: Certificates) -> dict[str, str]:
    """librdkafka's settings for CLIENT_USER on every broker's SASL_SSL listener."""
    return {
        "bootstrap.servers": ",".join(
            b.listener_bootstrap(INTER_BROKER) for b in cluster.brokers.values()
        ),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(certs.ca),
        "sasl.mechanism": "PLAIN",
        "sasl.username": CLIENT_USER,
        "sasl.password": CLIENT_PASSWORD,
    }


def produce_acks_all(config: dict[str, str], topic: str, values: list[bytes]) -> None:
    failures: list[str] = []

    def delivered(error: confluent_kafka.KafkaError | None, _: object) -> None:
        if error is not None:
            failures.append(error.name())

    producer = confluent_kafka.Producer({**config, "enable.idempotence": True, "acks": "all"})
    for value in values:
        producer.produce(topic, value=value, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    assert failures == []


def read_over_sasl_ssl(cluster: ReplicatedCluster, certs: Certificates, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=[b.listener_bootstrap(INTER_BROKER) for b in cluster.brokers.values()],
        security_protocol="SASL_SSL",
        ssl_cafile=str(certs.ca),
        sasl_mechanism="PLAIN",
        sasl_plain_username=CLIENT_USER,
        sasl_plain_password=CLIENT_PASSWORD,
        consumer_timeout_ms=IDLE_TIMEOUT_MS,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    values = [record.value for record in read_to_end(consumer)]
    consumer.close()
    return values


def isr_stays(cluster: ReplicatedCluster, topic: str, partition: int, members: set[int]) -> None:
    """The ISR is ``members`` and still is after twice ``replica.lag.time.max.ms``."""
    wait_for(
        lambda: set(cluster.state(topic, partition)["isr"]) == members,
        f"the ISR of {topic}-{partition} to be {sorted(members)}",
    )
    time.sleep(2 * LAG_MS / 1000)
    assert set(cluster.state(topic, partition)["isr"]) == members


@pytest.fixture
def plain_cluster(tmp_path: Path, certs: Certificates) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(
        tmp_path,
        {
            "controlled.shutdown.retry.backoff.ms": "500",
            # sessions end: the followers' connections authenticate again (KIP-368)
            f"listener.name.{INTER_BROKER.lower()}.connections.max.reauth.ms": str(REAUTH_MS),
        },
        make_broker=brokers_with_password(certs, "PLAIN", {}),
    )
    with made.running():
        yield made


@pytest.mark.slow
def test_brokers_replicate_and_move_leaderships_over_sasl_ssl(
    plain_cluster: ReplicatedCluster, certs: Certificates
) -> None:
    cluster, topic = plain_cluster, "secured"
    create_replicated_topic(cluster, topic, PARTITIONS)
    config = client_config(cluster, certs)
    values = [b"before-%04d" % i for i in range(RECORDS)]
    produce_acks_all(config, topic, values)
    for partition in range(PARTITIONS):  # every follower fetches: none drops out
        isr_stays(cluster, topic, partition, set(range(BROKERS)))

    controller = cluster.controller()
    states = {p: cluster.state(topic, p) for p in range(PARTITIONS)}
    victim = next((s["leader"] for s in states.values() if s["leader"] != controller), None)
    if victim is None:  # the controller leads both: stopping it moves them as well
        victim = controller
    led = [p for p, s in states.items() if s["leader"] == victim]
    cluster.brokers[victim].stop()
    log = cluster.brokers[victim].stderr_text()
    assert "controlled shutdown succeeded" in log  # its ControlledShutdown was answered
    for partition in led:
        state = cluster.state(topic, partition)
        assert state["leader"] not in (victim, -1), (partition, state)
        assert victim not in state["isr"], (partition, state)

    more = [b"without-%04d" % i for i in range(RECORDS)]
    produce_acks_all(config, topic, more)
    cluster.brokers[victim].start()
    for partition in range(PARTITIONS):  # back, it caught up over SASL_SSL
        wait_for(
            lambda partition=partition: len(cluster.state(topic, partition)["isr"]) == BROKERS,
            f"broker {victim} to rejoin the ISR of {topic}-{partition}",
        )
    assert sorted(read_over_sasl_ssl(cluster, certs, topic)) == sorted(values + more)

    cluster.stop_all()
    for partition in range(PARTITIONS):
        assert cluster.logs_identical(topic, partition), f"{topic}-{partition} differs"
    for broker in cluster.brokers.values():
        output = broker.output()
        assert failed_logins(output) == [], output
        assert "Traceback" not in output, output
        assert BROKER_PASSWORD not in output and CLIENT_PASSWORD not in output


@pytest.fixture
def scram_cluster(tmp_path: Path, certs: Certificates) -> Iterator[ReplicatedCluster]:
    made = ReplicatedCluster(
        tmp_path,
        make_broker=brokers_with_password(certs, "SCRAM-SHA-256", {2: WRONG_PASSWORD}),
    )
    with made.running():
        yield made


@pytest.mark.slow
def test_a_broker_with_the_wrong_password_stays_out_of_the_isr(
    scram_cluster: ReplicatedCluster,
) -> None:
    cluster, topic = scram_cluster, "guarded"
    admin = AdminClient({"bootstrap.servers": cluster.brokers[0].bootstrap})
    credential = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    upsert = UserScramCredentialUpsertion(BROKER_USER, credential, BROKER_PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(TIMEOUT_S)
    for broker in cluster.brokers.values():  # each has the credential before anyone fetches
        asked = AdminClient({"bootstrap.servers": broker.bootstrap})
        wait_for(
            lambda asked=asked: BROKER_USER in asked.describe_user_scram_credentials().result(),
            f"broker {broker.data_dir} to know user {BROKER_USER}",
        )
    for future in admin.create_topics(
        [NewTopic(topic, 1, replica_assignment=[[0, 1, 2]])]
    ).values():
        future.result(TIMEOUT_S)
    wait_for(lambda: cluster.state(topic, 0)["leader"] == 0, f"broker 0 to lead {topic}-0")

    produce_acks_all({"bootstrap.servers": cluster.bootstrap}, topic, [b"x"] * RECORDS)
    isr_stays(cluster, topic, 0, {0, 1})  # broker 1 fetches; broker 2 never gets in

    expected = (
        f"{FETCH_WARNING} 0: broker 0 (listener {INTER_BROKER}): SASL/SCRAM-SHA-256 "
        f"authentication as user '{BROKER_USER}' failed: SASL_AUTHENTICATION_FAILED: "
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )
    # broker 2 may learn of its replica only at its next ZooKeeper refresh (up to 10 s)
    wait_for(
        lambda: expected in cluster.brokers[2].stderr_text(),
        "broker 2's refused login logged",
        timeout_s=30,
    )
    cluster.brokers[2].assert_running()
    assert FETCH_WARNING not in cluster.brokers[1].stderr_text()
    for broker in cluster.brokers.values():
        output = broker.output()
        assert BROKER_PASSWORD not in output and WRONG_PASSWORD not in output
