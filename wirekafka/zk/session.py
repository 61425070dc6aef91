"""A ZooKeeper session for the broker, through kazoo: connect (with a chroot),
keep ephemeral registrations alive across session expiry, stop.

Every kazoo call of the project lives in ``wirekafka/zk/``. Kazoo runs its own
threads; callers on trio use :func:`trio.to_thread.run_sync` for blocking calls.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

log = logging.getLogger("wirekafka.zk")


class ZooKeeperError(RuntimeError):
    """ZooKeeper cannot be used: unreachable, or it refused what the broker needs."""


def split_connect(connect: str) -> tuple[str, str]:
    """``host:port,host:port/chroot`` -> (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    if not hosts:
        raise ZooKeeperError(f"zookeeper.connect={connect!r} names no host")
    chroot = f"/{chroot}".rstrip("/") if slash else ""
    return hosts, chroot


class ZkSession:
    """One kazoo client; ``on_new_session`` callbacks run after every (re)connect
    that follows a lost session, from a thread of their own."""

    def __init__(
        self, connect: str, *, session_timeout_ms: int, connection_timeout_ms: int
    ) -> None:
        self.connect = connect
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self._on_new_session: list[Callable[[], None]] = []
        self._lost = False
        self.client = KazooClient(
            hosts=self.hosts + self.chroot,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
            command_retry=KazooRetry(max_tries=5, max_delay=1.0),
        )

    def start(self) -> None:
        """Connect, creating the chroot if it is missing; ZooKeeperError after the
        connection timeout."""
        timeout_s = self.connection_timeout_ms / 1000
        if self.chroot:
            root = KazooClient(hosts=self.hosts, timeout=self.session_timeout_ms / 1000)
            try:
                root.start(timeout=timeout_s)
                root.ensure_path(self.chroot)
            except KazooTimeoutError:
                raise self._unreachable() from None
            finally:
                root.stop()
                root.close()
        try:
            self.client.start(timeout=timeout_s)
        except KazooTimeoutError:
            self.client.close()
            raise self._unreachable() from None
        self.client.add_listener(self._state_changed)
        log.info("connected to ZooKeeper at %s", self.connect)

    def _unreachable(self) -> ZooKeeperError:
        return ZooKeeperError(
            f"cannot reach ZooKeeper at {self.connect} within "
            f"zookeeper.connection.timeout.ms={self.connection_timeout_ms}"
        )

    def on_new_session(self, callback: Callable[[], None]) -> None:
        self._on_new_session.append(callback)

    def _state_changed(self, state: str) -> None:
        # Runs in kazoo's thread: nothing here may block.
        if state == KazooState.LOST:
            log.warning("ZooKeeper session lost (expired); ephemeral znodes are gone")
            self._lost = True
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended")
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            log.info("new ZooKeeper session; registering again")
            threading.Thread(target=self._renew, name="zk-renew", daemon=True).start()

    def _renew(self) -> None:
        for callback in self._on_new_session:
            try:
                callback()
            except (KazooException, ZooKeeperError) as exc:
                log.error("re-registration after a new ZooKeeper session failed: %s", exc)

    def stop(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()
