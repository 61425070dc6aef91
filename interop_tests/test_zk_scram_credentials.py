"""Users' SCRAM credentials in a real ZooKeeper (:class:`ZkScramCredentials`): Kafka's
``/config/users/<name>`` znodes and ``/config/changes`` notifications, and a second
store's cache following a change within a second."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import trio
from kazoo.client import KazooClient

from interop_tests.zookeeper import ZooKeeper, zookeeper  # noqa: F401
from wirekafka.security.scram_credentials import format_credential, new_credential
from wirekafka.storage.cluster_metadata import MetadataSaveError
from wirekafka.worker_threads import METADATA, run_blocking
from wirekafka.zk import scram_credentials
from wirekafka.zk.scram_credentials import ZkScramCredentials
from wirekafka.zk.session import ZkSession

CHROOT = "/kafka"
TIMEOUT_S = 30.0
SEEN_WITHIN_S = 1.0

ALICE_256 = format_credential(new_credential("SCRAM-SHA-256", "alice-secret", 8192))
ALICE_512 = format_credential(new_credential("SCRAM-SHA-512", "alice-secret"))
BOB_512 = format_credential(new_credential("SCRAM-SHA-512", "bob-secret"))


@pytest.fixture
def kazoo(zookeeper: ZooKeeper) -> Iterator[KazooClient]:  # noqa: F811
    client = KazooClient(zookeeper.connect_string + CHROOT)
    root = KazooClient(zookeeper.connect_string)
    root.start(timeout=TIMEOUT_S)
    root.ensure_path(CHROOT)
    root.stop()
    root.close()
    client.start(timeout=TIMEOUT_S)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def sessions(zookeeper: ZooKeeper, kazoo: KazooClient) -> Iterator[list[ZkSession]]:  # noqa: F811
    """Two brokers' sessions."""
    made = [
        ZkSession(
            zookeeper.connect_string + CHROOT, session_timeout_ms=6000, connection_timeout_ms=10000
        )
        for _ in range(2)
    ]
    for session in made:
        session.start()
    yield made
    for session in made:
        session.stop()


def znode(kazoo: KazooClient, path: str) -> dict[str, object]:
    return json.loads(kazoo.get(path)[0])


def notifications(kazoo: KazooClient) -> list[str]:
    return [
        json.loads(kazoo.get(f"/config/changes/{child}")[0])["entity_path"]
        for child in sorted(kazoo.get_children("/config/changes"))
    ]


async def until_seen(store: ZkScramCredentials, expected: dict[str, dict[str, str]]) -> float:
    """How long the store took to hold ``expected``; fails after :data:`SEEN_WITHIN_S`."""
    started = trio.current_time()
    with trio.fail_after(SEEN_WITHIN_S):
        while store.scram_credentials() != expected:
            await trio.sleep(0.01)
    return trio.current_time() - started


