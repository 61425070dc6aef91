"""How much a connection reads: within its unreserved allowance, or up to a reserved frame's end."""

from __future__ import annotations

import struct

from wirekafka.protocol.framing import FrameDecoder
from wirekafka.server.connection import (
    RECEIVE_BYTES,
    UNRESERVED_BYTES,
    needs_reservation,
    receive_size,
)


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
