"""Accepting connections: the connection limits, and back-pressure when descriptors run out.

A connection beyond ``max.connections`` or its address's limit is accepted
and closed at once, before anything is read from it, so the client learns at
once instead of waiting in the listen backlog, and the broker never holds more
sockets than its budget. Refusals are logged at most once per
``REFUSAL_LOG_INTERVAL_S``, with the count of those left out.

``accept`` failing for want of descriptors or memory (EMFILE, ENFILE, ENOMEM,
ENOBUFS) is back-pressure, as in trio's ``serve_listeners``: the acceptor
waits for a connection to close (or a growing delay, up to a second, since
log files free descriptors too) and tries again; the connection stays in the
backlog meanwhile. It says so once when it starts and once when it accepts
again.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Awaitable, Callable

import trio

from wirekafka.log_limiter import LogLimiter, since_last
from wirekafka.server.connection_quotas import ConnectionQuotas, PeerKey, peer_key

log = logging.getLogger("wirekafka.server")

ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
REFUSAL_LOG_INTERVAL_S = 10.0
FIRST_RETRY_DELAY_S = 0.1
MAX_RETRY_DELAY_S = 1.0


class Acceptor:
    """Accepts from listeners, counts connections against :class:`ConnectionQuotas`,
    and runs each admitted one as ``serve(stream)`` in the nursery it is given."""

    def __init__(
        self,
        quotas: ConnectionQuotas,
        serve: Callable[[trio.SocketStream], Awaitable[None]] | None = None,
    ) -> None:
        """``serve``: runs a connection, unless :meth:`accept_from` is given its own."""
        self.quotas = quotas
        self._serve = serve
        self._closed = trio.Event()  # set, and replaced, each time a connection closes
        self.no_connections = trio.Event()
        self.no_connections.set()
        self._refusals = LogLimiter(REFUSAL_LOG_INTERVAL_S)
        self._errors = LogLimiter(REFUSAL_LOG_INTERVAL_S)

    async def accept_from(
        self,
        listener: trio.abc.Listener[trio.SocketStream],
        nursery: trio.Nursery,
        serve: Callable[[trio.SocketStream], Awaitable[None]] | None = None,
    ) -> None:
        """Accept until cancelled; each connection is run with ``serve`` (default: the
        acceptor's own)."""
        serve = serve or self._serve
        assert serve is not None, "a listener's connections need someone to serve them"
        delay = FIRST_RETRY_DELAY_S
        starved_since: float | None = None
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno in ACCEPT_CAPACITY_ERRNOS:
                    if starved_since is None:
                        starved_since = trio.current_time()
                        log.warning(
                            "cannot accept connections: %s (%s), with %d open; waiting for "
                            "descriptors to be freed",
                            errno.errorcode[exc.errno],
                            os.strerror(exc.errno),
                            self.quotas.total,
                        )
                elif (left_out := self._errors.allow()) is not None:
                    log.error("accept failed: %s%s", exc, since_last(left_out))
                with trio.move_on_after(delay):
                    await self._closed.wait()  # a descriptor is free: try at once
                delay = min(delay * 2, MAX_RETRY_DELAY_S)
                continue
            delay = FIRST_RETRY_DELAY_S
            if starved_since is not None:
                log.info(
                    "accepting connections again after %.1f s",
                    trio.current_time() - starved_since,
                )
                starved_since = None
            await self._admit(stream, nursery, serve)

    async def _admit(
        self,
        stream: trio.SocketStream,
        nursery: trio.Nursery,
        serve: Callable[[trio.SocketStream], Awaitable[None]],
    ) -> None:
        try:
            address = stream.socket.getpeername()
        except OSError:  # gone already
            await trio.aclose_forcefully(stream)
            return
        peer = peer_key(address[0])
        refusal = self.quotas.try_inc(peer)
        if refusal is not None:
            await trio.aclose_forcefully(stream)
            if (left_out := self._refusals.allow()) is not None:
                log.warning(
                    "refused a connection from %s:%s: %s%s",
                    address[0],
                    address[1],
                    refusal,
                    since_last(left_out),
                )
            return
        if self.no_connections.is_set():
            self.no_connections = trio.Event()
        nursery.start_soon(self._run, stream, peer, serve)

    async def _run(
        self,
        stream: trio.SocketStream,
        peer: PeerKey,
        serve: Callable[[trio.SocketStream], Awaitable[None]],
    ) -> None:
        try:
            await serve(stream)
        finally:
            await trio.aclose_forcefully(stream)  # closed already, unless serve failed early
            self.quotas.dec(peer)
            self._closed.set()
            self._closed = trio.Event()
            if not self.quotas.total:
                self.no_connections.set()
