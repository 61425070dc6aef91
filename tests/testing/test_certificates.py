"""The certificates made for tests: what both brokers' PEM key stores read."""

from __future__ import annotations

import ssl

from wirekafka.testing.certificates import make_certificates


def test_the_broker_file_holds_a_pkcs8_key_and_its_chain(tmp_path):
    certs = make_certificates(tmp_path)
    text = certs.broker.read_text()
    assert text.startswith("-----BEGIN PRIVATE KEY-----\n")  # PKCS#8, as Java reads it
    assert text.count("-----BEGIN CERTIFICATE-----") == 1
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(certs.broker)  # the key matches the certificate
    client = ssl.create_default_context(cafile=certs.ca)
    assert client.cert_store_stats()["x509_ca"] == 1
