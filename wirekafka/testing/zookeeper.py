"""A real ZooKeeper (Debian's ``zookeeper`` package) in a subprocess, for tests.

:class:`ZooKeeper` starts a standalone server on a free port (below the kernel's
ephemeral range, :mod:`wirekafka.testing.ports`, so that a restart can take it
again) with a data dir
(and a ``zoo.cfg``) of its own, waits until a kazoo client can connect, and
exposes :attr:`ZooKeeper.connect_string` (``127.0.0.1:PORT`` unless given a host), :meth:`stop`
and :meth:`kill`. Without the package (or without ``java``) :meth:`ZooKeeper.start`
raises :class:`ZooKeeperError` saying what to install; :func:`missing_reason` tells
beforehand.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from wirekafka.testing.ports import free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
DEBIAN_CONF_DIR = Path("/etc/zookeeper/conf")
JAVA_LIB_DIR = Path("/usr/share/java")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
INSTALL_HINT = "apt-get install -y zookeeper"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
START_ATTEMPTS = 3
LOG_TAIL_BYTES = 10_000


class ZooKeeperError(AssertionError):
    """ZooKeeper is not installed, did not start, or did not stop."""


def _java() -> str | None:
    return shutil.which("java")


def missing_reason() -> str | None:
    """Why ZooKeeper cannot run here, or None."""
    if not ZOOKEEPER_JAR.is_file():
        return f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): run `{INSTALL_HINT}`"
    if _java() is None:
        return f"no `java` on PATH for ZooKeeper: run `{INSTALL_HINT}` (it pulls in a JRE)"
    return None


def _listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the listening TCP socket of ``port`` (from ``/proc``).

    ZooKeeper takes no port 0, so a test picks a free port and hands it over; another
    test (another xdist worker, another run on the machine) may take it meanwhile,
    and its ZooKeeper must not pass for this one."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    except OSError:  # the process is gone
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes:
                return True  # 0A: LISTEN
    return False


class ZooKeeper:
    """One standalone ZooKeeper server over a temp dir of its own."""

    def __init__(self, root: Path | None = None, *, host: str = "127.0.0.1") -> None:
        """``host``: the address it listens on (another than loopback for brokers in
        network namespaces of their own)."""
        self.host = host
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="wirekafka-zk-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.root / "data"
        self.config_path = self.root / "zoo.cfg"
        self.log_path = self.root / "zookeeper.out"
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port_pinned = False

    @property
    def connect_string(self) -> str:
        if self.port is None:
            raise ZooKeeperError("ZooKeeper has not started")
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- start

    def start(self, timeout: float = START_TIMEOUT_S) -> ZooKeeper:
        reason = missing_reason()
        if reason is not None:
            raise ZooKeeperError(reason)
        if self.running:
            raise ZooKeeperError("ZooKeeper is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        failure = ""
        for _ in range(START_ATTEMPTS):  # another process may take the free port first
            # a restart (start after stop or kill) keeps the port, for clients to reconnect
            port = (
                self.port if self._port_pinned and self.port is not None else free_port(self.host)
            )
            self._spawn(port)
            try:
                self._wait_until_serving(time.monotonic() + timeout)
                return self
            except ZooKeeperError as exc:
                failure = str(exc)
                self._terminate(signal.SIGKILL)
                if self._port_pinned:
                    break
        raise ZooKeeperError(failure)

    def _write_config(self, port: int) -> None:
        self.config_path.write_text(
            "\n".join(
                [
                    "tickTime=500",
                    "initLimit=10",
                    "syncLimit=5",
                    f"dataDir={self.data_dir}",
                    f"clientPort={port}",
                    f"clientPortAddress={self.host}",
                    "maxClientCnxns=0",
                    "minSessionTimeout=1000",
                    "maxSessionTimeout=60000",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons",
                    "",
                ]
            )
        )

    def _spawn(self, port: int) -> None:
        self.port = port
        self._write_config(port)
        # slf4j's simple binding (INFO to stderr) ahead of the others in /usr/share/java:
        # slf4j-nop would win otherwise and the server would log nothing.
        classpath = ":".join(
            [
                str(DEBIAN_CONF_DIR),
                str(ZOOKEEPER_JAR),
                f"{JAVA_LIB_DIR}/slf4j-api.jar",
                f"{JAVA_LIB_DIR}/slf4j-simple.jar",
                f"{JAVA_LIB_DIR}/*",
            ]
        )
        java = _java()
        assert java is not None
        command = [
            java,
            "-Xmx256m",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=ruok,srvr,stat,mntr,cons",
            f"-Dzookeeper.log.dir={self.root}",
            "-cp",
            classpath,
            MAIN_CLASS,
            str(self.config_path),
        ]
        if self._log is None:
            self._log = self.log_path.open("ab")
        self._log.write(f"\n=== {' '.join(command)}\n".encode())
        self._log.flush()
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            start_new_session=True,
        )

    def _wait_until_serving(self, deadline: float) -> None:
        from kazoo.client import KazooClient

        while True:
            if not self.running:
                raise ZooKeeperError(
                    f"ZooKeeper exited with {self.process.returncode if self.process else None} "
                    f"before serving on {self.connect_string}\n{self.log_tail()}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ZooKeeperError(
                    f"ZooKeeper did not answer on {self.connect_string} in time\n{self.log_tail()}"
                )
            assert self.process is not None and self.port is not None
            if self._port_open() and _listens_on(self.process.pid, self.port):
                client = KazooClient(hosts=self.connect_string, timeout=5.0)
                try:
                    client.start(timeout=min(5.0, max(remaining, 0.5)))
                    client.get_children("/")
                    return
                except Exception:
                    pass
                finally:
                    try:
                        client.stop()
                        client.close()
                    except Exception:
                        pass
            time.sleep(0.1)

    def four_letter_word(self, word: str) -> str:
        """ZooKeeper's answer to a four-letter command (``cons``: each connection's
        session id and negotiated timeout)."""
        with socket.create_connection((self.host, self._require_port()), timeout=10.0) as sock:
            sock.sendall(word.encode())
            chunks = []
            while data := sock.recv(65536):
                chunks.append(data)
        return b"".join(chunks).decode()

    def session_timeout_ms(self, session_id: int) -> int:
        """The timeout ZooKeeper negotiated with session ``session_id`` (a znode's
        ``ephemeralOwner``): ZooKeeper expires the session after it."""
        for line in self.four_letter_word("cons").splitlines():
            if f"sid=0x{session_id:x}," in line:
                match = re.search(r"\bto=(\d+)", line)
                assert match, line
                return int(match[1])
        raise ZooKeeperError(f"no connection of session 0x{session_id:x} in `cons`")

    def _require_port(self) -> int:
        if self.port is None:
            raise ZooKeeperError("ZooKeeper has not started")
        return self.port

    def _port_open(self) -> bool:
        assert self.port is not None
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    # -- stop

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout``; the data dir stays."""
        self._terminate(signal.SIGTERM, timeout)
        self._port_pinned = True

    def kill(self) -> None:
        """SIGKILL: a crash. The data dir stays; :meth:`start` restarts on the same port."""
        self._terminate(signal.SIGKILL)
        self._port_pinned = True

    def _terminate(self, sig: signal.Signals, timeout: float = STOP_TIMEOUT_S) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)

    def close(self) -> None:
        """Stop (kill if need be), and remove the temp dir if this object made it."""
        try:
            self.stop()
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None
            if self._own_root:
                shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - LOG_TAIL_BYTES))
                return log.read().decode("utf-8", "replace")
        except OSError:
            return "(no ZooKeeper log)"

    def __enter__(self) -> ZooKeeper:
        return self.start() if not self.running else self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
