"""The broker's /metrics and /health (``metrics.listener``) and its JSON log lines,
against a broker subprocess and confluent-kafka clients."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import confluent_kafka
from prometheus_client.parser import text_string_to_metric_families

from interop_tests.broker import LISTENING, PYTHONPATH, Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.polling import wait_for
from interop_tests.protocol_client import ProtocolClient, fetch_request
from interop_tests.readme import readme_examples
from wirekafka.protocol.api_table import ApiKey
from wirekafka.server.metrics_http import HEAD_TIMEOUT_S

METRICS_SETTINGS = {"metrics.listener": "http://127.0.0.1:0", "num.partitions": "1"}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(broker: Broker) -> Samples:
    assert broker.metrics_url is not None, "the startup line names no metrics address"
    with urllib.request.urlopen(broker.metrics_url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 when it is absent (a counter not yet counted)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def produce(broker: Broker, topic: str, values: list[bytes]) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "acks": 1, "linger.ms": 50}
    )
    failures: list[object] = []
    for payload in values:
        producer.produce(
            topic, payload, on_delivery=lambda err, _msg: failures.append(err) if err else None
        )
    assert producer.flush(30) == 0
    assert not failures, failures


def stored_batch_bytes(broker: Broker, topic: str, partition: int = 0) -> int:
    """The bytes of the record batches in the partition's segment files, walked by
    their headers (the active segment goes on in preallocated zeros)."""
    stored = 0
    for segment in sorted((broker.data_dir / f"{topic}-{partition}").glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + 12 <= len(data):
            length = int.from_bytes(data[position + 8 : position + 12], "big")
            if length == 0:
                break
            stored += 12 + length
            position += 12 + length
    return stored


def http(broker: Broker, raw: bytes) -> bytes:
    """Send ``raw`` to the metrics port and read the answer to its end."""
    with socket.create_connection(metrics_address(broker), timeout=10) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def metrics_address(broker: Broker) -> tuple[str, int]:
    assert broker.metrics_url is not None
    match = re.fullmatch(r"http://([^:/]+):(\d+)/metrics", broker.metrics_url)
    assert match is not None, broker.metrics_url
    return match[1], int(match[2])


def test_produce_moves_the_topic_counters_and_the_log_figures(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=METRICS_SETTINGS)
    topic = topic_name("in")
    before = scrape(broker)
    records = [b"%03d" % i + b"v" * 97 for i in range(25)]  # 25 records of 100 bytes
    produce(broker, topic, records)
    after = scrape(broker)

    stored = stored_batch_bytes(broker, topic)
    assert stored > 25 * 100
    messages = "kafka_server_brokertopicmetrics_messagesin_total"
    bytes_in = "kafka_server_brokertopicmetrics_bytesin_total"
    assert value(after, messages, topic=topic) == 25
    assert value(after, messages) - value(before, messages) == 25
    # Kafka counts the request's record bytes; for record batches those are the bytes stored
    assert value(after, bytes_in, topic=topic) == stored
    assert value(after, bytes_in) - value(before, bytes_in) == stored
    produces = total(after, "kafka_network_requestmetrics_requests_total", request="Produce")
    assert produces - total(before, "kafka_network_requestmetrics_requests_total",
                            request="Produce") >= 1  # fmt: skip
    assert value(after, "wirekafka_request_seconds_count", request="Produce") == produces
    partition = {"topic": topic, "partition": "0"}
    assert value(after, "kafka_log_log_size", **partition) == stored
    assert value(after, "kafka_log_log_logendoffset", **partition) == 25
    assert value(after, "kafka_log_log_logstartoffset", **partition) == 0

    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": topic, "enable.auto.commit": False}
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        got = 0
        deadline = time.monotonic() + 30
        while got < 25 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got += 1
        assert got == 25
    finally:
        consumer.close()
    read = scrape(broker)
    # every batch went out once to the consumer: record bytes as stored
    assert value(read, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic) == stored
    assert total(read, "kafka_network_requestmetrics_requests_total", request="Fetch") >= 1


def test_group_lag_is_the_high_watermark_minus_the_committed_offset(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(settings=METRICS_SETTINGS)
    topic, group = topic_name("lagging"), topic_name("group")
    produce(broker, topic, [b"x" * 10] * 40)
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, 12)], asynchronous=False)
    finally:
        consumer.close()
    samples = scrape(broker)
    labels = {"consumergroup": group, "topic": topic, "partition": "0"}
    assert value(samples, "kafka_consumergroup_current_offset", **labels) == 12
    assert value(samples, "kafka_consumergroup_lag", **labels) == 40 - 12
    numgroups = "kafka_coordinator_group_groupmetadatamanager_numgroups"
    assert value(samples, numgroups, state="Empty") >= 1  # the group has no members
    assert {dict(ls)["state"] for n, ls in samples if n == numgroups} == {
        "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
    }  # fmt: skip
    assert value(samples, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(samples, "kafka_server_replicamanager_underminisrpartitioncount") == 0


def test_connections_are_counted(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(settings=METRICS_SETTINGS)
    count = "kafka_server_socketservermetrics_connection_count"
    assert value(scrape(broker), count) == 0
    clients = [socket.create_connection(broker.address, timeout=10) for _ in range(3)]
    try:
        wait_for(lambda: value(scrape(broker), count) == 3, "3 connections counted")
    finally:
        for client in clients:
            client.close()
    wait_for(lambda: value(scrape(broker), count) == 0, "the connections gone from the count")
    purgatory = "kafka_server_delayedoperationpurgatory_purgatorysize"
    assert value(scrape(broker), purgatory, delayedOperation="Fetch") == 0


def test_health_other_paths_and_bad_requests(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(settings=METRICS_SETTINGS)
    assert broker.metrics_url is not None
    base = broker.metrics_url.removesuffix("/metrics")
    with urllib.request.urlopen(base + "/health", timeout=10) as response:
        assert (response.status, response.read()) == (200, b"ok\n")
    for path in ("/", "/metricsx", "/health/more"):
        try:
            urllib.request.urlopen(base + path, timeout=10)
        except urllib.error.HTTPError as error:
            assert error.code == 404, path
        else:
            raise AssertionError(f"{path} was answered")
    assert http(broker, b"garbage\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert http(broker, b"POST /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405 ")
    assert http(broker, b"GET /health HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n").startswith(
        b"HTTP/1.1 431 "
    )
    # after all that, it still serves
    with urllib.request.urlopen(base + "/health", timeout=10) as response:
        assert response.status == 200


def test_a_client_that_dribbles_its_request_is_dropped(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(settings=METRICS_SETTINGS)
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"s" * 200 + b"\r\n\r\n"
    with socket.create_connection(metrics_address(broker), timeout=10) as sock:
        started = time.monotonic()
        received = b""
        for byte in request:  # a byte every 50 ms: the whole head would take 12 s
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            sock.settimeout(0.05)
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
            received += chunk
            if not chunk:
                break
        else:
            raise AssertionError("the whole dribbled request was taken")
        dropped_after = time.monotonic() - started
    assert received == b""  # dropped without an answer
    assert HEAD_TIMEOUT_S - 0.5 <= dropped_after <= HEAD_TIMEOUT_S + 3
    with urllib.request.urlopen(broker.metrics_url or "", timeout=10) as response:
        assert response.status == 200


def test_the_readme_example(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    serve, scrape_example = readme_examples("Metrics")
    assert serve.startswith("wirekafka serve ") and serve.rstrip().endswith("&")
    overrides = dict(re.findall(r"--override (\S+?)=(\S+)", serve))
    assert overrides == {"metrics.listener": "http://127.0.0.1:9404"}
    # the example's broker, on a free port for the metrics
    broker = broker_factory(settings={"metrics.listener": "http://127.0.0.1:0"})
    host, port = metrics_address(broker)
    topic = topic_name("readme")
    produce(broker, topic, [b"r"] * 7)
    assert "localhost:9404" in scrape_example
    result = subprocess.run(
        ["bash", "-c", scrape_example.replace("localhost:9404", f"{host}:{port}")],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}} 7.0' in lines
    assert "kafka_server_brokertopicmetrics_messagesin_total 7.0" in lines
    assert lines[-1] == "ok"


def test_json_log_lines(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "wirekafka", "serve", "--log-format", "json",
        "--override", "listeners=PLAINTEXT://127.0.0.1:0",
        "--override", f"log.dirs={tmp_path / 'data'}",
        "--override", "metrics.listener=http://127.0.0.1:0",
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert LISTENING.search(line), line
        assert re.search(r", metrics on http://127\.0\.0\.1:\d+/metrics, data in ", line), line
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr.decode()
    entries = [json.loads(text) for text in stderr.decode().splitlines()]
    assert entries
    for entry in entries:
        assert set(entry) >= {"time", "level", "logger", "message"}, entry
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", entry["time"])
    assert {
        "logger": "wirekafka.server",
        "level": "INFO",
        "message": "stopped cleanly",
    }.items() <= (entries[-1].items())


def test_waiting_fetches_are_counted_until_answered(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    """Two long polls on an empty partition wait (the purgatory gauge shows them), and a
    record produced answers them (the gauge back to 0)."""
    broker = broker_factory(settings=METRICS_SETTINGS)
    topic = topic_name("waiting")
    produce(broker, topic, [b"first"])
    purgatory = "kafka_server_delayedoperationpurgatory_purgatorysize"
    pollers = [ProtocolClient(*broker.address, timeout_s=60) for _ in range(2)]
    try:
        # from the log end: nothing to answer with yet
        sent = [
            poller.send(ApiKey.FETCH, 11, fetch_request(topic, 1, max_wait_ms=30_000))
            for poller in pollers
        ]
        wait_for(
            lambda: value(scrape(broker), purgatory, delayedOperation="Fetch") == 2,
            "two fetches counted as waiting",
        )
        produce(broker, topic, [b"second"])
        for poller, correlation_id in zip(pollers, sent, strict=True):
            response = poller.receive(ApiKey.FETCH, 11, correlation_id)
            assert response.responses[0].partitions[0].high_watermark == 2
        wait_for(
            lambda: value(scrape(broker), purgatory, delayedOperation="Fetch") == 0,
            "no fetch waiting once answered",
        )
    finally:
        for poller in pollers:
            poller.close()
