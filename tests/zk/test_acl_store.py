"""ACLs in ZooKeeper's tree as Kafka keeps them: versioned writes of a pattern's node,
its deletion with the last binding, change notifications that another broker reads
(and purges when old), and ZooKeeper failures that leave nothing half-done.

The tree is an in-memory ZooKeeper with versions, sequential nodes, creation times
and child watches (kazoo's calls as the store makes them)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError

from wirekafka.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from wirekafka.security.acl_updates import adding, removing
from wirekafka.worker_threads import METADATA, run_blocking
from wirekafka.zk.acl_store import CHANGE_EXPIRATION_MS, UPDATE_TRIES, ZkAclStore
from wirekafka.zk.session import ZooKeeperError

LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALICE = "User:alice"


@dataclass
class Stat:
    version: int
    ctime: float


class MemoryZooKeeper:
    """The kazoo calls the ACL store makes, on a dict of znodes."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, Stat]] = {}
        self.sequences: dict[str, int] = {}
        self.now_ms = 1_000_000.0
        self.watches: list[Callable[[object], None]] = []
        self.error: Exception | None = None
        self.before_write: Callable[[str], None] | None = None  # another broker's racing write
        self._lock = threading.Lock()

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    @staticmethod
    def _parent(path: str) -> str:
        return path.rsplit("/", 1)[0]

    def _racing(self, path: str) -> None:
        racing, self.before_write = self.before_write, None
        if racing is not None:
            racing(path)

    def ensure_path(self, path: str) -> None:
        self._check()
        if path and path not in self.nodes:
            self.ensure_path(self._parent(path))
            self.nodes[path] = (b"", Stat(0, self.now_ms))

    def create(
        self, path: str, value: bytes = b"", sequence: bool = False, makepath: bool = False
    ) -> str:
        self._check()
        self._racing(path)
        parent = self._parent(path)
        if parent and parent not in self.nodes:
            if not makepath:
                raise NoNodeError(parent)
            self.ensure_path(parent)
        if sequence:
            number = self.sequences.get(parent, 0)
            self.sequences[parent] = number + 1
            path = f"{path}{number:010d}"
        if path in self.nodes:
            raise NodeExistsError(path)
        self.nodes[path] = (value, Stat(0, self.now_ms))
        if sequence:
            for watch in self.watches:
                watch(None)
        return path

    def get(self, path: str, watch: object = None) -> tuple[bytes, Stat]:
        self._check()
        if path not in self.nodes:
            raise NoNodeError(path)
        return self.nodes[path]

    def exists(self, path: str) -> Stat | None:
        self._check()
        found = self.nodes.get(path)
        return None if found is None else found[1]

    def get_children(self, path: str, watch: Callable[[object], None] | None = None) -> list[str]:
        self._check()
        if path not in self.nodes:
            raise NoNodeError(path)
        if watch is not None and watch not in self.watches:
            self.watches.append(watch)
        return [p.rsplit("/", 1)[1] for p in self.nodes if self._parent(p) == path]

    def set(self, path: str, value: bytes, version: int = -1) -> Stat:
        self._check()
        self._racing(path)
        if path not in self.nodes:
            raise NoNodeError(path)
        stat = self.nodes[path][1]
        if version not in (-1, stat.version):
            raise BadVersionError(path)
        self.nodes[path] = (value, Stat(stat.version + 1, stat.ctime))
        return self.nodes[path][1]

    def delete(self, path: str, version: int = -1) -> None:
        self._check()
        self._racing(path)
        if path not in self.nodes:
            raise NoNodeError(path)
        if version not in (-1, self.nodes[path][1].version):
            raise BadVersionError(path)
        del self.nodes[path]

    def json(self, path: str) -> Any:
        return json.loads(self.nodes[path][0])

    def children(self, path: str) -> list[str]:
        return sorted(self.get_children(path))


class FakeSession:
    def __init__(self, client: MemoryZooKeeper) -> None:
        self.client = client
        self.new_session_callbacks: list[Callable[[], None]] = []

    def on_new_session(self, callback: Callable[[], None]) -> None:
        self.new_session_callbacks.append(callback)


