"""TLS and SASL against stock clients: every client logs in with each mechanism it has, on
SASL_PLAINTEXT and SASL_SSL; SSL with a client certificate; and what is refused is refused
with nothing stored.

One broker for the module serves PLAINTEXT, SSL (client certificates requested),
SASL_PLAINTEXT and SASL_SSL, with certificates made for this run. PLAIN's users come from
the listeners' JAAS entries; SCRAM's are stored in the broker's security metadata before
it starts (AlterUserScramCredentials has tests of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from interop_tests.broker import Broker
from interop_tests.clients.kcat import kcat_binary
from interop_tests.conftest import HEAVY
from interop_tests.kafka_tools import KafkaTools
from interop_tests.protocol_client import ProtocolClient, ProtocolClientError
from interop_tests.readme import readme_examples
from interop_tests.security import (
    MECHANISMS,
    PLAIN_JAAS,
    SASL_LISTENERS,
    SCRAM_PASSWORD,
    SCRAM_USER,
    credentials,
    secured_broker,
)
from interop_tests.wirekafka_command import wirekafka_command
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from wirekafka.protocol.messages.sasl_handshake import SaslHandshakeRequest
from wirekafka.testing.certificates import Certificates, make_certificates

RECORDS = 20


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"), client_name="alice")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[Broker]:
    yield from secured_broker(tmp_path_factory.mktemp("secured"), certs)


# -- the clients, each producing RECORDS records and reading them back


def librdkafka_config(
    broker: Broker, listener: str, mechanism: str | None, certs: Certificates
) -> dict:
    config: dict = {
        "bootstrap.servers": broker.listener_bootstrap(listener),
        "security.protocol": listener,
    }
    if mechanism is not None:
        user, password = credentials(mechanism)
        config.update(
            {"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
        )
    if listener.endswith("SSL"):
        config["ssl.ca.location"] = str(certs.ca)
    return config


def confluent_round_trip(config: dict, topic: str) -> list[bytes]:
    producer = Producer({**config, "message.timeout.ms": 15000})
    for i in range(RECORDS):
        producer.produce(topic, b"value-%d" % i, partition=0)
    assert producer.flush(20) == 0
    consumer = Consumer({**config, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < RECORDS and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def kafka_python_config(
    broker: Broker, listener: str, mechanism: str | None, certs: Certificates
) -> dict:
    config: dict = {
        "bootstrap_servers": broker.listener_bootstrap(listener),
        "security_protocol": listener,
    }
    if mechanism is not None:
        user, password = credentials(mechanism)
        config.update(
            {
                "sasl_mechanism": mechanism,
                "sasl_plain_username": user,
                "sasl_plain_password": password,
            }
        )
    if listener.endswith("SSL"):
        config["ssl_cafile"] = str(certs.ca)
    return config


def kafka_python_round_trip(config: dict, topic: str) -> list[bytes]:
    producer = KafkaProducer(**config)
    for i in range(RECORDS):
        producer.send(topic, b"value-%d" % i, partition=0)
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=5000, **config
    )
    values = [record.value for record in consumer]
    consumer.close()
    return values


def aiokafka_round_trip(config: dict, topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    settings = dict(config)
    if "ssl_cafile" in settings:
        settings["ssl_context"] = create_ssl_context(cafile=settings.pop("ssl_cafile"))

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            for i in range(RECORDS):
                await producer.send_and_wait(topic, b"value-%d" % i, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **settings)
        await consumer.start()
        values: list[bytes] = []
        try:
            while len(values) < RECORDS:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                values.extend(r.value for records in batch.values() for r in records)
        finally:
            await consumer.stop()
        return values

    return asyncio.run(run())


def kcat_round_trip(config: dict, topic: str) -> list[bytes]:
    options = [arg for key, value in config.items() for arg in ("-X", f"{key}={value}")]
    lines = "".join(f"value-{i}\n" for i in range(RECORDS)).encode()
    subprocess.run(
        [kcat_binary(), "-P", "-t", topic, "-p", "0", *options], input=lines, check=True, timeout=60
    )
    done = subprocess.run(
        [kcat_binary(), "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", *options],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


EXPECTED = [b"value-%d" % i for i in range(RECORDS)]


@pytest.mark.parametrize("listener", SASL_LISTENERS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("client", ["confluent-kafka", "kcat", "kafka-python", "aiokafka"])
def test_each_client_logs_in_with_each_mechanism(
    secured: Broker, certs: Certificates, topic_name, client: str, listener: str, mechanism: str
) -> None:
    topic = topic_name()
    if client in ("confluent-kafka", "kcat"):
        config = librdkafka_config(secured, listener, mechanism, certs)
        round_trip = confluent_round_trip if client == "confluent-kafka" else kcat_round_trip
    else:
        config = kafka_python_config(secured, listener, mechanism, certs)
        round_trip = kafka_python_round_trip if client == "kafka-python" else aiokafka_round_trip
    assert round_trip(config, topic) == EXPECTED


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_ssl_with_a_client_certificate(
    secured: Broker, certs: Certificates, topic_name, client: str
) -> None:
    topic = topic_name()
    if client == "confluent-kafka":
        config = librdkafka_config(secured, "SSL", None, certs)
        config["ssl.certificate.location"] = str(certs.client_certificate)
        config["ssl.key.location"] = str(certs.client_key)
        assert confluent_round_trip(config, topic) == EXPECTED
    else:
        config = kafka_python_config(secured, "SSL", None, certs)
        config.update(ssl_certfile=str(certs.client_certificate), ssl_keyfile=str(certs.client_key))
        assert kafka_python_round_trip(config, topic) == EXPECTED


def test_metadata_answers_with_the_listener_the_client_came_in_on(
    secured: Broker, certs: Certificates
) -> None:
    for listener in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = "SCRAM-SHA-256" if listener.startswith("SASL") else None
        admin = AdminClient(librdkafka_config(secured, listener, mechanism, certs))
        brokers = admin.list_topics(timeout=20).brokers
        assert [f"{b.host}:{b.port}" for b in brokers.values()] == [
            secured.listener_bootstrap(listener).replace("127.0.0.1", "localhost")
        ] or [b.port for b in brokers.values()] == [secured.listener_ports[listener]]


def end_offset(broker: Broker, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "end-offsets"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1]
    finally:
        consumer.close()


def refused_produce(config: dict, topic: str) -> str:
    """Produce one record with ``config``; the error librdkafka reports."""
    errors: list[str] = []
    producer = Producer(
        {**config, "message.timeout.ms": 3000, "error_cb": lambda e: errors.append(e.str())}
    )
    producer.produce(topic, b"must-not-be-stored", partition=0)
    producer.flush(6)
    return " | ".join(errors)


@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password", "expected"),
    [
        ("SASL_PLAINTEXT", "PLAIN", "alice", "Not-Alice-1", "Invalid username or password"),
        ("SASL_SSL", "PLAIN", "mallory", "alice-secret", "Invalid username or password"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256", SCRAM_USER, "Not-Carol-2", "Authentication failed"),
        ("SASL_SSL", "SCRAM-SHA-512", "mallory", "Not-Mallory-3", "Authentication failed"),
    ],
)
def test_a_failed_login_is_refused_and_stores_nothing(
    secured: Broker, certs: Certificates, listener, mechanism, user, password, expected
) -> None:
    topic = f"refused-{uuid.uuid4().hex}"  # not named after the password
    Producer({"bootstrap.servers": secured.bootstrap}).produce(topic, b"first", partition=0)
    assert confluent_round_trip(librdkafka_config(secured, "PLAINTEXT", None, certs), topic)
    before = end_offset(secured, topic)
    config = librdkafka_config(secured, listener, mechanism, certs)
    config.update({"sasl.username": user, "sasl.password": password})
    assert expected in refused_produce(config, topic)
    assert end_offset(secured, topic) == before
    assert password not in secured.output()  # no password is logged


def test_kafka_python_is_refused_with_a_wrong_password(
    secured: Broker, certs: Certificates
) -> None:
    config = kafka_python_config(secured, "SASL_PLAINTEXT", "SCRAM-SHA-256", certs)
    config["sasl_plain_password"] = "wrong"
    with pytest.raises(KafkaError):
        producer = KafkaProducer(**config, max_block_ms=5000)
        try:
            producer.send("anything", b"x").get(timeout=10)
        finally:
            producer.close(timeout=1)


def test_a_plaintext_client_on_a_sasl_port_is_closed_unserved(
    secured: Broker, certs: Certificates, topic_name
) -> None:
    topic = topic_name()
    config = {"bootstrap.servers": secured.listener_bootstrap("SASL_PLAINTEXT")}
    refused_produce(config, topic)
    with socket.create_connection(
        ("127.0.0.1", secured.listener_ports["SASL_PLAINTEXT"]), 5
    ) as sock:
        # a Metadata v1 request for every topic: not served before authentication
        body = struct.pack(">hhih", 3, 1, 7, 4) + b"test" + struct.pack(">i", -1)
        sock.sendall(struct.pack(">i", len(body)) + body)
        assert sock.recv(4096) == b""  # closed without an answer
    assert (
        topic
        not in AdminClient({"bootstrap.servers": secured.bootstrap}).list_topics(timeout=20).topics
    )


def test_a_handshake_that_stalls_is_dropped(secured: Broker) -> None:
    for listener in ("SSL", "SASL_PLAINTEXT"):
        with socket.create_connection(("127.0.0.1", secured.listener_ports[listener]), 5) as sock:
            sock.settimeout(20)
            sock.sendall(b"\x00")  # one byte, then nothing
            started = time.monotonic()
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(4096) == b""
            assert time.monotonic() - started < 15


@pytest.fixture
def required_broker(broker_factory, certs: Certificates) -> Broker:
    return broker_factory(
        settings={
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            **certs.broker_settings("SSL", client_auth="required"),
        }
    )


def test_required_client_auth_refuses_a_client_without_a_certificate(
    required_broker: Broker, certs: Certificates, topic_name
) -> None:
    topic = topic_name()
    config = librdkafka_config(required_broker, "SSL", None, certs)
    errors = refused_produce(config, topic)
    assert "certificate required" in errors, errors
    context = ssl.create_default_context(cafile=str(certs.ca))
    address = ("127.0.0.1", required_broker.listener_ports["SSL"])
    with (
        socket.create_connection(address, 5) as raw,
        pytest.raises((ssl.SSLError, ConnectionResetError)),
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(b"\x00\x00\x00\x00")
        tls.recv(1)
    config["ssl.certificate.location"] = str(certs.client_certificate)
    config["ssl.key.location"] = str(certs.client_key)
    assert confluent_round_trip(config, topic) == EXPECTED
    assert end_offset(required_broker, topic) == RECORDS  # only the authenticated records


def sasl_plaintext_broker(broker_factory, **settings: str) -> Broker:
    return broker_factory(
        settings={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            **settings,
        }
    )


def plain_login(client: ProtocolClient, handshake_version: int = 1) -> SaslAuthenticateResponse:
    handshake = client.request(
        ApiKey.SASL_HANDSHAKE, handshake_version, SaslHandshakeRequest(mechanism="PLAIN")
    )
    assert handshake.error_code == ErrorCode.NONE
    token = SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret")
    return client.request(ApiKey.SASL_AUTHENTICATE, 1, token)


def test_handshake_v0_takes_bare_tokens(broker_factory) -> None:
    """The framing of clients older than SaslAuthenticate: after SaslHandshake v0 the
    token goes as a bare size-prefixed frame and comes back so."""
    broker = sasl_plaintext_broker(broker_factory)
    port = broker.listener_ports["SASL_PLAINTEXT"]
    with ProtocolClient("127.0.0.1", port) as client:
        handshake = client.request(
            ApiKey.SASL_HANDSHAKE, 0, SaslHandshakeRequest(mechanism="PLAIN")
        )
        assert (handshake.error_code, "PLAIN" in handshake.mechanisms) == (ErrorCode.NONE, True)
        token = b"\x00alice\x00alice-secret"
        client._sock.sendall(struct.pack(">i", len(token)) + token)
        assert client._sock.recv(4) == b"\x00\x00\x00\x00"  # an empty answer: done
        assert client.metadata().brokers  # authenticated: served
    with socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.settimeout(10)
        body = struct.pack(">hhih", 17, 0, 1, 1) + b"t" + struct.pack(">h", 5) + b"PLAIN"
        sock.sendall(struct.pack(">i", len(body)) + body)
        sock.recv(4096)
        bad = b"\x00alice\x00Not-The-Password-4"
        sock.sendall(struct.pack(">i", len(bad)) + bad)
        assert sock.recv(4096) == b""  # refused: closed, after the delay, without an answer
    assert "Not-The-Password-4" not in broker.output()


def test_a_session_past_connections_max_reauth_ms_must_log_in_again(
    broker_factory, topic_name
) -> None:
    broker = sasl_plaintext_broker(
        broker_factory, **{"listener.name.sasl_plaintext.connections.max.reauth.ms": "2000"}
    )
    port = broker.listener_ports["SASL_PLAINTEXT"]
    with ProtocolClient("127.0.0.1", port) as client:
        assert plain_login(client).session_lifetime_ms == 2000
        time.sleep(1.0)
        assert plain_login(client).session_lifetime_ms == 2000  # again, before it ends
        time.sleep(1.5)
        assert client.metadata().brokers  # within the new session
        time.sleep(2.5)
        with pytest.raises((ProtocolClientError, OSError)):
            client.metadata()  # the session ended: closed unanswered
    # librdkafka re-authenticates by itself (KIP-368) and keeps consuming across sessions
    topic = topic_name()
    config = {
        "bootstrap.servers": broker.listener_bootstrap("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    producer = Producer(config)
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    received = 0
    deadline = time.monotonic() + 7  # three sessions and more
    while time.monotonic() < deadline:
        producer.produce(topic, b"x")
        producer.poll(0)
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            received += 1
    producer.flush(10)
    consumer.close()
    assert received > 10
    # only the hand-made client above was closed for not logging in again
    assert broker.output().count("without re-authentication") == 1


def java_client_config(
    broker: Broker, listener: str, mechanism: str | None, certs: Certificates, path: Path
) -> Path:
    """A properties file for Kafka's tools (the Java client 4.x)."""
    lines = [f"security.protocol={listener}"]
    if listener.endswith("SSL"):
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={certs.ca}"]
    if mechanism is not None:
        user, password = credentials(mechanism)
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        lines += [
            f"sasl.mechanism={mechanism}",
            f'sasl.jaas.config={module} required username="{user}" password="{password}";',
        ]
    elif listener == "SSL":
        keystore = path.with_suffix(".keystore.pem")
        keystore.write_text(certs.client_key.read_text() + certs.client_certificate.read_text())
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
    path.write_text("\n".join(lines) + "\n")
    return path


