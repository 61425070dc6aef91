"""Responses on their way out, through a pipe (non-blocking, 64 KiB): every byte once,
in order, whoever sends it and however often the pipe fills up."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from tests.handlers.support import run
from wirekafka.server.sending import INLINE_SPAN_BYTES, ResponseQueue, send_parts, send_ready
from wirekafka.storage.spans import FileSpan, OpenFile

PIPE_BYTES = 64 * 1024


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    reading, writing = os.pipe()
    fcntl.fcntl(writing, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    os.set_blocking(writing, False)
    os.set_blocking(reading, False)
    yield reading, writing
    os.close(reading)
    os.close(writing)


@pytest.fixture
def segment(tmp_path: Path) -> Iterator[OpenFile]:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(range(256)) * 1024)  # 256 KiB
    opened = OpenFile(path, os.O_RDONLY)
    yield opened
    opened.close()


def drain(fd: int) -> bytes:
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, PIPE_BYTES)
        except BlockingIOError:
            return bytes(out)
        if not chunk:
            return bytes(out)
        out += chunk


async def drain_until(fd: int, received: bytearray, total: int) -> None:
    """Read the pipe into ``received`` until it holds ``total`` bytes (5 s at most),
    letting the writer run meanwhile."""
    with trio.fail_after(5):
        while len(received) < total:
            received.extend(drain(fd))
            await trio.sleep(0.001)


def expected(parts: list[object]) -> bytes:
    return b"".join(p.read_bytes() if isinstance(p, FileSpan) else bytes(p) for p in parts)  # type: ignore[arg-type]


def test_what_the_pipe_takes_goes_at_once_small_spans_inline(pipe, segment) -> None:
    reading, writing = pipe
    parts: list[object] = [
        b"head", FileSpan(segment, 10, 300), bytearray(b"mid"), FileSpan(segment, 0, 5), b"end",
    ]  # fmt: skip
    assert send_ready(writing, parts) == []
    assert drain(reading) == expected(parts)


def test_what_the_pipe_does_not_take_is_left_in_order_and_goes_later(pipe, segment) -> None:
    reading, writing = pipe
    big = INLINE_SPAN_BYTES + 1
    parts: list[object] = [
        b"a" * 40_000, FileSpan(segment, 7, 100_000), b"b" * 50_000,
        FileSpan(segment, 1000, 200), FileSpan(segment, 3, big), b"tail",
    ]  # fmt: skip
    received = bytearray()
    left = send_ready(writing, parts)
    rounds = 1
    while left:
        assert rounds < 100
        received += drain(reading)
        left = send_ready(writing, left)
        rounds += 1
    received += drain(reading)
    assert rounds > 3  # the pipe filled up several times, inside spans and bytes alike
    assert bytes(received) == expected(parts)


class _Pipe:
    """A pipe's writing end as the queue's socket."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def queue_on(writing: int) -> ResponseQueue:
    """A connection's queue of responses on a pipe's writing end: its writer sends with
    send_parts, its reader with send_ready, as on a plain socket."""
    sock = _Pipe(writing)
    return ResponseQueue(
        lambda parts: send_parts(sock, parts),  # type: ignore[arg-type]
        lambda parts: send_ready(writing, parts),
    )


def test_the_reader_and_the_writer_send_in_turn_every_response_once_in_order(pipe, segment) -> None:
    reading, writing = pipe
    queue = queue_on(writing)
    responses = [
        [b"%03d:" % i, FileSpan(segment, i, 30_000 if i % 3 else 40), b";"] for i in range(40)
    ]
    received = bytearray()

    async def writer(done: trio.Event) -> None:
        await queue.run()  # returns once finished and all is written
        done.set()

    async def scenario() -> None:
        done = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer, done)
            for i, response in enumerate(responses):
                queue.hold(response)
                if i % 4 == 3:
                    queue.send_now()  # as the reader does before it waits for a request
                if i % 7 == 6:
                    queue.kick()  # as before a request that may wait
                await trio.sleep(0)
                received.extend(drain(reading))
            queue.finish()
            while not done.is_set():
                received.extend(drain(reading))
                await trio.sleep(0.001)
        received.extend(drain(reading))

    run(scenario)
    assert bytes(received) == b"".join(expected(r) for r in responses)


def test_the_reader_does_not_send_while_the_writer_is_in_the_middle_of_a_response(pipe) -> None:
    reading, writing = pipe
    queue = queue_on(writing)
    first, second = b"A" * 100_000, b"B" * 100
    received = bytearray()

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(queue.run)
            await trio.testing.wait_all_tasks_blocked()  # the writer waits for work
            queue.hold([first])
            queue.kick()
            await trio.testing.wait_all_tasks_blocked()  # the writer waits: the pipe is full
            received.extend(os.read(reading, 1000))  # room, which the writer has not seen yet
            queue.hold([second])
            queue.send_now()  # must not go before the rest of the first
            await drain_until(reading, received, len(first) + len(second))
            queue.finish()

    run(scenario)
    assert bytes(received) == first + second


def test_what_the_reader_could_not_send_goes_without_another_word(pipe) -> None:
    reading, writing = pipe
    queue = queue_on(writing)
    response = bytes(range(256)) * 800  # 200 KiB: more than the pipe holds
    received = bytearray()

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(queue.run)
            await trio.testing.wait_all_tasks_blocked()  # the writer waits for work
            queue.hold([response])
            queue.send_now()  # a part goes; the writer is to send the rest
            await drain_until(reading, received, len(response))
            queue.finish()

    run(scenario)
    assert bytes(received) == response