def binding(
    name: str,
    pattern: PatternType = LIT,
    operation: AclOperation = AclOperation.READ,
    principal: str = ALICE,
    resource_type: ResourceType = ResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(
        resource_type, name, pattern, principal, "*", operation, AclPermissionType.ALLOW
    )


def store_on(zk: MemoryZooKeeper) -> ZkAclStore:
    store = ZkAclStore(FakeSession(zk), lambda: zk.now_ms)  # type: ignore[arg-type]
    store.load_acls()
    return store


@pytest.fixture
def zk() -> MemoryZooKeeper:
    return MemoryZooKeeper()


def add(store: ZkAclStore, *bindings: AclBinding) -> None:
    patterns = {b.pattern for b in bindings}
    changes = {p: adding(b for b in bindings if b.pattern == p) for p in patterns}
    for result in store.update_acls(changes).values():
        assert not isinstance(result, Exception), result


def test_a_literal_acl_is_kafkas_node_and_notification(zk):
    store = store_on(zk)
    assert "/kafka-acl/Topic" in zk.nodes and "/kafka-acl-extended/prefixed/Group" in zk.nodes
    add(store, binding("orders"), binding("orders", operation=AclOperation.WRITE))
    assert zk.json("/kafka-acl/Topic/orders") == {
        "version": 1,
        "acls": [
            {"principal": ALICE, "permissionType": "Allow", "host": "*", "operation": "Read"},
            {"principal": ALICE, "permissionType": "Allow", "host": "*", "operation": "Write"},
        ],
    }
    assert zk.children("/kafka-acl-changes") == ["acl_changes_0000000000"]
    assert zk.nodes["/kafka-acl-changes/acl_changes_0000000000"][0] == b"TOPIC:orders"


def test_a_prefixed_acl_goes_under_kafka_acl_extended(zk):
    store = store_on(zk)
    add(store, binding("ord", PRE, resource_type=ResourceType.GROUP))
    assert zk.json("/kafka-acl-extended/prefixed/Group/ord")["acls"][0]["operation"] == "Read"
    [change] = zk.children("/kafka-acl-extended-changes")
    assert json.loads(zk.nodes[f"/kafka-acl-extended-changes/{change}"][0]) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "ord",
        "patternType": "PREFIXED",
    }
    assert zk.children("/kafka-acl-changes") == []


def test_deleting_the_last_binding_deletes_the_node_and_nothing_new_writes_nothing(zk):
    store = store_on(zk)
    add(store, binding("t"), binding("t", operation=AclOperation.WRITE))
    pattern = ResourcePattern(ResourceType.TOPIC, "t", LIT)
    write_only = AclBindingFilter(operation=AclOperation.WRITE)
    [update] = store.update_acls({pattern: removing([write_only])}).values()
    assert not isinstance(update, Exception)
    assert update.removed == {binding("t", operation=AclOperation.WRITE)}
    assert len(zk.json("/kafka-acl/Topic/t")["acls"]) == 1
    version = zk.nodes["/kafka-acl/Topic/t"][1].version
    [unchanged] = store.update_acls({pattern: adding([binding("t")])}).values()
    assert not isinstance(unchanged, Exception) and not unchanged.changed
    assert zk.nodes["/kafka-acl/Topic/t"][1].version == version
    assert len(zk.children("/kafka-acl-changes")) == 2
    store.update_acls({pattern: removing([AclBindingFilter()])})
    assert "/kafka-acl/Topic/t" not in zk.nodes
    assert len(zk.children("/kafka-acl-changes")) == 3


def test_a_write_another_broker_made_first_is_read_and_kept(zk):
    ours, theirs = store_on(zk), store_on(zk)
    add(ours, binding("t"))

    def their_write(_path: str) -> None:
        add(theirs, binding("t", principal="User:bob"))

    zk.before_write = their_write
    add(ours, binding("t", operation=AclOperation.WRITE))
    principals_ops = sorted(
        (a["principal"], a["operation"]) for a in zk.json("/kafka-acl/Topic/t")["acls"]
    )
    assert principals_ops == [(ALICE, "Read"), (ALICE, "Write"), ("User:bob", "Read")]

    # a node another broker created meanwhile
    zk.before_write = lambda _path: add(theirs, binding("u", principal="User:bob"))
    add(ours, binding("u"))
    assert len(zk.json("/kafka-acl/Topic/u")["acls"]) == 2


