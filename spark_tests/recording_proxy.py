"""A TCP proxy in front of a broker that notes every request's API key and client id.

What the broker sees of a client is in its requests' headers: the API key and
the client id (kafka-clients names a consumer ``consumer-<group.id>-<n>``). The
broker keeps no log of them, so a test puts this proxy between the client and
the broker: the broker advertises the proxy's address (``advertised.listeners``),
so clients that bootstrap through it keep talking through it. Bytes pass
unchanged both ways; the client-to-broker side is split into frames (size,
then API key, version, correlation id and client id, as in every request
header version) only to be noted.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
JOIN_GROUP = 11


@dataclass(frozen=True, slots=True)
class Seen:
    api_key: int
    api_version: int
    client_id: str | None


class RecordingProxy:
    """Listens on 127.0.0.1; :meth:`forward_to` names the broker before clients connect."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._target: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._seen: list[Seen] = []
        self._sockets: list[socket.socket] = []
        self._closed = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def forward_to(self, address: tuple[str, int]) -> None:
        self._target = address
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def seen(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def client_ids(self, api_key: int, since: int = 0) -> set[str | None]:
        """Client ids of the requests of one API, from the ``since``-th request noted on."""
        return {s.client_id for s in self.seen()[since:] if s.api_key == api_key}

    def close(self) -> None:
        self._closed = True
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in [self._listener, *sockets]:
            with suppress(OSError):
                sock.close()

    # -- the copying

    def _accept(self) -> None:
        assert self._target is not None
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._copy, args=(upstream, client), daemon=True).start()

    def _copy(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _shut(sink)

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        pending = bytearray()
        try:
            while data := client.recv(65536):
                upstream.sendall(data)
                pending += data
                while len(pending) >= 4:
                    (size,) = struct.unpack_from(">i", pending)
                    if len(pending) < 4 + size:
                        break
                    self._note(bytes(pending[4 : 4 + size]))
                    del pending[: 4 + size]
        except OSError:
            pass
        finally:
            _shut(upstream)

    def _note(self, frame: bytes) -> None:
        api_key, api_version, _correlation_id, length = struct.unpack_from(">hhih", frame)
        client_id = None if length < 0 else frame[10 : 10 + length].decode(errors="replace")
        with self._lock:
            self._seen.append(Seen(api_key, api_version, client_id))


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def recording_proxy() -> Iterator[RecordingProxy]:
    proxy = RecordingProxy()
    try:
        yield proxy
    finally:
        proxy.close()
