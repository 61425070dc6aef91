"""How many connections the broker holds, in all and per client address (Kafka's ConnectionQuotas).

``max.connections`` bounds them all, ``max.connections.per.ip`` those from one
address, and ``max.connections.per.ip.overrides`` (``host:count,...``) sets
another limit for the addresses it names. A connection beyond a limit is
refused: the acceptor closes it at once, before reading anything from it.
The counts are taken when a connection is accepted and given back when its
task ends, whichever way it ends.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping

from wirekafka.worker_threads import blocking

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
PeerKey = IpAddress | str  # a peer address that is not an IP address is counted by its text


def peer_key(host: str) -> PeerKey:
    """The address a peer is counted under: an IPv4 client of a dual-stack listener
    (``::ffff:127.0.0.1``) counts as its IPv4 address, as Java's InetAddress has it."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@blocking
def resolve_overrides(overrides: Mapping[str, int]) -> dict[PeerKey, int]:
    """Each host of ``max.connections.per.ip.overrides`` as the addresses it resolves to;
    an address written out wins over a name that resolves to it.

    Blocking (name lookups): run it in a worker thread. A name that does not
    resolve raises :class:`OSError` naming the key, as Kafka fails to start.
    """
    resolved: dict[PeerKey, int] = {}
    literal: dict[PeerKey, int] = {}
    for host, count in overrides.items():
        key = peer_key(host)
        if not isinstance(key, str):
            literal[key] = count
            continue
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise OSError(
                f"max.connections.per.ip.overrides: cannot resolve {host!r}: {exc}"
            ) from exc
        for info in infos:
            resolved[peer_key(str(info[4][0]))] = count
    return resolved | literal


class ConnectionQuotas:
    """The connection counts and their limits; single-threaded (the event loop's)."""

    __slots__ = ("_counts", "max_connections", "max_connections_per_ip", "overrides", "total")

    def __init__(
        self,
        max_connections: int,
        max_connections_per_ip: int,
        overrides: Mapping[PeerKey, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.overrides = dict(overrides or {})
        self.total = 0
        self._counts: dict[PeerKey, int] = {}

    def count(self, peer: PeerKey) -> int:
        return self._counts.get(peer, 0)

    def limit_for(self, peer: PeerKey) -> int:
        return self.overrides.get(peer, self.max_connections_per_ip)

    def try_inc(self, peer: PeerKey) -> str | None:
        """Count a new connection from ``peer``; or, if a limit is reached, count
        nothing and say which (the key and its value)."""
        if self.total >= self.max_connections:
            return f"max.connections={self.max_connections} reached"
        count = self._counts.get(peer, 0)
        if count >= self.limit_for(peer):
            key = (
                "max.connections.per.ip.overrides"
                if peer in self.overrides
                else "max.connections.per.ip"
            )
            return f"{key} gives {peer} at most {self.limit_for(peer)}, reached"
        self._counts[peer] = count + 1
        self.total += 1
        return None

    def dec(self, peer: PeerKey) -> None:
        """A counted connection from ``peer`` has closed."""
        count = self._counts[peer]  # KeyError: a connection given back twice, a bug
        if count == 1:
            del self._counts[peer]
        else:
            self._counts[peer] = count - 1
        self.total -= 1