@HEAVY  # a JVM a run: kept off the machine while the latency tests measure
@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [
        *((listener, mechanism) for listener in SASL_LISTENERS for mechanism in MECHANISMS),
        ("SSL", None),
    ],
)
def test_the_java_client_through_kafkas_console_tools(
    secured: Broker, certs: Certificates, topic_name, tmp_path: Path, listener, mechanism
) -> None:
    topic = topic_name()
    config = java_client_config(secured, listener, mechanism, certs, tmp_path / "client.properties")
    tools = KafkaTools(secured.listener_bootstrap(listener))
    lines = "".join(f"value-{i}\n" for i in range(RECORDS))
    tools.console_producer("--topic", topic, "--command-config", str(config), stdin=lines)
    consumed = tools.console_consumer(
        "--topic", topic, "--from-beginning", "--max-messages", str(RECORDS),
        "--command-config", str(config), "--timeout-ms", "30000",
    )  # fmt: skip
    assert sorted(consumed.stdout.split()) == sorted(v.decode() for v in EXPECTED)


def test_pykafka_over_ssl(secured: Broker, certs: Certificates, topic_name) -> None:
    """pykafka 2.8 has TLS (its SslConfig); its SASL authenticators came after its last
    release, so it is tested on SSL only."""
    from pykafka import KafkaClient, SslConfig

    topic = topic_name()
    client = KafkaClient(
        hosts=secured.listener_bootstrap("SSL"),
        ssl_config=SslConfig(cafile=str(certs.ca)),
        socket_timeout_ms=30_000,
    )
    pykafka_topic = client.topics[topic.encode()]
    with pykafka_topic.get_sync_producer() as producer:
        for value in EXPECTED:
            producer.produce(value)
    consumer = pykafka_topic.get_simple_consumer(consumer_timeout_ms=5000)
    assert sorted(m.value for m in consumer) == sorted(EXPECTED)
    consumer.stop()


