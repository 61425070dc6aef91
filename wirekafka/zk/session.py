"""A ZooKeeper session for the broker, through kazoo: connect (with a chroot),
keep ephemeral registrations alive across session expiry, stop.

Every kazoo call of the project lives in ``wirekafka/zk/``; each one blocks,
so the functions making them are marked ``blocking`` and the broker calls them
through :func:`wirekafka.worker_threads.run_blocking`. Kazoo runs its own
threads: its callbacks here only hand news to the event loop, through its
trio token, where :meth:`ZkSession.renew_registrations` (a task of the
broker's nursery) registers again after a new session.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import trio
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from wirekafka.worker_threads import METADATA, blocking, run_blocking

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
    """One kazoo client; ``on_new_session`` callbacks (blocking) run in a worker
    thread after every (re)connect that follows a lost session, while
    :meth:`renew_registrations` runs."""

    def __init__(
        self, connect: str, *, session_timeout_ms: int, connection_timeout_ms: int
    ) -> None:
        self.connect = connect
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self._on_new_session: list[Callable[[], None]] = []
        self._lost = False  # kazoo's thread alone reads and writes it
        self._stopping = False  # stop() ends the session: its LOST is no expiry
        self._token: trio.lowlevel.TrioToken | None = None  # of renew_registrations' loop
        self._renewed: trio.Event | None = None  # on that loop: a new session came
        self._renewal_due = False  # a new session came; set on kazoo's thread, cleared on the loop
        self.client = KazooClient(
            hosts=self.hosts + self.chroot,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
            command_retry=KazooRetry(max_tries=5, max_delay=1.0),
        )

    @blocking
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
        # Runs in kazoo's thread: nothing here may block, nor touch the broker's
        # state; the event loop hears of a new session through its token.
        if state == KazooState.LOST:
            if not self._stopping:
                log.warning("ZooKeeper session lost (expired); ephemeral znodes are gone")
            self._lost = True
        elif state == KazooState.SUSPENDED:
            log.warning("ZooKeeper connection suspended")
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            log.info("new ZooKeeper session; registering again")
            self._renewal_due = True  # first: renew_registrations may be starting
            token = self._token
            if token is not None:
                with contextlib.suppress(trio.RunFinishedError):  # the broker has stopped
                    token.run_sync_soon(self._session_renewed)

    def _session_renewed(self) -> None:
        """On the event loop: wake :meth:`renew_registrations`."""
        if self._renewal_due and self._renewed is not None:
            self._renewal_due = False
            self._renewed.set()

    async def renew_registrations(self) -> None:
        """Run the ``on_new_session`` callbacks, in a worker thread, after every new
        session, until cancelled (the broker's nursery runs this)."""
        self._renewed = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        self._session_renewed()  # one that came before this task started
        while True:
            await self._renewed.wait()
            self._renewed = trio.Event()
            for callback in self._on_new_session:
                try:
                    await run_blocking(METADATA, callback)
                except (KazooException, KazooTimeoutError, ZooKeeperError) as exc:
                    log.error("re-registration after a new ZooKeeper session failed: %s", exc)

    @blocking
    def stop(self) -> None:
        self._stopping = True
        try:
            self.client.stop()
        finally:
            self.client.close()
