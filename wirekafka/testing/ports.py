"""Listening ports for servers under test that restart (brokers, ZooKeeper): free
ones outside the kernel's ephemeral range.

A server started on port 0 gets a port from the ephemeral range, the range the
kernel also takes the local ports of outgoing connections from. While such a
server is down for a restart, any client connection on the machine (another
test worker's) may be given its port, and the restart cannot bind it. Ports
below the range are handed out only to whoever asks for them by number, so a
server that keeps one can listen on it again.
"""

from __future__ import annotations

import random
import re
import socket
from collections.abc import Callable
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10_000  # below it lie the well-known and registered services' ports
PORT_ZERO = re.compile(r"(?P<prefix>://(?P<host>[^:/\s,]+)):0(?=$|[,/\s])")


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default when it cannot be read)."""
    try:
        low, high = (int(part) for part in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def free_port(host: str) -> int:
    """A port below the ephemeral range that nothing on ``host`` listens on now, at
    random (so that test workers choosing at once seldom meet)."""
    chooser = random.SystemRandom()
    low, _ = ephemeral_range()
    if low <= LOWEST_PORT:
        raise OSError(f"no ports below the ephemeral range ({EPHEMERAL_RANGE}: from {low})")
    for _ in range(100):
        port = chooser.randrange(LOWEST_PORT, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port on {host} between {LOWEST_PORT} and {low}")


def with_fixed_ports(listeners: str, choose: Callable[[str], int] = free_port) -> str:
    """``listeners`` (``NAME://host:port,...``) with each port 0 replaced by
    ``choose(host)``, a :func:`free_port` of its host."""
    return PORT_ZERO.sub(lambda match: f"{match['prefix']}:{choose(match['host'])}", listeners)