def test_wirekafka_commands_take_kafkas_client_properties(
    secured: Broker, certs: Certificates, topic_name, tmp_path: Path
) -> None:
    """``--command-config`` with the Java client's keys, as Kafka's tools take them."""
    topic = topic_name()
    config = java_client_config(
        secured, "SASL_SSL", "SCRAM-SHA-256", certs, tmp_path / "client.properties"
    )
    bootstrap = ("--bootstrap-server", secured.listener_bootstrap("SASL_SSL"))
    common = (*bootstrap, "--command-config", str(config))
    created = wirekafka_command("topics", "create", topic, "--partitions", "2", *common)
    assert created.returncode == 0, created.stderr
    produced = wirekafka_command("produce", "--topic", topic, *common, input="a\nb\nc\n")
    assert produced.returncode == 0, produced.stderr
    consumed = wirekafka_command(
        "consume", "--topic", topic, "--from", "earliest", "--max-messages", "3", *common
    )
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == ["a", "b", "c"]
    wrong = config.read_text().replace(SCRAM_PASSWORD, "Wrong-Password-6")
    (tmp_path / "wrong.properties").write_text(wrong)
    refused = wirekafka_command(
        "topics", "list", *bootstrap, "--command-config", str(tmp_path / "wrong.properties"),
        "--timeout", "10",
    )  # fmt: skip
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr, refused.stderr


