"""A wirekafka broker in a subprocess, for tests.

:class:`BrokerProcess` starts ``python -m wirekafka serve --override key=value ...``
with the interpreter running the tests, on 127.0.0.1 (a free port below the
kernel's ephemeral range, kept across restarts) and a data dir of its own.
The broker prints one line on stdout once it listens (``... listening on
PLAINTEXT://host:port ...``); its log goes to stderr, which is
kept in a file next to its data dir so a failing test can show it. With
``fd_limit`` the process starts with that ``RLIMIT_NOFILE``, soft and hard, so
the broker cannot raise it.

:class:`BrokerFactory` starts brokers with Kafka settings under one directory
and kills whatever is left at :meth:`BrokerFactory.close_all`.
"""

from __future__ import annotations

import itertools
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, ClassVar, Self

import wirekafka
from wirekafka.testing.ports import PORT_ZERO, with_fixed_ports

LISTENING = re.compile(r"listening on (?P<urls>\S+://[^:\s]+:\d+(?:, \S+://[^:\s]+:\d+)*)")
LISTENER_URL = re.compile(r"(?P<name>[^:\s,]+)://(?P<host>[^:\s]+):(?P<port>\d+)")
METRICS = re.compile(r"metrics on (?P<url>http://\S+?/metrics)")
START_TIMEOUT_S = 30.0
PORT_ATTEMPTS = 5  # first starts on fixed ports, each on ports chosen anew
STOP_TIMEOUT_S = 30.0
STDERR_TAIL_BYTES = 20_000

BASE_OVERRIDES: dict[str, str] = {
    "broker.id": "0",
    "listeners": "PLAINTEXT://127.0.0.1:0",
}

