"""A broker with every kind of listener, for the security tests: its settings, its users.

PLAINTEXT, SSL (client certificates requested), SASL_PLAINTEXT and SASL_SSL, with
certificates made for the run (:mod:`wirekafka.testing.certificates`). PLAIN's users
come from the listeners' JAAS entries; SCRAM's are stored in the broker's security
metadata before it starts (``store_scram_user``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from interop_tests.broker import Broker
from wirekafka.security.scram_credentials import format_credential, new_credential
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE, SecurityMetadata
from wirekafka.testing.certificates import Certificates

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    + " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
    + ";"
)
SCRAM_USER, SCRAM_PASSWORD = "carol", "carol-secret"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_LISTENERS = ("SASL_PLAINTEXT", "SASL_SSL")


def credentials(mechanism: str) -> tuple[str, str]:
    return ("alice", USERS["alice"]) if mechanism == "PLAIN" else (SCRAM_USER, SCRAM_PASSWORD)


def store_scram_user(data_dir: Path, user: str, password: str) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    SecurityMetadata(data_dir / SECURITY_METADATA_FILE).set_scram_credentials(
        {
            (user, mechanism): format_credential(new_credential(mechanism, password))
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        }
    )


def secured_settings(certs: Certificates, client_auth: str = "requested") -> dict[str, str]:
    return {
        "listeners": (
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
            "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
        ),
        **certs.broker_settings("SSL", client_auth),
        **certs.broker_settings("SASL_SSL"),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": ",".join(MECHANISMS),
    }


def secured_broker(directory: Path, certs: Certificates) -> Iterator[Broker]:
    """For a fixture: a broker with every listener and both kinds of users; at the end it
    must still run and stop cleanly."""
    data_dir = directory / "data"
    store_scram_user(data_dir, SCRAM_USER, SCRAM_PASSWORD)
    broker = Broker(data_dir, secured_settings(certs))
    try:
        broker.start()
        yield broker
        broker.assert_running()
        broker.stop()
    finally:
        broker.close()