def test_credentials_in_kafkas_znodes_followed_by_another_broker(
    sessions: list[ZkSession], kazoo: KazooClient
) -> None:
    # a user of Kafka's with a quota and a name Kafka sanitizes
    kazoo.create(
        "/config/users/CN%3Dcarol%2C%20O%3Dx",
        b'{"version":1,"config":{"producer_byte_rate":"1024","SCRAM-SHA-512":"'
        + BOB_512.encode()
        + b'"}}',
        makepath=True,
    )
    kazoo.create("/config/users/quota-only", b'{"version":1,"config":{"consumer_byte_rate":"5"}}')

    async def main() -> None:
        token = trio.lowlevel.current_trio_token()
        writer = ZkScramCredentials(sessions[0], token)
        follower = ZkScramCredentials(sessions[1], token)
        await run_blocking(METADATA, writer.refresh)
        carol = {"CN=carol, O=x": {"SCRAM-SHA-512": BOB_512}}
        assert writer.scram_credentials() == carol
        async with trio.open_nursery() as nursery:
            nursery.start_soon(follower.run)
            await until_seen(follower, carol)
            # a new user
            await run_blocking(
                METADATA,
                writer.set_scram_credentials,
                {("alice", "SCRAM-SHA-256"): ALICE_256, ("alice", "SCRAM-SHA-512"): ALICE_512},
            )
            both = {**carol, "alice": {"SCRAM-SHA-256": ALICE_256, "SCRAM-SHA-512": ALICE_512}}
            assert writer.scram_credentials() == both  # at once on the writer
            await until_seen(follower, both)
            # a change of a known user, keeping its quota
            await run_blocking(
                METADATA,
                writer.set_scram_credentials,
                {("CN=carol, O=x", "SCRAM-SHA-512"): None, ("alice", "SCRAM-SHA-512"): None},
            )
            alice = {"alice": {"SCRAM-SHA-256": ALICE_256}}
            assert writer.scram_credentials() == alice
            await until_seen(follower, alice)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert znode(kazoo, "/config/users/alice") == {
        "version": 1,
        "config": {"SCRAM-SHA-256": ALICE_256},
    }
    assert znode(kazoo, "/config/users/CN%3Dcarol%2C%20O%3Dx") == {
        "version": 1,
        "config": {"producer_byte_rate": "1024"},
    }
    assert znode(kazoo, "/config/users/quota-only")["config"] == {"consumer_byte_rate": "5"}
    # one a user changed, in the order of the changes
    assert notifications(kazoo) == ["users/alice", "users/CN%3Dcarol%2C%20O%3Dx", "users/alice"]
    assert kazoo.get_children("/config/changes")[0].startswith("config_change_")


def test_a_changed_znode_is_read_again(sessions: list[ZkSession], kazoo: KazooClient) -> None:
    # Kafka's own tools (or brokers) write the znode: the watch on it fires
    async def main() -> None:
        store = ZkScramCredentials(sessions[0], trio.lowlevel.current_trio_token())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.run)
            await until_seen(store, {})
            config = {"version": 1, "config": {"SCRAM-SHA-256": ALICE_256}}
            await run_blocking(
                METADATA,
                lambda: kazoo.create(
                    "/config/users/alice", json.dumps(config).encode(), makepath=True
                ),
            )
            await until_seen(store, {"alice": {"SCRAM-SHA-256": ALICE_256}})
            config["config"] = {"SCRAM-SHA-512": ALICE_512}
            await run_blocking(
                METADATA, lambda: kazoo.set("/config/users/alice", json.dumps(config).encode())
            )
            await until_seen(store, {"alice": {"SCRAM-SHA-512": ALICE_512}})
            # a znode that is not Kafka's JSON is left out, the others kept
            await run_blocking(METADATA, lambda: kazoo.create("/config/users/broken", b"{"))
            await run_blocking(METADATA, lambda: kazoo.delete("/config/users/alice"))
            await until_seen(store, {})
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_old_notifications_are_deleted(
    sessions: list[ZkSession], kazoo: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    kazoo.ensure_path("/config/changes")
    old = kazoo.create(
        "/config/changes/config_change_",
        b'{"version":2,"entity_path":"topics/t"}',
        sequence=True,
    )
    time.sleep(0.3)
    monkeypatch.setattr(scram_credentials, "NOTIFICATION_EXPIRY_MS", 200)
    store = ZkScramCredentials(sessions[0])
    store.set_scram_credentials({("alice", "SCRAM-SHA-256"): ALICE_256})
    assert kazoo.exists(old) is None
    assert notifications(kazoo) == ["users/alice"]


def test_a_name_that_cannot_be_a_znode_changes_nothing(
    sessions: list[ZkSession], kazoo: KazooClient
) -> None:
    store = ZkScramCredentials(sessions[0])
    with pytest.raises(MetadataSaveError, match="cannot be a znode name"):
        store.set_scram_credentials(
            {("alice", "SCRAM-SHA-256"): ALICE_256, ("..", "SCRAM-SHA-256"): ALICE_256}
        )
    assert store.scram_credentials() == {}
    assert kazoo.exists("/config/users/alice") is None