# The broker runs the wirekafka this process imported (a checkout's, say, rather than
# the one a venv has installed), whatever its working directory.
PYTHONPATH = os.pathsep.join(
    filter(None, [str(Path(wirekafka.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
)


class BrokerError(AssertionError):
    """The broker did not start, or did not stop as it should."""


class BrokerProcess:
    """One broker process over one data dir; it can be stopped, killed and restarted.

    ``overrides`` are Kafka's keys (``num.partitions``, ``auto.create.topics.enable``,
    ...) on top of :attr:`default_overrides` and ``log.dirs`` (the data dir).
    """

    default_overrides: ClassVar[Mapping[str, str]] = BASE_OVERRIDES
    environment: ClassVar[Mapping[str, str]] = {}  # more environment for the process

    def __init__(
        self,
        data_dir: Path,
        overrides: Mapping[str, str] | None = None,
        *,
        log_dir: Path | None = None,
        fd_limit: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.fd_limit = fd_limit  # RLIMIT_NOFILE of the next start; None: this process's
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.overrides = {
            **self.default_overrides,
            "log.dirs": str(data_dir),
            **(overrides or {}),
        }
        self.log_dir = log_dir if log_dir is not None else data_dir.parent
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.host: str | None = None
        self.port: int | None = None  # of the first listener
        self.listener_ports: dict[str, int] = {}  # every listener's, by name
        self.process: subprocess.Popen[bytes] | None = None
        self.metrics_url: str | None = None  # with metrics.listener: http://host:port/metrics
        self.starts = 0
        self._stdout_lines: list[str] = []
        self._stderr_file: IO[bytes] | None = None
        self._stderr_path: Path | None = None

    # -- addresses

    @property
    def bootstrap(self) -> str:
        """``host:port``, for a client's ``bootstrap.servers``."""
        host, port = self.address
        return f"{host}:{port}"

    def listener_bootstrap(self, listener_name: str) -> str:
        """``host:port`` of the listener ``listener_name`` (``SASL_SSL``)."""
        host, _ = self.address
        return f"{host}:{self.listener_ports[listener_name]}"

    @property
    def address(self) -> tuple[str, int]:
        if self.host is None or self.port is None:
            raise BrokerError("the broker has not started")
        return self.host, self.port

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- lifecycle

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "wirekafka", "serve"]
        for key, value in self.overrides.items():
            command += ["--override", f"{key}={value}"]
        return command

    def start(self) -> Self:
        """Start the process and wait for its listening line.

        A first start replaces each port 0 of ``listeners`` by a free port below
        the ephemeral range (:mod:`wirekafka.testing.ports`), so that a restart can
        listen on it again; if another process took one meanwhile, it starts
        again on ports chosen anew.
        """
        requested = self.overrides.get("listeners", "")
        if self.port is not None or not PORT_ZERO.search(requested):
            return self._start()
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.overrides["listeners"] = with_fixed_ports(requested)
            try:
                return self._start()
            except BrokerError as error:
                if attempt == PORT_ATTEMPTS or "Address already in use" not in str(error):
                    self.overrides["listeners"] = requested
                    raise
        raise AssertionError("unreachable")

    def _start(self) -> Self:
        if self.running:
            raise BrokerError("the broker is already running")
        self.starts += 1
        self._stderr_path = self.log_dir / f"broker-{self.data_dir.name}-{self.starts}.stderr"
        self._stderr_file = self._stderr_path.open("wb")
        self._stdout_lines = []
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": PYTHONPATH,
            **self.environment,
        }
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            env=env,
            cwd=self.log_dir,
            preexec_fn=None if self.fd_limit is None else self._limit_fds,
        )
        listening = threading.Event()
        found: dict[str, str] = {}
        assert self.process.stdout is not None
        reader = threading.Thread(
            target=self._read_stdout,
            args=(self.process.stdout, listening, found),
            name=f"broker-stdout-{self.process.pid}",
            daemon=True,
        )
        reader.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not listening.wait(0.01):
            if self.process.poll() is not None:
                reader.join(1.0)
                if listening.is_set():
                    break
                raise BrokerError(
                    f"the broker exited with code {self.process.returncode} before listening\n"
                    f"command: {self.command()}\n{self.output()}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise BrokerError(
                    f"the broker printed no listening line within {START_TIMEOUT_S} s\n"
                    f"command: {self.command()}\n{self.output()}"
                )
        urls = [m.groupdict() for m in LISTENER_URL.finditer(found["urls"])]
        host, port = urls[0]["host"], int(urls[0]["port"])
        self.metrics_url = found.get("url")
        if self.port is not None and port != self.port:
            raise BrokerError(f"restarted on port {port}, expected {self.port}")
        self.host, self.port = host, port
        self.listener_ports = {url["name"]: int(url["port"]) for url in urls}
        # A restart listens on the same ports, so clients can reconnect.
        self.overrides["listeners"] = ",".join(
            f"{url['name']}://{url['host']}:{url['port']}" for url in urls
        )
        return self

    def _limit_fds(self) -> None:
        """In the child, before exec: the open file limit, soft and hard."""
        assert self.fd_limit is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.fd_limit, self.fd_limit))

    def open_fds(self) -> list[str]:
        """What the running broker's descriptors point at (from ``/proc``)."""
        process = self._require_process()
        fd_dir = Path(f"/proc/{process.pid}/fd")
        found = []
        for entry in fd_dir.iterdir():
            try:
                found.append(os.readlink(entry))
            except OSError:  # closed meanwhile
                continue
        return found

    def open_file_limit(self) -> int:
        """The running broker's soft RLIMIT_NOFILE, as ``/proc`` shows it."""
        process = self._require_process()
        for line in Path(f"/proc/{process.pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3])
        raise BrokerError("no open file limit in /proc")

    def _read_stdout(
        self, stdout: IO[bytes], listening: threading.Event, found: dict[str, str]
    ) -> None:
        # Reads until the broker exits, so the broker never blocks on a full pipe.
        with stdout:
            for raw in stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                self._stdout_lines.append(line)
                if not listening.is_set() and (match := LISTENING.search(line)):
                    found.update(match.groupdict())
                    if metrics := METRICS.search(line):
                        found.update(metrics.groupdict())
                    listening.set()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, wait, and insist on a clean exit (code 0)."""
        process = self._require_process()
        if process.poll() is not None:
            raise BrokerError(
                f"the broker had already exited with code {process.returncode}\n{self.output()}"
            )
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise BrokerError(
                f"the broker did not exit within {timeout_s} s of SIGTERM\n{self.output()}"
            ) from None
        finally:
            self._close_files()
        if code != 0:
            raise BrokerError(f"the broker exited with code {code} on SIGTERM\n{self.output()}")

    def kill(self) -> None:
        """SIGKILL: a crash."""
        process = self._require_process()
        if process.poll() is None:
            process.kill()
        process.wait()
        self._close_files()

    def restart(self, *, crash: bool = False) -> Self:
        """Stop (or, with ``crash``, SIGKILL) and start again on the same data dir and port."""
        if self.running:
            if crash:
                self.kill()
            else:
                self.stop()
        return self.start()

    def close(self) -> None:
        """Kill whatever is left; for teardown."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._close_files()

    def assert_running(self) -> None:
        if not self.running:
            code = self.process.returncode if self.process else None
            raise BrokerError(f"the broker is not running (exit code {code})\n{self.output()}")

    # -- diagnostics

    def stderr_text(self) -> str:
        if self._stderr_path is None or not self._stderr_path.exists():
            return ""
        data = self._stderr_path.read_bytes()
        if len(data) > STDERR_TAIL_BYTES:
            data = b"...\n" + data[-STDERR_TAIL_BYTES:]
        return data.decode(errors="replace")

    def output(self) -> str:
        stdout = "\n".join(self._stdout_lines[-50:])
        return f"--- broker stdout ---\n{stdout}\n--- broker stderr ---\n{self.stderr_text()}"

    def _require_process(self) -> subprocess.Popen[bytes]:
        if self.process is None:
            raise BrokerError("the broker was never started")
        return self.process

    def _close_files(self) -> None:
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.host}:{self.port}, data={self.data_dir}, running={self.running})"


