"""Brokers registering in a real ZooKeeper (Debian's package): Kafka's znodes
and JSON, a chroot, a duplicate broker id, session expiry, ZooKeeper down."""

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
