"""Users' SCRAM credentials in ZooKeeper, where Kafka keeps them in ZooKeeper mode.

A user's credentials are keys of its config znode, ``/config/users/<name>`` (the name
sanitized as Kafka does: :func:`~wirekafka.zk.znodes.sanitize_entity_name`), one key
a mechanism, in Kafka's text form, beside any other config of the user (quotas),
which is kept as it is::

    {"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=8192"}}

Every change comes with a ``/config/changes/config_change_<seq>`` notification
(``{"version":2,"entity_path":"users/<name>"}``), as Kafka's admin path writes it, so
Kafka's own brokers read the user again too. Notifications older than
:data:`NOTIFICATION_EXPIRY_MS` are deleted, as Kafka's brokers delete them.

:class:`ZkScramCredentials` keeps every user's credentials in memory, read with
ZooKeeper watches (on ``/config/users`` and each user's znode): :meth:`run`, a task
of the broker's nursery, reads them again when a watch fires, and every
:data:`REFRESH_SECONDS` should one have been missed. Reads and writes of ZooKeeper
run in worker threads; the cache is replaced on the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping

import trio
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)
from kazoo.handlers.threading import KazooTimeoutError

from wirekafka.security.scram_credentials import SCRAM_MECHANISMS
from wirekafka.storage.cluster_metadata import MetadataSaveError
from wirekafka.worker_threads import METADATA, blocking, run_blocking, run_on_loop
from wirekafka.zk.session import ZkSession, ZooKeeperError
from wirekafka.zk.watch_rounds import WatchRounds
from wirekafka.zk.znodes import (
    CONFIG_TYPE_USER,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ZnodeFormatError,
    desanitize_entity_name,
    sanitize_entity_name,
)

log = logging.getLogger("wirekafka.zk")

# Kafka's ZkNodeChangeNotificationListener: notifications live 15 minutes
NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000
WRITE_TRIES = 10  # a change racing other writers of the same users' znodes

# user -> mechanism -> Kafka's credential text
Credentials = Mapping[str, Mapping[str, str]]
# (user, mechanism) -> credential text, None to delete
CredentialChanges = Mapping[tuple[str, str], str | None]


class ZkScramCredentials:
    """The SCRAM credentials of ``/config/users``, cached; the store of
    :class:`wirekafka.broker.scram_users.ScramUsers` with ZooKeeper."""

    def __init__(
        self, session: ZkSession, trio_token: trio.lowlevel.TrioToken | None = None
    ) -> None:
        """``trio_token``: the event loop that owns the cache (the broker's); without one
        (tools, tests) the cache is replaced by whoever reads or writes."""
        self.session = session
        self._token = trio_token
        self._users: Credentials = {}
        self._rounds = WatchRounds(trio_token)
        self._watch = self._rounds.ask
        self._changes = 0  # the cache's replacements by this broker's writes, on the loop
        self._unreadable: set[tuple[str, bytes]] = set()  # (znode, data) logged once each

    def scram_credentials(self) -> Credentials:
        """user -> mechanism -> credential text, as last read or written (never blocks)."""
        return self._users

    # reading

    async def run(self) -> None:
        """Read the credentials again at every watch and :data:`REFRESH_SECONDS`, until
        cancelled (the broker's nursery runs this); a read that fails is logged and tried
        again after :data:`RETRY_SECONDS`."""

        async def one_round() -> bool:
            changes = self._changes
            users = await run_blocking(METADATA, self.read_users)
            if self._changes != changes:  # a write of this broker landed meanwhile
                return False
            self._users = users
            return True

        await self._rounds.run(
            one_round,
            (KazooException, KazooTimeoutError),
            "reading SCRAM credentials from ZooKeeper failed",
        )

    @blocking
    def refresh(self) -> None:
        """Read the credentials afresh (at startup, and after a new session, which has
        none of the old one's watches); ZooKeeperError when ZooKeeper fails."""
        try:
            users = self.read_users()
        except (KazooException, KazooTimeoutError) as exc:
            raise ZooKeeperError(f"reading SCRAM credentials: ZooKeeper failed: {exc!r}") from exc
        self._publish(lambda _: users)

    @blocking
    def read_users(self) -> dict[str, dict[str, str]]:
        """Every user's credentials, read with watches. A znode that cannot be read as
        Kafka's is left out (and logged, once)."""
        client = self.session.client
        type_path = ConfigEntityTypeZNode.path(CONFIG_TYPE_USER)
        try:
            children = client.get_children(type_path, watch=self._watch)
        except NoNodeError:
            client.exists(type_path, watch=self._watch)
            return {}
        users: dict[str, dict[str, str]] = {}
        for child in children:
            try:
                data = client.get(
                    ConfigEntityZNode.path(CONFIG_TYPE_USER, child), watch=self._watch
                )[0]
            except NoNodeError:
                continue
            try:
                user = desanitize_entity_name(child)
                config = ConfigEntityZNode.decode(data)
            except (ValueError, ZnodeFormatError) as exc:
                if (child, data) not in self._unreadable:
                    self._unreadable.add((child, data))
                    log.warning("ignoring the SCRAM credentials of user znode %r: %s", child, exc)
                continue
            credentials = {k: v for k, v in config.items() if k in SCRAM_MECHANISMS}
            if credentials:
                users[user] = credentials
        return users

    # writing

    @blocking
    def set_scram_credentials(self, changes: CredentialChanges) -> None:
        """Apply ``(user, mechanism) -> credential text`` (None: delete) to the users'
        znodes in one ZooKeeper transaction (all or nothing), and notify the change.
        Raises MetadataSaveError (nothing changed) when ZooKeeper fails or a user's
        name cannot be a znode."""
        by_user: dict[str, dict[str, str | None]] = {}
        for (user, mechanism), text in changes.items():
            by_user.setdefault(user, {})[mechanism] = text
        try:
            written = self._write(by_user)
        except (KazooException, KazooTimeoutError, ZnodeFormatError, ValueError) as exc:
            raise MetadataSaveError(
                f"writing SCRAM credentials to ZooKeeper failed: {exc}"
            ) from exc

        def change(users: Credentials) -> Credentials:
            updated = dict(users)
            for user, credentials in written.items():
                if credentials:
                    updated[user] = credentials
                else:
                    updated.pop(user, None)
            return updated

        self._publish(change, counted=True)

    @blocking
    def _write(self, by_user: Mapping[str, Mapping[str, str | None]]) -> dict[str, dict[str, str]]:
        """Write the users' znodes and their notifications in one transaction, each znode
        conditional on the version read (a race with another writer reads and writes
        again); returns each user's credentials as written."""
        client = self.session.client
        client.ensure_path(ConfigEntityTypeZNode.path(CONFIG_TYPE_USER))
        client.ensure_path(ConfigEntityChangeNotificationZNode.path)
        for _ in range(WRITE_TRIES):
            transaction = client.transaction()
            written: dict[str, dict[str, str]] = {}
            for user, mechanisms in by_user.items():
                path = ConfigEntityZNode.path(CONFIG_TYPE_USER, sanitize_entity_name(user))
                try:
                    data, stat = client.get(path)
                    config, version = ConfigEntityZNode.decode(data), stat.version
                except NoNodeError:
                    config, version = {}, None
                for mechanism, text in mechanisms.items():
                    if text is None:
                        config.pop(mechanism, None)
                    else:
                        config[mechanism] = text
                encoded = ConfigEntityZNode.encode(config)
                if version is None:
                    transaction.create(path, encoded)
                else:
                    transaction.set_data(path, encoded, version=version)
                written[user] = {k: v for k, v in config.items() if k in SCRAM_MECHANISMS}
                transaction.create(
                    ConfigEntityChangeNotificationSequenceZNode.path_prefix,
                    ConfigEntityChangeNotificationSequenceZNode.encode(
                        CONFIG_TYPE_USER, sanitize_entity_name(user)
                    ),
                    sequence=True,
                )
            results = transaction.commit()
            # the operation that failed, the others answer RolledBackError
            failures = [
                r
                for r in results
                if isinstance(r, Exception) and not isinstance(r, RolledBackError)
            ]
            if not failures:
                break
            if not isinstance(failures[0], (BadVersionError, NodeExistsError, NoNodeError)):
                raise failures[0]
        else:
            raise MetadataSaveError(
                f"the users' znodes kept changing: {WRITE_TRIES} writes lost the race"
            )
        self._purge_notifications()
        return written

    @blocking
    def _purge_notifications(self) -> None:
        """Delete the notifications older than :data:`NOTIFICATION_EXPIRY_MS` (ZooKeeper's
        creation time), as Kafka's brokers do; one deleted meanwhile is no matter."""
        client = self.session.client
        now_ms = time.time() * 1000
        prefix = ConfigEntityChangeNotificationSequenceZNode.prefix
        for child in client.get_children(ConfigEntityChangeNotificationZNode.path):
            if not child.startswith(prefix):
                continue
            path = f"{ConfigEntityChangeNotificationZNode.path}/{child}"
            with contextlib.suppress(NoNodeError):
                if now_ms - client.exists(path).ctime > NOTIFICATION_EXPIRY_MS:
                    client.delete(path)

    def _publish(
        self, change: Callable[[Credentials], Credentials], *, counted: bool = False
    ) -> None:
        """Replace the cache on the event loop (:func:`run_on_loop`). ``counted``: a
        write of this broker, which a read under way when it lands must not undo."""

        def apply() -> None:
            self._users = change(self._users)
            if counted:
                self._changes += 1
                self._rounds.ask_on_loop()

        run_on_loop(self._token, apply)