def failed_logins(port: int, count: int, stop: threading.Event) -> int:
    """Log in with a wrong password ``count`` times, 50 at a time; the refusals counted."""
    handshake = struct.pack(">hhih", 17, 1, 1, 1) + b"x" + struct.pack(">h", 5) + b"PLAIN"
    token = b"\x00alice\x00Wrong-Password-7"
    authenticate = struct.pack(">hhih", 36, 1, 2, 1) + b"x" + struct.pack(">i", len(token)) + token

    def one() -> bool:
        with socket.create_connection(("127.0.0.1", port), 10) as sock:
            sock.settimeout(10)
            for body in (handshake, authenticate):
                sock.sendall(struct.pack(">i", len(body)) + body)
            answers = b""
            while chunk := sock.recv(4096):
                answers += chunk
            # the second answer: SaslAuthenticate with SASL_AUTHENTICATION_FAILED (58)
            return struct.pack(">h", 58) in answers

    refused = 0
    with ThreadPoolExecutor(50) as pool:
        for ok in pool.map(lambda _: one() if not stop.is_set() else False, range(count)):
            refused += ok
    return refused


@HEAVY  # a thousand connections: kept off the machine while latency is measured
def test_a_thousand_failed_logins_do_not_hold_up_an_authenticated_client(
    secured: Broker, certs: Certificates, topic_name
) -> None:
    topic = topic_name()
    config = librdkafka_config(secured, "SASL_PLAINTEXT", "SCRAM-SHA-256", certs)
    producer = Producer(config)
    producer.produce(topic, b"warm-up", partition=0)
    assert producer.flush(20) == 0
    stop = threading.Event()
    with ThreadPoolExecutor(1) as flood:
        refusals = flood.submit(failed_logins, secured.listener_ports["SASL_PLAINTEXT"], 1000, stop)
        acknowledged = 0
        slowest = 0.0
        while not refusals.done():
            started = time.monotonic()
            producer.produce(topic, b"during", partition=0)
            assert producer.flush(10) == 0
            slowest = max(slowest, time.monotonic() - started)
            acknowledged += 1
        stop.set()
        assert refusals.result() == 1000  # each refused, with Kafka's error
    # served all along: each produce acknowledged, none waiting behind the failed logins
    assert acknowledged > 10
    assert slowest < 5.0, slowest


