"""Hosts of their own for brokers: network namespaces on a bridge (iproute2, as root).

:class:`TestNetwork` makes a Linux bridge in the test's own namespace and, for
each host asked for, a network namespace joined to the bridge by a veth pair,
with an address of a /24 of its own. The test's namespace has two addresses on
the bridge: :attr:`TestNetwork.client_address`, the source of the connections
the test makes (the bridge's primary address), and
:attr:`TestNetwork.service_address`, where a service run by the test (a
ZooKeeper) listens. So a host can be cut off from the service and from other
hosts while the test's clients still reach it (:meth:`TestNetwork.cut_off`:
blackhole routes in the host's namespace, silently dropping what it sends
there, as a partitioned network does), and joined again (:meth:`TestNetwork.heal`).

Everything made is removed by :meth:`TestNetwork.close` (deleting a namespace
deletes its end of the veth, which deletes the other).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

IP = "ip"


class NetworkError(AssertionError):
    """iproute2 refused (not root, no iproute2, a name taken)."""


def _ip(*args: str, namespace: str | None = None) -> None:
    command = [IP, *args] if namespace is None else [IP, "netns", "exec", namespace, IP, *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NetworkError(f"{' '.join(command)} failed: {done.stderr.strip()}")


class TestNetwork:
    """A bridge and ``hosts`` namespaces on it, named after this process (so tests of
    several processes at once do not meet)."""

    __test__ = False  # not a pytest test class

    def __init__(self, hosts: int) -> None:
        tag = os.getpid() % 100_000
        self.prefix = f"10.{200 + tag % 50}.{tag % 250}"
        self.bridge = f"wk{tag}br"
        self.namespaces = [f"wk{tag}h{i}" for i in range(hosts)]
        self.addresses = [f"{self.prefix}.{i + 1}" for i in range(hosts)]
        self.client_address = f"{self.prefix}.253"
        self.service_address = f"{self.prefix}.254"
        self._made: list[tuple[str, str]] = []  # ("netns"|"link", name) to remove

    def open(self) -> TestNetwork:
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self._made.append(("link", self.bridge))
            # the first address of the subnet is the source of the test's connections
            _ip("addr", "add", f"{self.client_address}/24", "dev", self.bridge)
            _ip("addr", "add", f"{self.service_address}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, (namespace, address) in enumerate(
                zip(self.namespaces, self.addresses, strict=True)
            ):
                _ip("netns", "add", namespace)
                self._made.append(("netns", namespace))
                outside, inside = f"{self.bridge}{i}", f"{self.bridge}{i}p"
                _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
                _ip("link", "set", inside, "netns", namespace)
                _ip("link", "set", outside, "master", self.bridge)
                _ip("link", "set", outside, "up")
                _ip("addr", "add", f"{address}/24", "dev", inside, namespace=namespace)
                _ip("link", "set", inside, "up", namespace=namespace)
                _ip("link", "set", "lo", "up", namespace=namespace)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for kind, name in reversed(self._made):
            subprocess.run([IP, kind, "del", name], capture_output=True, check=False)
        self._made.clear()

    def __enter__(self) -> TestNetwork:
        return self.open()

    def __exit__(self, *_: object) -> None:
        self.close()

    def command_in(self, host: int, command: Sequence[str]) -> list[str]:
        """``command`` run in host ``host``'s namespace."""
        return [IP, "netns", "exec", self.namespaces[host], *command]

    def cut_off(self, host: int, peers: Sequence[str]) -> None:
        """Whatever host ``host`` sends to ``peers`` (addresses) is dropped from now on;
        TCP connections both ways stall, as across a network partition."""
        for peer in peers:
            _ip("route", "add", "blackhole", f"{peer}/32", namespace=self.namespaces[host])

    def heal(self, host: int, peers: Sequence[str]) -> None:
        for peer in peers:
            _ip("route", "del", "blackhole", f"{peer}/32", namespace=self.namespaces[host])
