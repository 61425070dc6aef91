"""Every (API, version) in the table round-trips: decode(encode(m)) == m; tagged fields."""

from __future__ import annotations

import dataclasses

import pytest

from tests.protocol.message_gen import sample_structs
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import API_TABLE, ApiKey
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.headers import RequestHeader, request_header_version
from wirekafka.protocol.messages.alter_user_scram_credentials import ScramCredentialUpsertion
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from wirekafka.protocol.messages.fetch import FetchRequest
from wirekafka.protocol.messages.sasl_authenticate import SaslAuthenticateRequest

SAMPLES_PER_PAIR = 25

PAIRS = [
    (api, version)
    for api in API_TABLE.values()
    for version in range(api.min_version, api.max_version + 1)
]


@pytest.mark.parametrize(
    ("api", "version"), PAIRS, ids=[f"{api.name}-v{version}" for api, version in PAIRS]
)
def test_request_and_response_round_trip(api, version):
    # ControlledShutdown v0's request header (v0) has no client id
    with_client_id = request_header_version(api.key, version, api.is_flexible(version)) >= 1
    for index, request in enumerate(sample_structs(api.request, version, SAMPLES_PER_PAIR, 1)):
        header = RequestHeader(api.key, version, index, "client-1" if index % 2 else None)
        decoded = rpc.decode_request(rpc.encode_request(header, request))
        expected = header if with_client_id else dataclasses.replace(header, client_id=None)
        assert decoded.header == expected
        assert decoded.body == request
    for index, response in enumerate(sample_structs(api.response, version, SAMPLES_PER_PAIR, 2)):
        frame = rpc.encode_response(api.key, version, index, response)
        header, body = rpc.decode_response(api.key, version, frame)
        assert header.correlation_id == index
        assert body == response


def test_every_advertised_pair_is_covered(capsys):
    advertised = sum(api.max_version - api.min_version + 1 for api in API_TABLE.values())
    assert len(PAIRS) == advertised
    with capsys.disabled():
        print(f"\nround-trip covers {len(PAIRS)} (API, version) pairs of {len(API_TABLE)} APIs")


def test_unknown_tagged_fields_are_skipped():
    body = ApiVersionsRequest(client_software_name="x", client_software_version="1")
    header = RequestHeader(ApiKey.API_VERSIONS, 3, 5, "c")
    frame = rpc.encode_request(header, body)
    assert frame.endswith(b"\x00")  # empty tagged-field section closes the body
    # Replace it with two tags from a future version: 7 (3 bytes) and 200 (0 bytes).
    future = frame[:-1] + b"\x02" + b"\x07\x03abc" + b"\xc8\x01\x00"
    assert rpc.decode_request(future).body == body


def test_known_tagged_fields_are_read_and_checked():
    body = FetchRequest(cluster_id="cluster-a", replica_id=-1)
    frame = rpc.encode_request(RequestHeader(ApiKey.FETCH, 12, 1, "c"), body)
    assert rpc.decode_request(frame).body.cluster_id == "cluster-a"
    # Tag 0 says 10 bytes, but the compact string inside takes 10 and leaves 1 over.
    padded = frame.replace(b"\x00\x0a\x0acluster-a", b"\x00\x0b\x0acluster-a\x00")
    assert padded != frame
    with pytest.raises(ProtocolError, match="left over"):
        rpc.decode_request(padded)


def test_tagged_fields_at_their_default_are_not_written():
    response = ApiVersionsResponse(error_code=0)
    frame = rpc.encode_response(ApiKey.API_VERSIONS, 3, 1, response)
    assert frame.endswith(b"\x00")  # no tags at all
    with_tag = ApiVersionsResponse(finalized_features_epoch=5)
    assert rpc.encode_response(ApiKey.API_VERSIONS, 3, 1, with_tag).endswith(
        b"\x01\x01\x08" + (5).to_bytes(8, "big")
    )


def test_secret_fields_stay_out_of_the_repr():
    token = SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00hunter2")
    upsertion = ScramCredentialUpsertion(name="alice", salt=b"salt", salted_password=b"hunter2")
    assert "hunter2" not in repr(token)
    assert "hunter2" not in repr(upsertion)
    assert "alice" in repr(upsertion)
    frame = rpc.encode_request(RequestHeader(ApiKey.SASL_AUTHENTICATE, 2, 7, "c"), token)
    assert rpc.decode_request(frame).body == token
