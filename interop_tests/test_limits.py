"""The broker bounds what clients can make it hold: connections and partly received requests.

Raw sockets play the clients that overreach; the broker's own descriptor
count and memory are read from /proc. A well-behaved client (kafka-python, or
the test's protocol client) must keep being served throughout.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

from kafka import KafkaProducer

from interop_tests.broker import Broker
from interop_tests.conftest import HEAVY, BrokerFactory
from interop_tests.polling import wait_for
from interop_tests.protocol_client import ProtocolClient
from interop_tests.test_bad_input import read_frame
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.framing import encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest
from wirekafka.protocol.messages.metadata import MetadataRequest

# With the other tests that push a broker to a resource's edge (interop_tests/conftest.py,
# HEAVY): one at a time, on one xdist worker.
pytestmark = HEAVY

TIMEOUT_S = 30.0
MIB = 1024 * 1024


# -- the broker from outside


def _pid(broker: Broker) -> int:
    assert broker.process is not None
    return broker.process.pid


def _fd_count(broker: Broker) -> int:
    return len(os.listdir(f"/proc/{_pid(broker)}/fd"))


def _status_kib(broker: Broker, field: str) -> int:
    """VmRSS, VmHWM (the peak of VmRSS): in KiB, from /proc/<pid>/status."""
    for line in Path(f"/proc/{_pid(broker)}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{_pid(broker)}/status")


def _raise_own_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


# -- raw connections


def _api_versions_frame(correlation_id: int) -> bytes:
    header = RequestHeader(ApiKey.API_VERSIONS, 0, correlation_id, "limits")
    return encode_frame(rpc.encode_request(header, ApiVersionsRequest()))


def _connect(broker: Broker, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(broker.address, timeout=TIMEOUT_S, source_address=(source, 0))


def _read_answer(sock: socket.socket, correlation_id: int) -> None:
    """One ApiVersions answer; fails if the broker closes the connection instead."""
    header, response = rpc.decode_response(ApiKey.API_VERSIONS, 0, read_frame(sock, TIMEOUT_S))
    assert header.correlation_id == correlation_id
    assert response.error_code == 0


def _answered(sock: socket.socket, correlation_id: int = 1) -> None:
    sock.sendall(_api_versions_frame(correlation_id))
    _read_answer(sock, correlation_id)


def _closed_unanswered(sock: socket.socket) -> None:
    """The broker closes the connection without a byte of answer to a request."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(_api_versions_frame(1))
    sock.settimeout(TIMEOUT_S)
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        return
    assert data == b"", f"an answer from a connection beyond the limit: {data!r}"


def _wait_served(broker: Broker, source: str = "127.0.0.1") -> socket.socket:
    """A new connection, answered, once the broker has room for it (counts are given
    back when the broker sees a connection close, a moment after the client does)."""
    served: list[socket.socket] = []

    def attempt() -> bool:
        sock = _connect(broker, source)
        try:
            _answered(sock)
        except (AssertionError, ConnectionResetError, BrokenPipeError):
            sock.close()
            return False
        served.append(sock)
        return True

    wait_for(attempt, f"a connection from {source} to be served")
    return served[0]


def _closed_by_broker(sock: socket.socket) -> None:
    sock.settimeout(TIMEOUT_S)
    with contextlib.suppress(ConnectionResetError):
        assert sock.recv(65536) == b""


# -- max.connections


def test_connections_beyond_max_connections_are_closed_unanswered(
    broker_factory: BrokerFactory,
) -> None:
    _raise_own_fd_limit(4000)
    broker = broker_factory(settings={"max.connections": "1000"})
    fds_at_start = _fd_count(broker)
    sockets = [_connect(broker) for _ in range(3000)]
    try:
        first, excess = sockets[:1000], sockets[1000:]
        for i, sock in enumerate(first):  # all asked before any answer is read
            sock.sendall(_api_versions_frame(i))
        for i, sock in enumerate(first):
            _read_answer(sock, i)
        for sock in excess:
            _closed_unanswered(sock)
        # a descriptor for each connection served, none kept for those refused
        assert _fd_count(broker) <= fds_at_start + 1000 + 10
        refusals = [line for line in broker.stderr_text().splitlines() if "refused a" in line]
        assert refusals and "max.connections=1000 reached" in refusals[0]
        assert len(refusals) <= 3, "refusals are logged at most once every 10 s"

        for sock in first[:50]:
            sock.close()
        _wait_served(broker).close()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        try:
            metadata = producer.send("after-the-flood", b"served").get(timeout=TIMEOUT_S)
        finally:
            producer.close(timeout=5)
        assert metadata.offset == 0
        for i, sock in enumerate(first[50:100]):  # those kept open are still served
            _answered(sock, 5000 + i)
    finally:
        for sock in sockets:
            sock.close()
    broker.stop()


# -- max.connections.per.ip and its overrides


