"""Apache Kafka itself, one node in KRaft mode, from the jars Maven fetched.

The peer of the broker benchmark (``tools/bench_peers.py``) and of
``interop_tests/test_apache_kafka_peer.py``. It runs Apache Kafka 4.x from
jar set ``kafka`` (``interop_tests/jvm/fetch``) in a temporary directory, on
two free ports (clients and controller), as broker and controller in one
process::

    with ApacheKafka() as kafka:
        print(kafka.bootstrap, kafka.pid)  # the JVM's pid, for /proc/<pid>/stat

``extra_listeners`` adds listeners named after their security protocol
(``SASL_SSL``), each on a free port of its own (``listener_bootstrap``); their
keys (``listener.name.sasl_ssl.*``) come with ``overrides``.

Starting formats the storage with ``kafka.tools.StorageTool`` and runs
``kafka.Kafka``, then waits until the broker answers ApiVersions and names
itself in a Metadata response. Stopping sends SIGTERM (a controlled shutdown)
and kills the JVM if it has not exited in time. The JVM gets SIGKILL from the
kernel when the Python process that started it dies, so neither a crash nor
Ctrl-C leaves it behind. Kafka logs warnings and errors to ``server.log`` in
its directory, quoted when it fails to start.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from interop_tests.jvm_jars import KAFKA, classpath, java
from interop_tests.protocol_client import ProtocolClient, ProtocolClientError
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.messages.metadata import MetadataRequest
from wirekafka.storage.meta_properties import new_cluster_id

HOST = "127.0.0.1"
NODE_ID = 1
START_TIMEOUT_S = 180.0  # the JVM takes 10-20 s on two busy cores, much more under load
STOP_TIMEOUT_S = 60.0
LOG_TAIL_BYTES = 20_000
HEAP = "1g"
JVM_OPTIONS = (
    # What Kafka's kafka-server-start.sh and kafka-run-class.sh give the broker.
    "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
)  # fmt: skip
LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
"""
_PR_SET_PDEATHSIG = 1


class ApacheKafkaError(AssertionError):
    """Apache Kafka did not start or did not stop."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ApacheKafka:
    """One Apache Kafka node (``process.roles=broker,controller``); a context manager."""

    DATA = "data"  # its log.dirs, in its directory

    def __init__(
        self,
        overrides: Mapping[str, str] | None = None,
        heap: str = HEAP,
        extra_listeners: Sequence[str] = (),
    ) -> None:
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.extra_listeners = tuple(extra_listeners)
        self.port = 0  # of the PLAINTEXT listener
        self.listener_ports: dict[str, int] = {}  # of the extra listeners, by name
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def listener_bootstrap(self, name: str) -> str:
        """``host:port`` of the extra listener ``name``."""
        return f"{HOST}:{self.listener_ports[name]}"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise ApacheKafkaError("Apache Kafka has not started")
        return self.process.pid

    def properties(self, data_dir: Path, controller_port: int) -> dict[str, str]:
        clients = [("PLAINTEXT", self.port), *self.listener_ports.items()]
        advertised = ",".join(f"{name}://{HOST}:{port}" for name, port in clients)
        return {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@{HOST}:{controller_port}",
            "listeners": f"{advertised},CONTROLLER://{HOST}:{controller_port}",
            "advertised.listeners": advertised,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(
                [*(f"{name}:{name}" for name, _ in clients), "CONTROLLER:PLAINTEXT"]
            ),
            "log.dirs": str(data_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.overrides,
        }

    def start(self) -> Self:
        self.directory = Path(tempfile.mkdtemp(prefix="wirekafka-apache-kafka-"))
        try:
            self._start(self.directory)
        except BaseException:
            self.close()
            raise
        return self

    def _start(self, directory: Path) -> None:
        self.port, controller_port = free_port(), free_port()
        self.listener_ports = {name: free_port() for name in self.extra_listeners}
        config = directory / "server.properties"
        config.write_text(
            "".join(
                f"{k}={v}\n"
                for k, v in self.properties(directory / self.DATA, controller_port).items()
            )
        )
        log_config = directory / "log4j2.properties"
        log_config.write_text(LOG4J2.format(log=directory / "server.log"))
        jvm = [
            java(), f"-Xmx{self.heap}", f"-Xms{self.heap}", *JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={log_config}", "-cp", classpath(KAFKA),
        ]  # fmt: skip
        self._output = (directory / "stdout").open("wb")
        formatted = subprocess.run(
            [*jvm, "kafka.tools.StorageTool", "format", "-t", new_cluster_id(), "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
            timeout=START_TIMEOUT_S,
            check=False,
        )
        if formatted.returncode != 0:
            raise ApacheKafkaError(f"kafka.tools.StorageTool format failed\n{self.output()}")
        self.process = subprocess.Popen(
            [*jvm, "kafka.Kafka", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        self._wait_until_serving()

    def _wait_until_serving(self) -> None:
        """Until it answers ApiVersions and a Metadata response lists it as a broker."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._serving():
            if self.process.poll() is not None:
                raise ApacheKafkaError(
                    f"Apache Kafka exited with code {self.process.returncode}\n{self.output()}"
                )
            if time.monotonic() > deadline:
                raise ApacheKafkaError(
                    f"Apache Kafka did not serve within {START_TIMEOUT_S} s\n{self.output()}"
                )
            time.sleep(0.2)

    def _serving(self) -> bool:
        try:
            with ProtocolClient(HOST, self.port, timeout_s=5.0) as client:
                client.api_versions()
                metadata = client.request(ApiKey.METADATA, 1, MetadataRequest(topics=[]))
        except (OSError, ProtocolClientError):
            return False
        return any(broker.node_id == NODE_ID for broker in metadata.brokers)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM and wait; SIGKILL if it is still there after ``timeout_s``."""
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
                    raise ApacheKafkaError(
                        f"Apache Kafka did not stop within {timeout_s} s of SIGTERM"
                    ) from None
        finally:
            self.close()

    def close(self) -> None:
        """Kill whatever is left and remove the directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self._output is not None:
            self._output.close()
            self._output = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def output(self) -> str:
        """The tail of the JVM's stdout/stderr and of ``server.log``."""
        if self.directory is None:
            return ""
        parts = []
        for name in ("stdout", "server.log"):
            path = self.directory / name
            data = path.read_bytes()[-LOG_TAIL_BYTES:] if path.exists() else b""
            parts.append(f"--- {name} ---\n{data.decode(errors='replace')}")
        return "\n".join(parts)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.stop()
        else:
            self.close()
