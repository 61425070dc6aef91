"""The settings tools/bench_security.py gives both brokers and the client, and its endpoints."""

from __future__ import annotations

from pathlib import Path

from tools.apache_kafka import ApacheKafka
from tools.bench_peers import AdminPeer, Result
from tools.bench_security import (
    Endpoint,
    client_options,
    listener_settings,
    with_client_options,
)
from wirekafka.config import broker_config_from_properties
from wirekafka.testing.certificates import Certificates

CERTS = Certificates(
    ca=Path("/certs/ca.pem"),
    broker=Path("/certs/broker.pem"),
    client_certificate=Path("/certs/client.pem"),
    client_key=Path("/certs/client.key"),
)


def test_wirekafka_reads_the_listener_settings_as_a_pem_sasl_ssl_listener_with_plain():
    config = broker_config_from_properties(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:9094",
            **listener_settings(CERTS),
        }
    )
    sasl_ssl = config.listener_security["SASL_SSL"]
    assert sasl_ssl.tls is not None
    assert sasl_ssl.tls.keystore_location == "/certs/broker.pem"
    assert sasl_ssl.sasl is not None
    assert sasl_ssl.sasl.enabled_mechanisms == ("PLAIN",)
    assert config.listener_security["PLAINTEXT"].tls is None


def test_the_listener_settings_give_kafka_pem_stores_and_plain_users():
    settings = listener_settings(CERTS)
    assert settings["listener.name.sasl_ssl.ssl.keystore.type"] == "PEM"
    assert settings["listener.name.sasl_ssl.ssl.truststore.type"] == "PEM"
    assert settings["listener.name.sasl_ssl.ssl.truststore.location"] == "/certs/ca.pem"
    jaas = settings["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    assert jaas.startswith("org.apache.kafka.common.security.plain.PlainLoginModule required ")
    assert 'user_alice="alice-secret"' in jaas


def test_the_client_options_are_pairs_of_x_and_a_setting():
    options = client_options(CERTS)
    assert options[0::2] == ("-X",) * 5
    assert dict(option.split("=", 1) for option in options[1::2]) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": "/certs/ca.pem",
    }


def test_a_row_runs_with_the_options_of_the_endpoint_it_is_pointed_at():
    broker = AdminPeer("broker", "127.0.0.1:1", (1,))
    found = [
        Endpoint("plain", broker, "127.0.0.1:1"),
        Endpoint("secured", broker, "127.0.0.1:2", ("-X", "security.protocol=SASL_SSL")),
    ]
    calls: list[tuple[tuple[str, ...], str]] = []

    def measure_with(options):
        def measure(bootstrap, pids, topic):
            calls.append((tuple(options), bootstrap))
            return Result(1, 1.0, 1.0, None, 0.0)

        return measure

    measure = with_client_options(measure_with, found)
    measure("127.0.0.1:2", (1,), "t")
    measure("127.0.0.1:1", (1,), "t")
    assert calls == [
        (("-X", "security.protocol=SASL_SSL"), "127.0.0.1:2"),
        ((), "127.0.0.1:1"),
    ]


def test_apache_kafka_gets_its_extra_listener_advertised_and_mapped():
    kafka = ApacheKafka(
        {"listener.name.sasl_ssl.ssl.keystore.type": "PEM"}, extra_listeners=["SASL_SSL"]
    )
    kafka.port, kafka.listener_ports = 9092, {"SASL_SSL": 9094}
    properties = kafka.properties(Path("/data"), 9093)
    assert properties["listeners"] == (
        "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"
    )
    assert properties["advertised.listeners"] == (
        "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094"
    )
    assert properties["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"
    )
    assert properties["listener.name.sasl_ssl.ssl.keystore.type"] == "PEM"
    assert kafka.listener_bootstrap("SASL_SSL") == "127.0.0.1:9094"
