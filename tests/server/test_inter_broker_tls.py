"""A broker's TLS handshake with another, over memory streams: the client context trusts
the listener's trust store, checks the host name unless
``ssl.endpoint.identification.algorithm`` is empty, and a failure says why."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest
import trio
import trio.testing

from wirekafka.listener_security import TlsSettings
from wirekafka.server.inter_broker_connector import InterBrokerSecurityError, tls_handshake
from wirekafka.server.tls import client_context, server_context
from wirekafka.testing.certificates import make_certificates


def settings(directory: Path) -> TlsSettings:
    certs = make_certificates(directory)
    return TlsSettings(
        keystore_location=str(certs.broker),
        keystore_key=None,
        keystore_certificate_chain=None,
        truststore_location=str(certs.ca),
    )


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsSettings:
    return settings(tmp_path_factory.mktemp("certs"))


def handshake(server: TlsSettings, client: TlsSettings, host: str) -> None:
    """Both sides of a handshake; the client's error if it failed."""
    server_ctx = server_context(server, "SASL_SSL")
    client_ctx = client_context(client, "SASL_SSL")

    async def main() -> None:
        client_end, server_end = trio.testing.memory_stream_pair()
        secured_server = trio.SSLStream(server_end, server_ctx, server_side=True)

        async def serve() -> None:
            with contextlib.suppress(trio.BrokenResourceError):
                await secured_server.do_handshake()

        failures: list[InterBrokerSecurityError] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with trio.fail_after(10):
                try:
                    await tls_handshake(client_end, client_ctx, host, "broker 1")
                except InterBrokerSecurityError as exc:
                    failures.append(exc)
            nursery.cancel_scope.cancel()
        if failures:
            raise failures[0]

    trio.run(main)


def test_a_broker_signed_by_the_trusted_ca_and_named_so_is_accepted(tls):
    handshake(tls, tls, "localhost")
    handshake(tls, tls, "127.0.0.1")


def test_another_host_name_is_refused_unless_identification_is_off(tls):
    with pytest.raises(
        InterBrokerSecurityError, match=r"broker 1: the TLS handshake failed: .*Hostname mismatch"
    ):
        handshake(tls, tls, "other.example")
    unchecked = dataclasses.replace(tls, endpoint_identification_algorithm="")
    handshake(tls, unchecked, "other.example")


def test_a_certificate_of_another_ca_is_refused(tls, tmp_path):
    server, client = tls, settings(tmp_path)
    with pytest.raises(
        InterBrokerSecurityError,
        match=r"broker 1: the TLS handshake failed: self-signed certificate",
    ):
        handshake(server, client, "localhost")
