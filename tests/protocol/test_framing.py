"""Frames: size prefix checked before the body is buffered."""

from __future__ import annotations

import struct

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
