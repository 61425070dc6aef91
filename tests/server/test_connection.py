"""How much a connection reads (within its unreserved allowance, or up to a reserved
frame's end), and which pipelined produce requests it handles together."""

from __future__ import annotations

import fcntl
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.handlers.support import TestBroker, make_batch, produce_request, run
from tests.server.test_authentication import Clock, authenticate, authenticator, handshake
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.metadata import MetadataRequest
from wirekafka.protocol.rpc import Request, decode_request, encode_request
from wirekafka.protocol.simple_produce import SimpleProduce
from wirekafka.server.connection import (
    GROUP_EXTRA_BYTES,
    RECEIVE_BYTES,
    UNRESERVED_BYTES,
    GroupReads,
    PlainTransport,
    Session,
    _pipelined_produces,
    _produce_request,
    _respond_produces,
    needs_reservation,
    receive_size,
)
from wirekafka.server.memory_pool import MemoryPool


def test_between_frames_it_reads_up_to_its_allowance() -> None:
    decoder = FrameDecoder()
    assert needs_reservation(decoder) is None
    assert receive_size(decoder, reserved=False) == UNRESERVED_BYTES
    decoder.receive_data(b"\x00\x00")  # half a size prefix
    assert receive_size(decoder, reserved=False) == UNRESERVED_BYTES - 2


def test_a_small_frame_is_received_within_the_allowance() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(struct.pack(">i", UNRESERVED_BYTES) + b"x" * 10)
    assert needs_reservation(decoder) is None
    # the rest of the frame fits in what may be read, with nothing left over
    assert receive_size(decoder, reserved=False) == UNRESERVED_BYTES - 10


def test_a_larger_frame_needs_its_size_reserved_and_is_read_up_to_its_end() -> None:
    size = UNRESERVED_BYTES + RECEIVE_BYTES + 100
    decoder = FrameDecoder()
    decoder.receive_data(struct.pack(">i", size) + b"x" * 10)
    assert needs_reservation(decoder) == size
    assert receive_size(decoder, reserved=True) == RECEIVE_BYTES
    decoder.receive_data(b"x" * (size - 110))
    assert receive_size(decoder, reserved=True) == 100  # not a byte of the next frame
    decoder.receive_data(b"x" * 100)
    frame = decoder.next_frame()
    assert frame is not None and len(frame) == size
    assert decoder.buffered_bytes == 0


@pytest.mark.parametrize("simple", [False, True])
def test_pipelined_produce_requests_are_taken_together_up_to_the_first_other_one(
    simple: bool,
) -> None:
    session = Session("/127.0.0.1", "PLAINTEXT")
    broken = bytearray(produce_frame(5))
    del broken[-30:]  # its records cut short: the codec refuses it
    metadata = encode_request(
        RequestHeader(ApiKey.METADATA, 1, 7, "c"), MetadataRequest(topics=None)
    )
    frames = [
        produce_frame(1), produce_frame(2, version=3), produce_frame(3), bytes(broken),
        produce_frame(6), metadata, produce_frame(8),
    ]  # fmt: skip
    decoder = FrameDecoder()
    decoder.receive_data(b"".join(encode_frame(frame) for frame in frames))

    def group() -> list[int]:
        frame = decoder.next_frame()
        assert frame is not None
        first = _produce_request(frame, session, simple)
        taken = _pipelined_produces(decoder, first, session, None, simple)
        # read without the codec when nothing is to be authorized
        assert all((type(request) is SimpleProduce) == simple for request in taken)
        return [
            r.correlation_id if type(r) is SimpleProduce else r.header.correlation_id  # type: ignore[union-attr]
            for r in taken
        ]

    assert group() == [1, 2, 3]
    # a request the codec refuses stays, to be refused on its own (closing the connection)
    assert decoder.next_frame() == broken
    # and so does a request of another API
    assert group() == [6]
    assert decoder.next_frame() == metadata
    assert group() == [8]
    assert decoder.next_frame() is None


class _Fd:
    """What PlainTransport reads through: here the read end of a pipe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


@pytest.fixture
def pipe() -> Iterator[tuple[PlainTransport, int]]:
    """A transport reading a non-blocking pipe of 1 MiB, and the pipe's write end."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    os.set_blocking(read_fd, False)
    yield PlainTransport(_Fd(read_fd)), write_fd  # type: ignore[arg-type]
    os.close(read_fd)
    os.close(write_fd)


def _first_read(decoder: FrameDecoder, reads: GroupReads) -> Request:
    """What the connection's reader does: read up to the allowance, take the first frame."""
    assert reads.read(receive_size(decoder, reserved=False))
    frame = decoder.next_frame()
    assert frame is not None
    return decode_request(frame, "/127.0.0.1")


