"""Certificates made for a test: a CA, a broker certificate and a client certificate, in PEM.

Made with trustme (install it with ``pip install trustme``; wirekafka's ``test`` extra
has it), fresh for each call, written under a directory of the caller's::

    certs = make_certificates(tmp_path)
    broker = kafka_broker_factory(settings=certs.broker_settings("SSL"))
    Producer({"security.protocol": "SSL", "ssl.ca.location": str(certs.ca), ...})

The broker's certificate names ``localhost`` and ``127.0.0.1``; its file holds the key in
PKCS#8 and the chain, as Apache Kafka's ``ssl.keystore.location`` wants them too. The
client's has the subject ``CN=<client_name>`` (its principal on an SSL listener is
``User:CN=<name>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Certificates:
    ca: Path  # the CA's certificate: what clients and the broker trust
    broker: Path  # the broker's private key (PKCS#8) and certificate chain, one PEM file
    client_certificate: Path  # the client's certificate
    client_key: Path  # the client's private key (PKCS#8, unencrypted)

    def broker_settings(self, listener_name: str, client_auth: str = "none") -> dict[str, str]:
        """The broker's TLS keys for the listener ``listener_name`` (SSL, SASL_SSL, ...)."""
        prefix = f"listener.name.{listener_name.lower()}."
        settings = {
            prefix + "ssl.keystore.location": str(self.broker),
            prefix + "ssl.truststore.location": str(self.ca),
        }
        if client_auth != "none":
            settings[prefix + "ssl.client.auth"] = client_auth
        return settings


def make_certificates(directory: Path, client_name: str = "client") -> Certificates:
    try:
        import trustme
    except ImportError:
        raise RuntimeError("making test certificates needs trustme: pip install trustme") from None
    directory.mkdir(parents=True, exist_ok=True)
    authority = trustme.CA()
    broker = authority.issue_cert("localhost", "127.0.0.1")
    client = authority.issue_cert(f"{client_name}@clients.invalid", common_name=client_name)
    found = Certificates(
        ca=directory / "ca.pem",
        broker=directory / "broker.pem",
        client_certificate=directory / "client.pem",
        client_key=directory / "client.key",
    )
    authority.cert_pem.write_to_path(str(found.ca))
    chain = b"".join(blob.bytes() for blob in broker.cert_chain_pems)
    found.broker.write_bytes(_pkcs8(broker.private_key_pem.bytes()) + chain)
    client.cert_chain_pems[0].write_to_path(str(found.client_certificate))
    found.client_key.write_bytes(_pkcs8(client.private_key_pem.bytes()))
    return found


def _pkcs8(key_pem: bytes) -> bytes:
    """A private key in PKCS#8 PEM, the form Kafka's PEM key stores (broker and client) read."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