README_SECTION = "Security: TLS, SASL and who may do what"


def test_the_readme_example(broker_factory, certs: Certificates) -> None:
    (properties,) = readme_examples(README_SECTION, language="properties")
    (commands,) = readme_examples(README_SECTION)
    settings = dict(line.split("=", 1) for line in properties.splitlines() if line.strip())
    assert settings.pop("ssl.keystore.location") == "broker.pem"
    settings["ssl.keystore.location"] = str(certs.broker)
    settings["listeners"] = settings["listeners"].replace(":9092", ":0").replace(":9093", ":0")
    broker = broker_factory(settings=settings)
    serve, kcat = commands.split("\n", 1)
    assert serve == "wirekafka serve --config secure.properties &"
    kcat = kcat.replace("localhost:9093", broker.listener_bootstrap("SASL_SSL"))
    listed = subprocess.run(
        ["bash", "-c", kcat.replace("ca.pem", str(certs.ca))],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "1 brokers:" in listed.stdout, listed.stdout + listed.stderr
    refused = subprocess.run(
        ["bash", "-c", kcat.replace("ca.pem", str(certs.ca)).replace("alice-secret", "wrong")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0


def test_a_token_over_the_limit_before_login_closes_the_connection(secured: Broker) -> None:
    with socket.create_connection(
        ("127.0.0.1", secured.listener_ports["SASL_PLAINTEXT"]), 5
    ) as sock:
        sock.settimeout(10)
        sock.sendall(struct.pack(">i", 1 << 20) + b"\x00" * 1000)  # a 1 MiB frame announced
        assert sock.recv(4096) == b""  # closed before its body is read
    # the limit before login: sasl.server.max.receive.size, within 64 KiB
    assert "frame of 1048576 bytes exceeds the limit of 65536 bytes" in secured.output()


def test_inline_and_encrypted_keys(broker_factory, certs: Certificates, tmp_path: Path) -> None:
    """The key store given inline (ssl.keystore.key and ssl.keystore.certificate.chain),
    and as a file whose private key is encrypted (ssl.key.password)."""
    from cryptography.hazmat.primitives import serialization

    pem = certs.broker.read_bytes()
    key_end = pem.index(b"-----END PRIVATE KEY-----") + len(b"-----END PRIVATE KEY-----\n")
    key_pem, chain_pem = pem[:key_end], pem[key_end:]
    key = serialization.load_pem_private_key(key_pem, password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"key-secret"),
    )
    (tmp_path / "encrypted.pem").write_bytes(encrypted + chain_pem)
    brokers = [
        broker_factory(
            settings={
                "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "ssl.keystore.key": key_pem.decode(),
                "ssl.keystore.certificate.chain": chain_pem.decode(),
            }
        ),
        broker_factory(
            settings={
                "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "ssl.keystore.location": str(tmp_path / "encrypted.pem"),
                "ssl.key.password": "key-secret",
            }
        ),
    ]
    for broker in brokers:
        admin = AdminClient(librdkafka_config(broker, "SSL", None, certs))
        assert len(admin.list_topics(timeout=20).brokers) == 1
        assert "key-secret" not in broker.output() and "PRIVATE KEY" not in broker.output()


def test_ssl_enabled_protocols_limit_the_tls_versions(broker_factory, certs: Certificates) -> None:
    broker = broker_factory(
        settings={
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            **certs.broker_settings("SSL"),
            "ssl.enabled.protocols": "TLSv1.2",
        }
    )
    address = ("127.0.0.1", broker.listener_ports["SSL"])
    context = ssl.create_default_context(cafile=str(certs.ca))
    with (
        socket.create_connection(address, 5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        assert tls.version() == "TLSv1.2"
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    with (
        socket.create_connection(address, 5) as raw,
        pytest.raises(ssl.SSLError),
        context.wrap_socket(raw, server_hostname="localhost"),
    ):
        pass
    admin = AdminClient(librdkafka_config(broker, "SSL", None, certs))
    assert len(admin.list_topics(timeout=20).brokers) == 1


def test_ssl_cipher_suites_take_kafkas_names(broker_factory, certs: Certificates) -> None:
    """The IANA names Java users give: TLS 1.2 suites only leave TLS 1.3 out."""
    broker = broker_factory(
        settings={
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            **certs.broker_settings("SSL"),
            "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        }
    )
    context = ssl.create_default_context(cafile=str(certs.ca))
    address = ("127.0.0.1", broker.listener_ports["SSL"])
    with (
        socket.create_connection(address, 5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        assert tls.version() == "TLSv1.2"
        assert tls.cipher()[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
    context.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with (
        socket.create_connection(address, 5) as raw,
        pytest.raises(ssl.SSLError),
        context.wrap_socket(raw, server_hostname="localhost"),
    ):
        pass
