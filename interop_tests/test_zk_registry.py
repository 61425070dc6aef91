"""Brokers registering in a real ZooKeeper (Debian's package): Kafka's znodes
and JSON, a chroot, a duplicate broker id, session expiry, ZooKeeper down, and
a partition state written after its topic reaching the broker by a watch."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from interop_tests.conftest import BrokerFactory
from interop_tests.polling import wait_for
from interop_tests.protocol_client import ProtocolClient
from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401
from wirekafka.zk.watch_rounds import REFRESH_SECONDS
from wirekafka.zk.znodes import (
    ControllerZNode,
    PartitionState,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicZNode,
)

SESSION_TIMEOUT_MS = 4000
TIMEOUT_S = 30.0


@pytest.fixture
def kazoo(zookeeper: ZooKeeper) -> Iterator[KazooClient]:  # noqa: F811
    client = KazooClient(zookeeper.connect_string)
    client.start(timeout=TIMEOUT_S)
    yield client
    client.stop()
    client.close()


def _settings(zookeeper: ZooKeeper, broker_id: int, chroot: str = "/wirekafka") -> dict[str, str]:  # noqa: F811
    return {
        "zookeeper.connect": zookeeper.connect_string + chroot,
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "broker.id": str(broker_id),
    }


def test_registration_in_kafkas_layout_under_a_chroot(
    broker_factory: BrokerFactory,
    zookeeper: ZooKeeper,  # noqa: F811
    kazoo: KazooClient,
) -> None:
    broker = broker_factory(settings=_settings(zookeeper, 3))
    for path in (
        "/brokers/ids",
        "/brokers/topics",
        "/config/topics",
        "/admin/delete_topics",
        "/consumers",
    ):
        assert kazoo.exists("/wirekafka" + path), path
    assert kazoo.get_children("/wirekafka/brokers/ids") == ["3"]
    data, stat = kazoo.get("/wirekafka/brokers/ids/3")
    assert stat.ephemeralOwner != 0
    registration = json.loads(data)
    assert registration["version"] == 5
    assert registration["host"] == broker.host and registration["port"] == broker.port
    assert registration["endpoints"] == [f"PLAINTEXT://{broker.host}:{broker.port}"]
    assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert registration["jmx_port"] == -1
    assert isinstance(registration["timestamp"], str) and registration["timestamp"].isdigit()
    cluster = json.loads(kazoo.get("/wirekafka/cluster/id")[0])
    meta = (broker.data_dir / "meta.properties").read_text()
    assert f"cluster.id={cluster['id']}" in meta
    broker.stop()
    assert kazoo.get_children("/wirekafka/brokers/ids") == []  # a clean stop leaves at once


def test_a_second_broker_with_the_same_id_is_refused(
    broker_factory: BrokerFactory,
    zookeeper: ZooKeeper,  # noqa: F811
    tmp_path: Path,
) -> None:
    broker_factory(settings=_settings(zookeeper, 1))
    # The second waits out the first's node for its own session timeout (a killed
    # process's node would go by then): ZooKeeper's least, not the 4 s of the others.
    second = _settings(zookeeper, 1) | {"zookeeper.session.timeout.ms": "1000"}
    result = subprocess.run(
        [
            sys.executable, "-m", "wirekafka", "serve",
            "--override", f"log.dirs={tmp_path / 'second'}",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            *(f"--override={k}={v}" for k, v in second.items()),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "broker.id 1 is already registered" in result.stderr


@pytest.mark.slow
def test_session_expiry_then_registration_again(
    broker_factory: BrokerFactory,
    zookeeper: ZooKeeper,  # noqa: F811
    kazoo: KazooClient,
) -> None:
    broker = broker_factory(settings=_settings(zookeeper, 2))
    path = "/wirekafka/brokers/ids/2"
    _, stat = kazoo.get(path)
    first_owner = stat.ephemeralOwner
    process = broker.process
    assert process is not None
    process.send_signal(signal.SIGSTOP)  # no heartbeats: ZooKeeper expires the session
    try:
        wait_for(lambda: kazoo.exists(path) is None, "the expired session's znode to go")
    finally:
        process.send_signal(signal.SIGCONT)
    wait_for(lambda: kazoo.exists(path) is not None, "the broker to register again")
    _, stat = kazoo.get(path)
    assert stat.ephemeralOwner != first_owner
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:  # and it still serves
        assert client.api_versions()


def test_zookeeper_unreachable_stops_startup_after_the_connection_timeout(
    zookeeper: ZooKeeper,  # noqa: F811
    tmp_path: Path,
) -> None:
    address = zookeeper.connect_string
    zookeeper.stop()
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable, "-m", "wirekafka", "serve",
            "--override", f"log.dirs={tmp_path / 'data'}",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0",
            "--override", f"zookeeper.connect={address}",
            "--override", "zookeeper.connection.timeout.ms=1500",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert f"cannot reach ZooKeeper at {address}" in result.stderr
    assert "zookeeper.connection.timeout.ms=1500" in result.stderr
    assert elapsed > 1.4  # it waited out the connection timeout before giving up
    assert "Traceback" not in result.stderr


def _leader(broker_address: tuple[str, int], topic: str) -> int | None:
    """The leader the broker's Metadata gives partition 0 of ``topic``; None when
    the topic is unknown to it."""
    with ProtocolClient(*broker_address, timeout_s=TIMEOUT_S) as client:
        response = client.metadata(topic)
    found = [t for t in response.topics if t.name == topic and t.partitions]
    return found[0].partitions[0].leader_id if found else None


def test_a_partition_state_written_after_its_topic_is_learned_from_its_watch(
    broker_factory: BrokerFactory,
    zookeeper: ZooKeeper,  # noqa: F811
    kazoo: KazooClient,
) -> None:
    # The test is the controller (as broker 99): it writes the topic's znode, and
    # its partition's state only once the broker has read the topic without one.
    root = "/wirekafka"
    kazoo.create(root + ControllerZNode.path, ControllerZNode.encode(99), makepath=True,
                 ephemeral=True)  # fmt: skip
    broker = broker_factory(settings=_settings(zookeeper, 4))
    topic = "late-state"
    kazoo.create(root + TopicZNode.path(topic), TopicZNode.encode(TopicAssignment({0: (4,)})))
    wait_for(
        lambda: _leader(broker.address, topic) == -1, "the broker to know the leaderless topic"
    )
    state = PartitionState(leader=4, leader_epoch=0, isr=(4,), controller_epoch=1)
    kazoo.create(
        root + TopicPartitionStateZNode.path(topic, 0),
        TopicPartitionStateZNode.encode(state),
        makepath=True,
    )
    written = time.monotonic()
    wait_for(lambda: _leader(broker.address, topic) == 4, "the broker to lead the partition")
    # told by a watch on the state's creation, not by the periodic re-read of everything
    assert time.monotonic() - written < REFRESH_SECONDS / 2
