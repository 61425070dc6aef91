"""A mount namespace of the tests' own, where a broker meets a disk that fails.

``unshare --mount`` (the tests run as root) starts a process that only sleeps;
its mount namespace is where the tests mount a small tmpfs or a loop device,
seen by nothing else on the machine. Commands run in it with ``nsenter``, a
broker started through :meth:`MountNamespace.command` lives in it, and this
process reaches its files through ``/proc/<holder>/root``. When the holder is
killed the namespace and everything mounted in it go (a loop device with
them: ``mount -o loop`` sets autoclear).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from interop_tests.broker import Broker
from interop_tests.polling import wait_for

READY_TIMEOUT_S = 10.0


class MountNamespace:
    def __init__(self) -> None:
        self._holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sleep", "infinity"],
            stdin=subprocess.DEVNULL,
        )
        ours = os.readlink("/proc/self/ns/mnt")
        wait_for(
            lambda: (
                self._holder.poll() is not None
                or os.readlink(f"/proc/{self._holder.pid}/ns/mnt") != ours
            ),  # unshared
            "unshare --mount to make a namespace",
            READY_TIMEOUT_S,
            0.01,
        )
        if self._holder.returncode is not None:
            raise RuntimeError(f"unshare --mount failed (exit {self._holder.returncode})")

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` to run inside the namespace (nsenter execs it: same pid)."""
        return ["nsenter", f"--mount=/proc/{self._holder.pid}/ns/mnt", *argv]

    def run(self, script: str) -> str:
        """Run a shell script inside the namespace; its output, or an error showing it."""
        done = subprocess.run(
            self.command(["sh", "-ec", script]), capture_output=True, text=True, check=False
        )
        if done.returncode:
            raise RuntimeError(f"{script!r} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done.stdout

    def path(self, inside: Path) -> Path:
        """A path as the namespace sees it, reached from this process."""
        return Path(f"/proc/{self._holder.pid}/root") / inside.relative_to("/")

    def close(self) -> None:
        self._holder.kill()
        self._holder.wait()


class NamespacedBroker(Broker):
    """A broker whose process runs inside a :class:`MountNamespace`."""

    def __init__(
        self, namespace: MountNamespace, data_dir: Path, overrides: Mapping[str, str], log_dir: Path
    ) -> None:
        super().__init__(data_dir, overrides, log_dir=log_dir)
        self.namespace = namespace

    def command(self) -> list[str]:
        return self.namespace.command(super().command())
