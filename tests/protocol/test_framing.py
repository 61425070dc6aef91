"""Frames: size prefix checked before the body is buffered."""

from __future__ import annotations

import struct
import tracemalloc

import pytest

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encode_frame


def test_default_limit_is_kafkas_socket_request_max_bytes():
    assert DEFAULT_MAX_FRAME_BYTES == 104_857_600
    assert FrameDecoder().max_frame_bytes == DEFAULT_MAX_FRAME_BYTES


def test_frames_come_out_whole_whether_fed_at_once_or_byte_by_byte():
    stream = encode_frame(b"first") + encode_frame(b"") + encode_frame(b"third!")
    whole = FrameDecoder()
    whole.receive_data(stream)
    frames = []
    while (frame := whole.next_frame()) is not None:
        frames.append(frame)
    assert frames == [b"first", b"", b"third!"]

    trickled = FrameDecoder()
    frames = []
    for index in range(len(stream)):
        trickled.receive_data(stream[index : index + 1])
        while (frame := trickled.next_frame()) is not None:
            frames.append(frame)
    assert frames == [b"first", b"", b"third!"]
    assert trickled.buffered_bytes == 0


def test_oversized_frame_is_refused_from_its_prefix_alone():
    decoder = FrameDecoder(max_frame_bytes=1000)
    decoder.receive_data(b"\x00\x00")
    with pytest.raises(ProtocolError, match="exceeds"):
        decoder.receive_data(struct.pack(">h", 1001))  # completes the size; no body yet


def test_negative_frame_size_is_a_protocol_error():
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError, match="negative"):
        decoder.receive_data(struct.pack(">i", -1))


def test_frame_at_the_limit_is_accepted():
    decoder = FrameDecoder(max_frame_bytes=8)
    decoder.receive_data(encode_frame(b"12345678"))
    assert decoder.next_frame() == b"12345678"


def test_pending_size_is_known_before_the_body():
    decoder = FrameDecoder()
    decoder.receive_data(struct.pack(">i", 10) + b"abc")
    assert decoder.pending_frame_bytes == 10
    assert decoder.next_frame() is None


def fill(decoder: FrameDecoder, data: bytes, at_most: int) -> None:
    """Write ``data`` into the decoder's buffer as a reader's recv_into would, at most
    ``at_most`` bytes a time."""
    view = memoryview(data)
    while view.nbytes:
        target = decoder.fill_view(at_most)
        count = min(target.nbytes, view.nbytes)
        assert count, "no room to read into"
        target[:count] = view[:count]
        decoder.filled(count)
        view = view[count:]


@pytest.mark.parametrize("at_most", [1, 7, 100, 4096])
def test_frames_read_into_the_buffer_come_out_whole_and_their_own(at_most):
    bodies = [bytes([i]) * (i * 37 % 300) for i in range(60)]
    decoder = FrameDecoder(buffer_bytes=512)
    fill(decoder, b"".join(encode_frame(body) for body in bodies), at_most)
    frames = []
    while (frame := decoder.next_frame()) is not None:
        frames.append(frame)
    assert frames == bodies
    assert decoder.buffered_bytes == 0
    frames[0][:1] = b"!"  # a frame is a bytearray of its own, patched without harm
    assert frames[1] == bodies[1]


def test_a_frame_larger_than_the_buffer_is_received_into_its_own_bytearray():
    body = bytes(range(256)) * 40  # 10 KiB, the buffer 1 KiB
    decoder = FrameDecoder(buffer_bytes=1024)
    fill(decoder, encode_frame(b"small") + struct.pack(">i", len(body)) + body[:100], 4096)
    assert decoder.next_frame() == b"small"
    assert decoder.pending_frame_bytes == len(body)
    assert decoder.buffered_bytes == 100
    target = decoder.fill_view(1 << 20)
    assert target.nbytes == len(body) - 100  # the frame's own buffer, up to its end
    target[:] = body[100:]
    decoder.filled(target.nbytes)
    frame = decoder.next_frame()
    assert frame == body
    assert target.obj is frame  # received in place: never copied
    assert decoder.buffered_bytes == 0 and decoder.pending_frame_bytes is None


def test_a_large_frame_gets_its_buffer_only_when_its_bytes_are_asked_for():
    # a server reserves memory for it in between; a size alone allocates nothing
    decoder = FrameDecoder(buffer_bytes=1024)
    tracemalloc.start()
    try:
        decoder.receive_data(struct.pack(">i", 50_000_000) + b"x" * 100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoder.pending_frame_bytes == 50_000_000
    assert peak < 100_000


def test_a_decoder_between_frames_holds_no_buffer():
    # thousands of idle connections hold nothing; one with half a frame holds its buffer
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        decoders = [FrameDecoder(buffer_bytes=64 * 1024) for _ in range(1000)]
        for decoder in decoders:
            decoder.receive_data(encode_frame(b"request"))
            assert decoder.next_frame() == b"request"
        idle, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert idle - before < 1000 * 2048  # the decoders themselves, not 1000 buffers of 64 KiB
    decoders[0].receive_data(encode_frame(b"x" * 100)[:50])
    decoders[1].receive_data(encode_frame(b"y" * 100)[:70])  # each its own buffer meanwhile
    assert (decoders[0].buffered_bytes, decoders[1].buffered_bytes) == (46, 66)
    decoders[1].receive_data(encode_frame(b"y" * 100)[70:])
    decoders[0].receive_data(encode_frame(b"x" * 100)[50:])
    assert decoders[0].next_frame() == b"x" * 100
    assert decoders[1].next_frame() == b"y" * 100
