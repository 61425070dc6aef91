"""ACLs in ZooKeeper, where and as Kafka keeps them (:mod:`wirekafka.security.acl_znodes`).

* At startup a broker creates Kafka's ACL paths, notes the newest change
  notification and reads every ACL node (:meth:`ZkAclStore.load_acls`).
* A change reads a pattern's node with its version, applies the change and
  writes it back on that version (a node left without entries is deleted, one
  that did not exist is created), reading again when another broker wrote
  first; then it creates a sequential change notification naming the pattern
  (:meth:`ZkAclStore.update_acls`).
* Every broker watches both change roots; each new notification makes it
  reread the pattern's node and hand the bindings to the authorizer on the
  event loop (:meth:`ZkAclStore.follow_changes`). Notifications older than
  :data:`CHANGE_EXPIRATION_MS` are deleted as they are read, as Kafka does.

The ZooKeeper calls block: they run in worker threads, and kazoo's watches
only wake the event loop through its trio token.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from wirekafka.security.acl import AclBinding, PatternType, ResourcePattern
from wirekafka.security.acl_updates import NO_BINDINGS, AclChange, AclUpdate
from wirekafka.security.acl_znodes import (
    ACL_CHANGE_PREFIX,
    ACL_CHANGE_ROOTS,
    ACL_RESOURCE_TYPES,
    ACL_ROOTS,
    acl_change_node,
    acl_path,
    acl_paths_to_create,
    acl_type_path,
    decode_acl_change,
    decode_zk_acls,
    encode_zk_acls,
)
from wirekafka.worker_threads import METADATA, blocking, run_blocking
from wirekafka.zk.session import ZkSession, ZooKeeperError
from wirekafka.zk.watch_rounds import WatchRounds

log = logging.getLogger("wirekafka.zk.acls")

CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's: older notifications are deleted
UPDATE_TRIES = 10  # writes of one pattern's node lost to other brokers' before giving up
FOLLOW_SECONDS = 10.0  # a look at the change roots though no watch fired
RETRY_SECONDS = 0.5  # the next look after one that failed

ApplyAcls = Callable[[ResourcePattern, frozenset[AclBinding]], None]


def _sequence(name: str) -> int | None:
    """The number ZooKeeper gave a change notification, or None for another name."""
    digits = name.removeprefix(ACL_CHANGE_PREFIX)
    return int(digits) if digits != name and digits.isdigit() else None


class ZkAclStore:
    """The ACL nodes of one ZooKeeper session, and the changes other brokers announce."""

    def __init__(
        self, session: ZkSession, wall_clock_ms: Callable[[], float] | None = None
    ) -> None:
        self.session = session
        self._wall_clock_ms = wall_clock_ms or (lambda: time.time() * 1000)
        # per change root: the newest notification read (read and written by one thread at a time)
        self._last_seen: dict[PatternType, int] = dict.fromkeys(ACL_CHANGE_ROOTS, -1)
        self._rounds = WatchRounds(refresh_s=FOLLOW_SECONDS, retry_s=RETRY_SECONDS)
        self._watch = self._rounds.ask
        # a new session has lost the watches: look at the change roots again at once
        session.on_new_session(self._rounds.ask)

    # reading

    @blocking
    def load_acls(self) -> list[AclBinding]:
        """Create Kafka's ACL paths, note the newest notifications (those already
        there are covered by what is read next) and read every ACL node.
        ZooKeeperError when ZooKeeper fails or a node does not hold Kafka's JSON."""
        client = self.session.client
        try:
            for path in acl_paths_to_create():
                client.ensure_path(path)
            for pattern_type, root in ACL_CHANGE_ROOTS.items():
                sequences = (_sequence(name) for name in client.get_children(root))
                self._last_seen[pattern_type] = max(
                    (s for s in sequences if s is not None), default=-1
                )
            bindings: list[AclBinding] = []
            for pattern_type in ACL_ROOTS:
                for resource_type in ACL_RESOURCE_TYPES:
                    parent = acl_type_path(pattern_type, resource_type)
                    for name in client.get_children(parent):
                        pattern = ResourcePattern(resource_type, name, pattern_type)
                        bindings.extend(self._read(pattern)[0])
        except (KazooException, KazooTimeoutError) as exc:
            raise ZooKeeperError(f"reading the ACLs: ZooKeeper failed: {exc!r}") from exc
        except ValueError as exc:
            raise ZooKeeperError(f"reading the ACLs: {exc}") from exc
        return bindings

    @blocking
    def _read(self, pattern: ResourcePattern) -> tuple[frozenset[AclBinding], int]:
        """The bindings of ``pattern``'s node and the node's version (-1: no node).
        ValueError naming the node when it does not hold Kafka's JSON."""
        path = acl_path(pattern)
        try:
            data, stat = self.session.client.get(path)
        except NoNodeError:
            return NO_BINDINGS, -1
        try:
            found = decode_zk_acls(pattern.resource_type, pattern.name, pattern.pattern_type, data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        return frozenset(found), int(stat.version)

    # writing

    @blocking
    def update_acls(
        self, changes: Mapping[ResourcePattern, AclChange]
    ) -> dict[ResourcePattern, AclUpdate | ZooKeeperError]:
        """Apply each pattern's change to its node. A pattern whose write fails gets
        the error, and so do those after it (ZooKeeper is not answering)."""
        results: dict[ResourcePattern, AclUpdate | ZooKeeperError] = {}
        failure: ZooKeeperError | None = None
        for pattern, change in changes.items():
            if failure is None:
                try:
                    results[pattern] = self._update(pattern, change)
                    continue
                except (KazooException, KazooTimeoutError) as exc:
                    failure = ZooKeeperError(
                        f"writing the ACLs of {pattern}: ZooKeeper failed: {exc!r}"
                    )
                except ValueError as exc:  # a node that is not Kafka's JSON, a name with '/'
                    results[pattern] = ZooKeeperError(f"writing the ACLs of {pattern}: {exc}")
                    continue
                except ZooKeeperError as exc:
                    results[pattern] = exc
                    continue
            results[pattern] = failure
        return results

    @blocking
    def _update(self, pattern: ResourcePattern, change: AclChange) -> AclUpdate:
        client = self.session.client
        path = acl_path(pattern)
        for _ in range(UPDATE_TRIES):
            before, version = self._read(pattern)
            after = frozenset(b for b in change(before) if b.pattern == pattern)
            if after == before:
                return AclUpdate(before, after)
            try:
                if not after:
                    client.delete(path, version=version)
                elif version < 0:
                    client.create(path, encode_zk_acls(list(after)))
                else:
                    client.set(path, encode_zk_acls(list(after)), version=version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker wrote it first: read it again
            prefix, data = acl_change_node(pattern)
            client.create(prefix, data, sequence=True, makepath=True)
            log.info("ACLs of %s: %d binding(s), were %d", pattern, len(after), len(before))
            return AclUpdate(before, after)
        raise ZooKeeperError(
            f"the ACLs of {pattern} changed under each of {UPDATE_TRIES} writes; not written"
        )

    # following other brokers' changes

    async def follow_changes(self, apply: ApplyAcls) -> None:
        """Hand ``apply`` (on the event loop) the bindings of every pattern a new change
        notification names, read afresh, at every watch and :data:`FOLLOW_SECONDS`,
        until cancelled (the broker's nursery runs this)."""

        async def one_round() -> bool:
            for pattern, bindings in await run_blocking(METADATA, self.read_changes):
                apply(pattern, bindings)
            return True

        await self._rounds.run(
            one_round,
            (KazooException, KazooTimeoutError),
            "reading ACL change notifications failed",
        )

    @blocking
    def read_changes(self) -> list[tuple[ResourcePattern, frozenset[AclBinding]]]:
        """The patterns named by notifications not read before, with their bindings
        as their nodes hold them now; the change roots watched again. A notification or
        node that is not Kafka's is logged and passed over (the pattern keeps what
        this broker held)."""
        client = self.session.client
        patterns: dict[ResourcePattern, None] = {}
        for pattern_type, root in ACL_CHANGE_ROOTS.items():
            children = client.get_children(root, watch=self._watch)
            numbered = sorted(
                (seq, name) for name in children if (seq := _sequence(name)) is not None
            )
            fresh = [(seq, name) for seq, name in numbered if seq > self._last_seen[pattern_type]]
            for seq, name in fresh:
                with contextlib.suppress(NoNodeError):
                    data, _ = client.get(f"{root}/{name}")
                    try:
                        patterns[decode_acl_change(pattern_type, data)] = None
                    except ValueError as exc:
                        log.warning("ACL change %s/%s passed over: %s", root, name, exc)
                self._last_seen[pattern_type] = seq
            if fresh:
                self._purge(root, (name for _, name in numbered))
        reloads = []
        for pattern in patterns:
            try:
                bindings = self._read(pattern)[0]
            except ValueError as exc:
                log.error("ACL change for %s not applied: %s", pattern, exc)
                continue
            log.info("ACL change: %s now has %d binding(s)", pattern, len(bindings))
            reloads.append((pattern, bindings))
        return reloads

    @blocking
    def _purge(self, root: str, names: Iterable[str]) -> None:
        """Delete the notifications under ``root`` made more than
        :data:`CHANGE_EXPIRATION_MS` ago."""
        client = self.session.client
        oldest_kept_ms = self._wall_clock_ms() - CHANGE_EXPIRATION_MS
        for name in names:
            path = f"{root}/{name}"
            stat = client.exists(path)
            if stat is not None and stat.ctime < oldest_kept_ms:
                with contextlib.suppress(NoNodeError):
                    client.delete(path)
