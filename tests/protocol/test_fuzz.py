"""Fuzzing the decoders: malformed input raises ProtocolError and nothing else.

Inputs are arbitrary bytes and mutations of valid frames (requests and
responses of every API version, record batches and message sets of every
codec). Frames are fed to the frame decoder whole and one byte at a time.
The rules (time per input, number of examples) are in :mod:`.fuzzing`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.protocol.fuzzing import EXAMPLES, FUZZ_SETTINGS, mutated, only_protocol_errors
from tests.protocol.message_gen import sample_structs
from tests.protocol.records_gen import sample_records
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import API_TABLE
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.records import record_batch
from wirekafka.protocol.records.compression import CompressionType, decompress
from wirekafka.protocol.records.convert import batches_to_message_set, message_set_to_batch
from wirekafka.protocol.records.message_set import decode_message_set, encode_message_set

pytestmark = pytest.mark.fuzz

MAX_FRAME_BYTES = 1 << 20


def _request_corpus() -> list[bytes]:
    frames = []
    for api in API_TABLE.values():
        for version in range(api.min_version, api.max_version + 1):
            for index, body in enumerate(sample_structs(api.request, version, 1, seed=9)):
                header = RequestHeader(api.key, version, index, "fuzz")
                frames.append(rpc.encode_request(header, body))
    return frames


def _response_corpus() -> list[tuple[int, int, bytes]]:
    frames = []
    for api in API_TABLE.values():
        for version in range(api.min_version, api.max_version + 1):
            for body in sample_structs(api.response, version, 1, seed=10):
                frames.append((api.key, version, rpc.encode_response(api.key, version, 1, body)))
    return frames


def _record_corpus() -> list[bytes]:
    records = sample_records(4, base_offset=10)
    data = [record_batch.encode_batch(records, compression=codec) for codec in CompressionType]
    for magic in (0, 1):
        for codec in CompressionType:
            plain = [r.__class__(r.offset, r.timestamp, r.key, r.value) for r in records]
            data.append(encode_message_set(plain, magic=magic, compression=codec))
    return data


REQUESTS = _request_corpus()
RESPONSES = _response_corpus()
RECORDS = _record_corpus()


def _frames_of(stream: bytes, byte_by_byte: bool) -> list[bytes]:
    decoder = FrameDecoder(MAX_FRAME_BYTES)
    frames = []
    chunks = [stream[i : i + 1] for i in range(len(stream))] if byte_by_byte else [stream]
    for chunk in chunks:
        decoder.receive_data(chunk)
        while (frame := decoder.next_frame()) is not None:
            frames.append(frame)
    return frames


def _decode_stream(stream: bytes, byte_by_byte: bool) -> None:
    for frame in _frames_of(stream, byte_by_byte):
        rpc.decode_request(frame)


@FUZZ_SETTINGS
@given(data=st.binary(max_size=2048), byte_by_byte=st.booleans())
def test_arbitrary_bytes_as_a_request_stream(data, byte_by_byte):
    only_protocol_errors(lambda: _decode_stream(data, byte_by_byte))


@FUZZ_SETTINGS
@given(body=st.binary(max_size=512), byte_by_byte=st.booleans())
def test_arbitrary_bodies_in_well_formed_frames(body, byte_by_byte):
    only_protocol_errors(lambda: _decode_stream(encode_frame(body), byte_by_byte))


@pytest.mark.slow
@FUZZ_SETTINGS
@given(frame=mutated(REQUESTS), byte_by_byte=st.booleans(), keep_size=st.booleans())
def test_mutated_requests(frame, byte_by_byte, keep_size):
    # Mutate inside a correct size prefix, or mutate the prefix along with the body.
    stream = encode_frame(frame) if keep_size else frame
    only_protocol_errors(lambda: _decode_stream(stream, byte_by_byte))


@pytest.mark.slow
@FUZZ_SETTINGS
@given(index=st.integers(0, len(RESPONSES) - 1), data=st.data())
def test_mutated_responses(index, data):
    api_key, version, frame = RESPONSES[index]
    bad = data.draw(mutated([frame]))
    only_protocol_errors(lambda: rpc.decode_response(api_key, version, bad))


def _decode_records(data: bytes, allow_partial_tail: bool) -> None:
    if len(data) > 16 and data[16] == 2:
        record_batch.decode_batches(data, allow_partial_tail=allow_partial_tail)
        for position, header in record_batch.iter_batches(data, allow_partial_tail=True):
            record_batch.crc_matches(data, position, header)
        batches_to_message_set(data, magic=1)
    else:
        decode_message_set(data, allow_partial_tail=allow_partial_tail)
        message_set_to_batch(data, base_offset=0)


@pytest.mark.slow
@FUZZ_SETTINGS
@given(data=mutated(RECORDS), allow_partial_tail=st.booleans())
def test_mutated_record_data(data, allow_partial_tail):
    only_protocol_errors(lambda: _decode_records(data, allow_partial_tail))


@settings(FUZZ_SETTINGS, max_examples=max(EXAMPLES // 4, 100))
@given(data=st.binary(max_size=1024), codec=st.sampled_from(list(CompressionType)))
def test_arbitrary_compressed_data(data, codec):
    only_protocol_errors(lambda: decompress(codec, data, legacy_lz4=bool(len(data) % 2)))
