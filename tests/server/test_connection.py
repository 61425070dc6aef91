"""How much a connection reads (within its unreserved allowance, or up to a reserved
frame's end), and which pipelined produce requests it handles together."""

from __future__ import annotations

import struct

from tests.handlers.support import make_batch, produce_request
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.metadata import MetadataRequest
from wirekafka.protocol.rpc import decode_request, encode_request
from wirekafka.server.connection import (
    RECEIVE_BYTES,
    UNRESERVED_BYTES,
    Session,
    _pipelined_produces,
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


def test_pipelined_produce_requests_are_taken_together_up_to_the_first_other_one() -> None:
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
        first = decode_request(frame, session.client_host)
        return [r.header.correlation_id for r in _pipelined_produces(decoder, first, session)]

    assert group() == [1, 2, 3]
    # a request the codec refuses stays, to be refused on its own (closing the connection)
    assert decoder.next_frame() == broken
    # and so does a request of another API
    assert group() == [6]
    assert decoder.next_frame() == metadata
    assert group() == [8]
    assert decoder.next_frame() is None


def produce_frame(correlation_id: int, version: int = 9) -> bytes:
    header = RequestHeader(ApiKey.PRODUCE, version, correlation_id, "c")
    return encode_request(header, produce_request("t", make_batch([b"v"]), acks=1))