def test_a_node_that_keeps_changing_is_given_up_with_an_error(zk):
    store = store_on(zk)
    add(store, binding("t"))
    pattern = ResourcePattern(ResourceType.TOPIC, "t", LIT)
    writes = 0
    real_set = zk.set

    def always_racing(path: str, value: bytes, version: int = -1) -> Stat:
        nonlocal writes
        writes += 1
        real_set(path, zk.nodes[path][0])  # someone else's write: the version moves on
        return real_set(path, value, version)

    zk.set = always_racing  # type: ignore[method-assign]
    [result] = store.update_acls({pattern: adding([binding("t", principal="User:x")])}).values()
    assert isinstance(result, ZooKeeperError) and "changed under each" in str(result)
    assert writes == UPDATE_TRIES


def test_zookeeper_failures_are_errors_for_each_pattern_and_write_nothing(zk):
    store = store_on(zk)
    zk.error = ConnectionLoss()
    patterns = [ResourcePattern(ResourceType.TOPIC, name, LIT) for name in ("a", "b")]
    results = store.update_acls({p: adding([binding(p.name)]) for p in patterns})
    assert all(isinstance(r, ZooKeeperError) for r in results.values())
    assert "ZooKeeper failed" in str(results[patterns[0]])
    zk.error = None
    assert zk.children("/kafka-acl/Topic") == []
    assert zk.children("/kafka-acl-changes") == []
    with pytest.raises(ZooKeeperError, match="reading the ACLs"):
        zk.error = ConnectionLoss()
        store.load_acls()


def test_a_resource_name_with_a_slash_is_an_error_not_a_node(zk):
    store = store_on(zk)
    pattern = ResourcePattern(ResourceType.TOPIC, "a/b", LIT)
    [result] = store.update_acls({pattern: adding([binding("a/b")])}).values()
    assert isinstance(result, ZooKeeperError) and "znode name" in str(result)


def test_another_broker_loads_everything_and_then_reads_each_change(zk):
    first = store_on(zk)
    add(first, binding("t"), binding("p", PRE), binding("g", resource_type=ResourceType.GROUP))
    second = store_on(zk)
    assert sorted(b.resource_name for b in second.load_acls()) == ["g", "p", "t"]
    assert second.read_changes() == []  # what was there at load time is loaded already

    add(first, binding("t", operation=AclOperation.WRITE), binding("p2", PRE))
    reloads = dict(second.read_changes())
    assert reloads == {
        ResourcePattern(ResourceType.TOPIC, "t", LIT): frozenset(
            {binding("t"), binding("t", operation=AclOperation.WRITE)}
        ),
        ResourcePattern(ResourceType.TOPIC, "p2", PRE): frozenset({binding("p2", PRE)}),
    }
    first.update_acls({binding("t").pattern: removing([AclBindingFilter()])})
    assert second.read_changes() == [(binding("t").pattern, frozenset())]
    assert second.read_changes() == []


def test_notifications_older_than_fifteen_minutes_are_purged(zk):
    first, second = store_on(zk), store_on(zk)
    add(first, binding("old"))
    zk.now_ms += CHANGE_EXPIRATION_MS + 1
    add(first, binding("new"))
    assert len(zk.children("/kafka-acl-changes")) == 2
    assert [p.name for p, _ in second.read_changes()] == ["old", "new"]
    assert zk.children("/kafka-acl-changes") == ["acl_changes_0000000001"]


def test_bad_node_data_stops_the_load_and_is_passed_over_in_a_change(zk, caplog):
    first = store_on(zk)
    add(first, binding("t"))
    second = store_on(zk)
    zk.nodes["/kafka-acl/Topic/t"] = (b"{not json", zk.nodes["/kafka-acl/Topic/t"][1])
    zk.create("/kafka-acl-changes/acl_changes_", b"TOPIC:t", sequence=True)
    zk.create("/kafka-acl-changes/acl_changes_", b"no separator", sequence=True)
    assert second.read_changes() == []
    assert "/kafka-acl/Topic/t" in caplog.text and "not ResourceType:name" in caplog.text
    with pytest.raises(ZooKeeperError, match="/kafka-acl/Topic/t"):
        store_on(zk)


def test_followed_changes_reach_the_event_loop_when_the_watch_fires(zk):
    first, second = store_on(zk), store_on(zk)
    applied: list[tuple[ResourcePattern, frozenset[AclBinding]]] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(second.follow_changes, lambda p, b: applied.append((p, b)))
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(5):  # the fallback look comes after FOLLOW_SECONDS only
                await run_blocking(METADATA, add, first, binding("t"))
                while not applied:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()

    trio.run(main)
    assert applied == [(binding("t").pattern, frozenset({binding("t")}))]