def test_a_group_reads_on_past_the_allowance_with_room_from_the_pool(pipe) -> None:
    transport, write_fd = pipe
    frames = [encode_frame(produce_frame(n, value_bytes=20_000)) for n in range(20)]
    os.write(write_fd, b"".join(frames))  # 400 KB: more than the allowance and the extra
    pool = MemoryPool(1 << 20)
    decoder = FrameDecoder()
    reads = GroupReads(decoder, transport.read_into, pool)
    first = _first_read(decoder, reads)
    in_first_read = 1 + len(decoder._frames)
    group = _pipelined_produces(decoder, first, Session("/127.0.0.1", "PLAINTEXT"), reads)
    assert in_first_read == UNRESERVED_BYTES // len(frames[0])
    assert len(group) == (UNRESERVED_BYTES + GROUP_EXTRA_BYTES) // len(frames[0])
    assert [r.header.correlation_id for r in group] == list(range(len(group)))
    assert pool.reserved_bytes == GROUP_EXTRA_BYTES  # held while the group is handled
    assert reads.done() == GROUP_EXTRA_BYTES  # read beyond the allowance, all it could
    assert pool.reserved_bytes == 0
    # the next group starts where this one ended
    taken = len(group)
    first = _first_read(decoder, reads)
    group = _pipelined_produces(decoder, first, Session("/127.0.0.1", "PLAINTEXT"), reads)
    assert [r.header.correlation_id for r in group] == list(range(taken, 20))
    reads.done()
    assert pool.reserved_bytes == 0 and decoder.buffered_bytes == 0


def test_a_group_reads_no_more_when_the_pool_has_no_room_free_or_the_socket_had_no_more(
    pipe,
) -> None:
    transport, write_fd = pipe
    frames = [encode_frame(produce_frame(n, value_bytes=20_000)) for n in range(20)]
    os.write(write_fd, b"".join(frames))
    pool = MemoryPool(1 << 20)
    held = pool.try_reserve((1 << 20) - GROUP_EXTRA_BYTES + 1)
    decoder = FrameDecoder()
    reads = GroupReads(decoder, transport.read_into, pool)
    first = _first_read(decoder, reads)
    group = _pipelined_produces(decoder, first, Session("/127.0.0.1", "PLAINTEXT"), reads)
    assert len(group) == UNRESERVED_BYTES // len(frames[0])  # what the allowance held
    assert reads.done() == 0
    assert held is not None
    pool.release(held)
    # a first read that took all the socket held: no read is tried for more
    decoder = FrameDecoder()
    decoder.receive_data(frames[0] + frames[1][:100])
    reads = GroupReads(decoder, _no_read, pool)
    frame = decoder.next_frame()
    assert frame is not None
    group = _pipelined_produces(
        decoder, decode_request(frame, "/127.0.0.1"), Session("/127.0.0.1", "PLAINTEXT"), reads
    )
    assert len(group) == 1 and pool.reserved_bytes == 0


def _no_read(view: memoryview) -> int | None:
    raise AssertionError("read when the last read had found the socket empty")


def produce_frame(correlation_id: int, version: int = 9, value_bytes: int = 1) -> bytes:
    header = RequestHeader(ApiKey.PRODUCE, version, correlation_id, "c")
    batch = make_batch([b"v" * value_bytes])
    return encode_request(header, produce_request("t", batch, acks=1))


class _Host:
    """What answering produce requests reads of the server: the broker's context."""

    def __init__(self, broker: TestBroker) -> None:
        self.context = broker.ctx


@pytest.mark.parametrize("simple", [False, True])
def test_each_produce_request_of_a_group_is_counted_in_its_version(
    simple: bool, tmp_path: Path
) -> None:
    broker = TestBroker(tmp_path)
    try:
        broker.create_topic("t")
        session = Session("/127.0.0.1", "PLAINTEXT")
        versions = [7, 7, 9, 7, 3, 3, 9]
        decoder = FrameDecoder()
        decoder.receive_data(
            b"".join(encode_frame(produce_frame(i, v)) for i, v in enumerate(versions))
        )
        frame = decoder.next_frame()
        assert frame is not None
        first = _produce_request(frame, session, simple)
        taken = _pipelined_produces(decoder, first, session, None, simple)
        assert len(taken) == len(versions)
        answers = run(_respond_produces, _Host(broker), taken)
        assert all(type(answer) is list for answer in answers)
        stats = broker.ctx.metrics.apis[ApiKey.PRODUCE]
        assert {v: stats.by_version[v] for v in (3, 7, 9)} == {3: 2, 7: 3, 9: 2}
        assert sum(stats.buckets) == len(versions)
        assert stats.sum_seconds > 0
    finally:
        broker.close()


def test_a_group_ends_where_the_sasl_session_expired() -> None:
    clock = Clock()
    session = Session("/127.0.0.1", "SASL_PLAINTEXT")
    session.authenticator = authenticator(reauth_ms=5000, clock=clock)
    handshake(session.authenticator, "PLAIN")
    authenticate(session.authenticator, b"\x00alice\x00alice-secret")

    def group() -> tuple[int, FrameDecoder]:
        decoder = FrameDecoder()
        decoder.receive_data(b"".join(encode_frame(produce_frame(n)) for n in range(4)))
        frame = decoder.next_frame()
        assert frame is not None
        taken = _pipelined_produces(decoder, _produce_request(frame, session, True), session)
        return len(taken), decoder

    assert group()[0] == 4
    clock.now_s += 5.1
    taken, decoder = group()
    assert taken == 1  # the next is left to be refused on its own, closing the connection
    assert decoder.peek_frame() is not None
