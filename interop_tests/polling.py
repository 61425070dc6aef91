"""Waiting, bounded, for something a broker does in the background."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

TCP_TABLE = Path("/proc/net/tcp")
ESTABLISHED = "01"


def wait_for(
    condition: Callable[[], bool], what: str, timeout_s: float = 30.0, every_s: float = 0.05
) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(every_s)


def _queues(local: tuple[str, int], remote: tuple[str, int]) -> tuple[int, int] | None:
    """(bytes sent and not yet acknowledged, bytes received and not yet read) of the
    IPv4 connection from ``local`` to ``remote`` on this machine, from ``/proc``."""
    for line in TCP_TABLE.read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] != ESTABLISHED:
            continue
        local_port = int(fields[1].rsplit(":", 1)[1], 16)
        remote_port = int(fields[2].rsplit(":", 1)[1], 16)
        if (local_port, remote_port) == (local[1], remote[1]):
            tx_queue, rx_queue = fields[4].split(":")
            return int(tx_queue, 16), int(rx_queue, 16)
    return None


def wait_until_read(sock: socket.socket, what: str, timeout_s: float = 30.0) -> None:
    """Return once the peer of ``sock``, a process on this machine, has read
    everything sent on ``sock``: the peer's kernel acknowledged it all and the
    peer's socket holds none of it unread."""
    ours, theirs = sock.getsockname(), sock.getpeername()

    def read() -> bool:
        sent, peer = _queues(ours, theirs), _queues(theirs, ours)
        assert sent is not None and peer is not None, "the connection is gone"
        return sent[0] == 0 and peer[1] == 0

    wait_for(read, what, timeout_s, every_s=0.01)
