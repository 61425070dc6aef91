"""A broker that makes clients log in, for testing code that uses TLS and SASL.

:func:`start_secure_broker` starts a broker whose one client listener is
SASL_SSL, with certificates made for the test (:mod:`.certificates`) and one
user who may log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (its SCRAM
credentials stored, salted, before the broker starts). The
``kafka_sasl_ssl_broker`` fixture of the pytest plugin is one of these::

    def test_orders(kafka_sasl_ssl_broker):
        producer = Producer(kafka_sasl_ssl_broker.client_config("SCRAM-SHA-512"))

A PLAINTEXT listener on another port serves the test's own set-up
(``.plaintext_bootstrap``): its anonymous clients need no password.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wirekafka.security.scram_credentials import format_credential, new_credential
from wirekafka.storage.security_metadata import SECURITY_METADATA_FILE, SecurityMetadata
from wirekafka.testing.certificates import Certificates, make_certificates
from wirekafka.testing.process import BrokerFactory, BrokerProcess

USER, PASSWORD = "test-user", "test-user-secret"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class SecureBroker:
    broker: BrokerProcess
    certificates: Certificates
    username: str = USER
    password: str = PASSWORD

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the SASL_SSL listener."""
        return self.broker.listener_bootstrap("SASL_SSL")

    @property
    def plaintext_bootstrap(self) -> str:
        return self.broker.listener_bootstrap("PLAINTEXT")

    def client_config(self, mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
        """librdkafka's (confluent-kafka's) settings to log in with ``mechanism``."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": self.username,
            "sasl.password": self.password,
            "ssl.ca.location": str(self.certificates.ca),
        }


def secure_settings(certificates: Certificates) -> dict[str, str]:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{USER}="{PASSWORD}";'
    )
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        **certificates.broker_settings("SASL_SSL"),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
    }


def start_secure_broker(factory: BrokerFactory, directory: Path) -> SecureBroker:
    """Certificates under ``directory``, the user's credentials stored, the broker started."""
    certificates = make_certificates(directory / "certificates")
    broker = factory.prepare(secure_settings(certificates))
    SecurityMetadata(broker.data_dir / SECURITY_METADATA_FILE).set_scram_credentials(
        {
            (USER, mechanism): format_credential(new_credential(mechanism, PASSWORD))
            for mechanism in SCRAM_MECHANISMS
        }
    )
    return SecureBroker(broker.start(), certificates)
