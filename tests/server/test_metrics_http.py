"""The metrics HTTP server: request heads parsed without I/O, and connections
served over in-memory streams on trio's mock clock (no sockets)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from wirekafka.server.metrics_http import (
    HEAD_TIMEOUT_S,
    MAX_CONNECTIONS,
    MAX_HEAD_BYTES,
    BadRequest,
    MetricsServer,
    RequestHead,
    parse_request_head,
    response_bytes,
)


def test_request_heads():
    assert parse_request_head(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*") == RequestHead(
        "GET", "/metrics"
    )
    assert parse_request_head(b"HEAD /health?verbose=1 HTTP/1.0") == RequestHead("HEAD", "/health")
    for bad in (
        b"GET /metrics",
        b"GET  /metrics HTTP/1.1",
        b"GET /metrics HTTP/2.0",
        b"GET metrics HTTP/1.1",
        b"G(T /metrics HTTP/1.1",
        b"GET /m\xc3\xa9trics HTTP/1.1",
        b"GET /metrics HTTP/1.1\r\nno colon here",
        b"\r\n",
    ):
        with pytest.raises(BadRequest):
            parse_request_head(bad)


def test_responses_close_the_connection():
    assert response_bytes(200, b"ok\n") == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
        b"Connection: close\r\n\r\nok\n"
    )
    assert response_bytes(200, b"ok\n", head=True).endswith(b"Content-Length: 3\r\n"
                                                            b"Connection: close\r\n\r\n")  # fmt: skip
    assert b"\r\nAllow: GET, HEAD\r\n" in response_bytes(405, b"")


class _Broker:
    def __init__(self) -> None:
        self.serving = True
        self.scrapes = 0

    async def scrape(self) -> bytes:
        self.scrapes += 1
        return b"metric 1\n"


async def _exchange(server: MetricsServer, request: bytes, *, close: bool = True) -> bytes:
    """Send ``request`` over an in-memory connection, and read what comes back."""
    client, served = trio.testing.memory_stream_pair()
    received = bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.handle, served)
        await client.send_all(request)
        while data := await client.receive_some(65536):
            received += data
        if close:
            await client.aclose()
    return bytes(received)


def _run(scenario: object) -> None:
    trio.run(scenario, clock=trio.testing.MockClock(autojump_threshold=0))  # type: ignore[arg-type]


def test_paths_and_methods():
    broker = _Broker()
    server = MetricsServer(broker.scrape, lambda: broker.serving)

    async def scenario() -> None:
        metrics = await _exchange(server, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert metrics.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n" in metrics
        assert metrics.endswith(b"\r\n\r\nmetric 1\n")
        assert (await _exchange(server, b"GET /health HTTP/1.1\r\n\r\n")).endswith(b"\r\n\r\nok\n")
        broker.serving = False
        stopping = await _exchange(server, b"GET /health HTTP/1.1\r\n\r\n")
        assert stopping.startswith(b"HTTP/1.1 503 ")
        assert (await _exchange(server, b"GET /x HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404 ")
        assert (await _exchange(server, b"PUT /metrics HTTP/1.1\r\n\r\n")).startswith(
            b"HTTP/1.1 405 "
        )
        assert (await _exchange(server, b"nonsense\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
        head = await _exchange(server, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
        huge = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n"
        assert (await _exchange(server, huge)).startswith(b"HTTP/1.1 431 ")
        assert server.active == 0

    _run(scenario)
    assert broker.scrapes == 2  # GET and HEAD of /metrics


def test_a_slow_client_is_dropped_without_an_answer():
    broker = _Broker()
    server = MetricsServer(broker.scrape, lambda: broker.serving)

    async def scenario() -> None:
        client, served = trio.testing.memory_stream_pair()
        started = trio.current_time()
        gave_up_after: list[float] = []

        async def serve() -> None:
            await server.handle(served)
            gave_up_after.append(trio.current_time() - started)
            await served.aclose()  # as serve_listeners does

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n":  # a byte every 100 ms
                if gave_up_after:
                    break
                await client.send_all(bytes([byte]))
                await trio.sleep(0.1)
            assert await client.receive_some(100) == b""  # closed, nothing answered
        assert gave_up_after == [pytest.approx(HEAD_TIMEOUT_S)]
        assert broker.scrapes == 0 and server.active == 0

    _run(scenario)


def test_connections_beyond_the_limit_are_closed_at_once():
    broker = _Broker()
    server = MetricsServer(broker.scrape, lambda: broker.serving)

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            clients = []
            for _ in range(MAX_CONNECTIONS):  # each waits for its request
                client, served = trio.testing.memory_stream_pair()
                clients.append(client)
                nursery.start_soon(server.handle, served)
            await trio.testing.wait_all_tasks_blocked()
            assert server.active == MAX_CONNECTIONS
            _client, served = trio.testing.memory_stream_pair()
            await server.handle(served)  # returns at once: the caller closes it
            assert server.active == MAX_CONNECTIONS
            nursery.cancel_scope.cancel()

    _run(scenario)