def test_max_connections_per_ip_counts_each_address(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(
        settings={
            "max.connections.per.ip": "3",
            "max.connections.per.ip.overrides": "127.0.0.3:1",
        }
    )
    limits = {"127.0.0.1": 3, "127.0.0.2": 3, "127.0.0.3": 1}  # all loopback on Linux
    with contextlib.ExitStack() as stack:
        for source, limit in limits.items():
            for _ in range(limit):
                _answered(stack.enter_context(_connect(broker, source)))
        for source in limits:
            with _connect(broker, source) as extra:
                _closed_unanswered(extra)
        refusals = [line for line in broker.stderr_text().splitlines() if "refused a" in line]
        assert "max.connections.per.ip gives 127.0.0.1 at most 3, reached" in refusals[0]
    broker.stop()


def test_connections_are_given_back_however_they_close(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(
        settings={"max.connections.per.ip": "2", "connections.max.idle.ms": "3000"}
    )
    # closed by the broker for idling
    idle = [_wait_served(broker), _wait_served(broker)]
    for sock in idle:
        _closed_by_broker(sock)
        sock.close()
    kept = _wait_served(broker)
    garbled = _wait_served(broker)
    # closed by the broker for a malformed request
    garbled.sendall(struct.pack(">i", 6) + b"\xff" * 6)
    _closed_by_broker(garbled)
    garbled.close()
    # closed by the client
    kept.close()
    last = [_wait_served(broker), _wait_served(broker)]
    for sock in last:
        _answered(sock, 2)
    with _connect(broker) as extra:  # two open again: the count is two, not less
        _closed_unanswered(extra)
    # and at shutdown, with connections open: the broker stops cleanly (exit code 0)
    broker.stop()
    for sock in last:
        sock.close()


# -- queued.max.request.bytes


class PartialRequest(threading.Thread):
    """Announces a frame of ``frame_bytes`` and sends ``send_bytes`` of its body, as fast
    as the broker takes them, and never the rest."""

    def __init__(self, address: tuple[str, int], frame_bytes: int, send_bytes: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(address, timeout=TIMEOUT_S)
        self.frame_bytes = frame_bytes
        self.send_bytes = send_bytes
        self.sent = 0
        self.done = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        chunk = memoryview(bytes(MIB))
        try:
            self.sock.sendall(struct.pack(">i", self.frame_bytes))
            self.sock.settimeout(0.2)
            while self.sent < self.send_bytes and not self.stopping.is_set():
                try:
                    self.sent += self.sock.send(chunk[: min(MIB, self.send_bytes - self.sent)])
                except TimeoutError:  # the broker is not reading: try again
                    continue
        except OSError:  # closed, by the broker or by the test
            return
        if self.sent == self.send_bytes:
            self.done.set()

    def close(self) -> None:
        self.stopping.set()
        self.sock.close()
        self.join(TIMEOUT_S)


def test_partial_requests_share_queued_max_request_bytes(broker_factory: BrokerFactory) -> None:
    queued_max = 100 * MIB
    broker = broker_factory(settings={"queued.max.request.bytes": str(queued_max)})
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        client.api_versions()
    baseline_kib = _status_kib(broker, "VmRSS")
    hogs = [PartialRequest(broker.address, 60 * MIB + 1024, 60 * MIB) for _ in range(5)]
    try:
        for hog in hogs:
            hog.start()
        wait_for(lambda: any(hog.done.is_set() for hog in hogs), "60 MiB to be taken in", 60)
        # meanwhile other clients are answered: small requests, and one larger than a
        # connection's allowance, from what is left of the pool
        with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
            for _ in range(10):
                client.api_versions()
                client.request(ApiKey.METADATA, 1, MetadataRequest(topics=None))
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        try:
            small = producer.send("beside-the-hogs", b"small", partition=0)
            large = producer.send("beside-the-hogs", b"x" * 512 * 1024, partition=0)
            assert [small.get(TIMEOUT_S).offset, large.get(TIMEOUT_S).offset] == [0, 1]
        finally:
            producer.close(timeout=5)
        taken_in = [hog for hog in hogs if hog.done.is_set()]
        assert len(taken_in) == 1, "two 60 MiB requests were taken in, beyond 100 MiB"
        peak_bytes = (_status_kib(broker, "VmHWM") - baseline_kib) * 1024
        assert peak_bytes <= queued_max + 24 * MIB, f"{peak_bytes / MIB:.0f} MiB over baseline"

        # the one taken in goes away: its bytes come back, and the next is taken in
        taken_in[0].close()
        wait_for(
            lambda: sum(hog.done.is_set() for hog in hogs) == 2,
            "the next 60 MiB to be taken in",
            60,
        )
        peak_bytes = (_status_kib(broker, "VmHWM") - baseline_kib) * 1024
        assert peak_bytes <= queued_max + 24 * MIB, f"{peak_bytes / MIB:.0f} MiB over baseline"
        # stopping with connections waiting for room, and one mid-frame: a clean exit
        broker.stop()
    finally:
        for hog in hogs:
            hog.close()


# -- config errors


def _serve(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "wirekafka", "serve"]
    for override in (f"log.dirs={tmp_path / 'data'}", "listeners=PLAINTEXT://127.0.0.1:0"):
        command += ["--override", override]
    for override in overrides:
        command += ["--override", override]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)


def test_bad_limits_stop_startup_naming_the_key(tmp_path: Path) -> None:
    for override, key in [
        ("queued.max.request.bytes=1048576", "queued.max.request.bytes=1048576"),
        ("max.connections.per.ip.overrides=localhost", "max.connections.per.ip.overrides"),
        ("max.connections.per.ip=0", "max.connections.per.ip=0"),
    ]:
        result = _serve(tmp_path, override)
        assert result.returncode == 2, result.stderr
        assert key in result.stderr
        assert not (tmp_path / "data").exists()
    result = _serve(tmp_path, "max.connections.per.ip.overrides=nowhere.invalid:3")
    assert result.returncode == 1, result.stderr
    assert "max.connections.per.ip.overrides: cannot resolve 'nowhere.invalid'" in result.stderr