_names = itertools.count()


def kafka_settings(settings: Mapping[str, object] | None, **keywords: object) -> dict[str, str]:
    """Kafka's keys as strings: a ``settings`` dict (``{"num.partitions": 3}``) and
    keywords with dots as underscores (``auto_create_topics_enable=False``)."""
    merged = {str(key): _kafka_value(value) for key, value in (settings or {}).items()}
    for key, value in keywords.items():
        merged[key.replace("_", ".")] = _kafka_value(value)
    return merged


def _kafka_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class BrokerFactory:
    """Starts brokers (of :attr:`broker_class`) with data dirs under ``root``;
    :meth:`close_all` (or leaving its ``with``) kills whatever is left."""

    broker_class: ClassVar[type[BrokerProcess]] = BrokerProcess

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[BrokerProcess] = []

    def __call__(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        fd_limit: int | None = None,
        **keywords: object,
    ) -> BrokerProcess:
        """A started broker: ``factory({"num.partitions": 3})``,
        ``factory(auto_create_topics_enable=False)``, ``fd_limit=N`` for its RLIMIT_NOFILE."""
        return self.prepare(settings, fd_limit=fd_limit, **keywords).start()

    def prepare(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        fd_limit: int | None = None,
        **keywords: object,
    ) -> BrokerProcess:
        """A broker with its data dir made, not yet started (for files to put there first)."""
        data_dir = self.root / f"broker-{next(_names)}" / "data"
        broker = self.broker_class(
            data_dir, kafka_settings(settings, **keywords), fd_limit=fd_limit
        )
        self.started.append(broker)
        return broker

    def close_all(self) -> None:
        for broker in self.started:
            broker.close()

    def __enter__(self) -> BrokerFactory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close_all()
