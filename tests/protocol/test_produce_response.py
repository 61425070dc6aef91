"""Produce responses written field by field are the codec's bytes, at every version."""

from __future__ import annotations

import random

import pytest

from tests.protocol.message_gen import random_struct
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from wirekafka.protocol.produce_response import (
    LAST_KNOWN_VERSION,
    _frame,
    answer_parts,
    produce_response_parts,
)
from wirekafka.protocol.rpc import encode_response_parts
from wirekafka.protocol.simple_produce import SimpleProduce

VERSIONS = range(LAST_KNOWN_VERSION + 1)


def codec_bytes(version: int, correlation_id: int, response: ProduceResponse) -> bytes:
    parts = encode_response_parts(ApiKey.PRODUCE, version, correlation_id, response)
    return b"".join(bytes(part) for part in parts)


def answered(version: int, response: ProduceResponse, correlation_id: int = 7) -> bytes:
    parts = produce_response_parts(version, correlation_id, response)
    assert len(parts) == 1
    return bytes(parts[0])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_producer_s_answers_are_the_codec_s_bytes(version: int) -> None:
    response = ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=name,
                partition_responses=[
                    PartitionProduceResponse(
                        index=index,
                        error_code=code,
                        base_offset=base,
                        log_append_time_ms=append_time,
                        log_start_offset=start,
                    )
                    for index, code, base, append_time, start in [
                        (0, 0, 0, -1, 0),
                        (2**31 - 1, 6, 2**63 - 1, 1_700_000_000_000, 2**40),
                        (3, -1, -1, -(2**63), -1),
                    ][:count]
                ],
            )
            for name, count in [("bench", 1), ("ünïcødé ✓", 3), ("x" * 200, 0), ("", 2)]
        ],
        throttle_time_ms=250,
    )
    assert _frame(version, -5, response) is not None  # written here, not by the codec
    assert answered(version, response, -5) == codec_bytes(version, -5, response)
    empty = ProduceResponse(responses=[])
    assert answered(version, empty) == codec_bytes(version, 7, empty)


# refusals with fields of v8 on: an error message, record errors
REFUSALS = (
    PartitionProduceResponse(index=0, error_code=87, base_offset=-1, error_message="bad"),
    PartitionProduceResponse(
        index=0,
        error_code=87,
        base_offset=-1,
        record_errors=[BatchIndexAndErrorMessage(batch_index=3)],
    ),
)


@pytest.mark.parametrize("version", VERSIONS)
def test_refusals_with_messages_or_record_errors_go_to_the_codec(version: int) -> None:
    for partition in REFUSALS:
        response = ProduceResponse(
            responses=[TopicProduceResponse(name="t", partition_responses=[partition])]
        )
        assert (_frame(version, 1, response) is None) == (version >= 8)
        assert answered(version, response) == codec_bytes(version, 7, response)


@pytest.mark.parametrize("version", VERSIONS)
def test_random_responses_are_the_codec_s_bytes(version: int) -> None:
    rng = random.Random(version)
    for _ in range(300):
        response = random_struct(rng, ProduceResponse, version)
        correlation_id = rng.randint(-(2**31), 2**31 - 1)
        assert answered(version, response, correlation_id) == codec_bytes(
            version, correlation_id, response
        )


def test_a_version_it_does_not_know_goes_to_the_codec() -> None:
    assert _frame(LAST_KNOWN_VERSION + 1, 1, ProduceResponse(responses=[])) is None


# A request read as a SimpleProduce is answered with its one partition's answer,
# written into the response of one topic and one partition its version has.

SIMPLE_VERSIONS = range(3, LAST_KNOWN_VERSION + 1)  # those a SimpleProduce is read at


def simple_request(version: int, topic: str, correlation_id: int) -> SimpleProduce:
    return SimpleProduce(version, correlation_id, "client", 1, 1000, topic, 0, memoryview(b""))


@pytest.mark.parametrize("version", SIMPLE_VERSIONS)
def test_a_simple_produce_s_answer_is_the_codec_s_bytes_of_the_whole_response(
    version: int,
) -> None:
    rng = random.Random(version)
    partitions = [
        PartitionProduceResponse(index=0, error_code=0, base_offset=0),
        PartitionProduceResponse(
            index=2**31 - 1,
            error_code=6,
            base_offset=2**63 - 1,
            log_append_time_ms=1_700_000_000_000,
            log_start_offset=2**40,
        ),
        *REFUSALS,
        *(random_struct(rng, PartitionProduceResponse, version) for _ in range(200)),
    ]
    for partition in partitions:
        for topic in ("bench", "ünïcødé ✓", "x" * 200, ""):
            correlation_id = rng.randint(-(2**31), 2**31 - 1)
            parts = answer_parts(simple_request(version, topic, correlation_id), partition)
            whole = ProduceResponse(
                responses=[TopicProduceResponse(name=topic, partition_responses=[partition])]
            )
            assert b"".join(bytes(part) for part in parts) == codec_bytes(
                version, correlation_id, whole
            )
