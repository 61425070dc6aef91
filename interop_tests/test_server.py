"""The server and the command line, seen from outside: config errors, the
config file, idle and oversized connections, pipelining, clean shutdown, a
checkpoint write that fails."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from interop_tests.conftest import BrokerFactory
from interop_tests.polling import wait_for, wait_until_read
from interop_tests.protocol_client import ProtocolClient
from interop_tests.reading import IDLE_TIMEOUT_MS, read_to_end
from wirekafka.protocol import rpc
from wirekafka.protocol.api_table import ApiKey
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import RequestHeader
from wirekafka.protocol.messages.api_versions import ApiVersionsRequest
from wirekafka.protocol.messages.describe_groups import DescribeGroupsRequest
from wirekafka.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from wirekafka.protocol.messages.find_coordinator import FindCoordinatorRequest
from wirekafka.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from wirekafka.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from wirekafka.protocol.records.record import Record
from wirekafka.protocol.records.record_batch import encode_batch

LISTENING = re.compile(r"listening on PLAINTEXT://(?P<host>[^:]+):(?P<port>\d+)")
TIMEOUT_S = 30.0


def _serve(*args: str) -> list[str]:
    return [sys.executable, "-m", "wirekafka", "serve", *args]


def _fails_naming(tmp_path: Path, override: str, key: str) -> None:
    result = subprocess.run(
        _serve("--override", f"log.dirs={tmp_path / 'data'}", "--override", override),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 2, result.stderr
    assert key in result.stderr
    assert "listening" not in result.stdout
    assert not (tmp_path / "data").exists(), "nothing may be written before the config is good"


def test_an_unknown_key_stops_startup_naming_it(tmp_path: Path) -> None:
    _fails_naming(tmp_path, "log.retention.hourz=5", "log.retention.hourz")


def test_a_bad_value_stops_startup_naming_the_key(tmp_path: Path) -> None:
    _fails_naming(tmp_path, "num.partitions=three", "num.partitions")
    _fails_naming(tmp_path, "listeners=OTHER://127.0.0.1:9093", "listeners")
    _fails_naming(tmp_path, "log.segment.bytes=-1", "log.segment.bytes")


def test_a_tls_listener_without_a_key_store_stops_startup_naming_the_key(tmp_path: Path) -> None:
    _fails_naming(tmp_path, "listeners=SSL://127.0.0.1:9093", "ssl.keystore.location")


def test_config_file_with_overrides_and_a_clean_shutdown(tmp_path: Path) -> None:
    data = tmp_path / "data"
    properties = tmp_path / "server.properties"
    properties.write_text(
        "# a server.properties of Kafka's keys\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={data}\n"
        "num.partitions: 2\n"
    )
    process = subprocess.Popen(
        _serve("--config", str(properties), "--override", "num.partitions=5"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = LISTENING.search(line)
        assert match, line
        assert str(data) in line
        with ProtocolClient(match["host"], int(match["port"]), timeout_s=TIMEOUT_S) as client:
            response = client.request(
                ApiKey.METADATA, 4, MetadataRequest(topics=[MetadataRequestTopic(name="from-file")])
            )
        (topic,) = response.topics
        assert len(topic.partitions) == 5  # the override wins over the file's 2
        process.send_signal(signal.SIGINT)
        assert process.wait(TIMEOUT_S) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (data / ".kafka_cleanshutdown").exists()
    checkpoint = (data / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert checkpoint[:2] == ["0", "5"]  # version, then one line per partition
    assert "cluster.id=" in (data / "meta.properties").read_text()


def steady_batch() -> bytes:
    return encode_batch([Record(0, time.time_ns() // 1_000_000, b"k", b"v")])


def _recv_all(sock: socket.socket, timeout_s: float) -> bytes:
    """Everything until EOF; fails if the peer keeps the connection open."""
    sock.settimeout(timeout_s)
    chunks = []
    while data := sock.recv(65536):
        chunks.append(data)
    return b"".join(chunks)


def test_idle_connections_are_closed(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(settings={"connections.max.idle.ms": "400"})
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as idle:
        started = time.monotonic()
        assert _recv_all(idle, TIMEOUT_S) == b""
        assert time.monotonic() - started > 0.3  # not before its idle time
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as busy:
        for _ in range(8):  # a request every 0.15 s keeps it open past the idle time
            busy.api_versions()
            time.sleep(0.15)


def test_a_frame_above_the_limit_is_refused_before_its_body(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(settings={"socket.request.max.bytes": "1000"})
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", 1001))  # the size alone, no body
        assert _recv_all(sock, 10) == b""
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        assert ApiKey.PRODUCE in client.api_versions()  # a request within the limit is fine


def test_pipelined_requests_are_answered_in_order(broker_factory: BrokerFactory) -> None:
    broker = broker_factory()
    calls = [
        (ApiKey.METADATA, 1, MetadataRequest(topics=None)),
        (
            ApiKey.API_VERSIONS,
            3,
            ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        ),
        (ApiKey.METADATA, 12, MetadataRequest(topics=[MetadataRequestTopic(name="piped")])),
        (ApiKey.API_VERSIONS, 0, ApiVersionsRequest()),
    ]
    frames = b"".join(
        encode_frame(rpc.encode_request(RequestHeader(key, version, 100 + i, "piper"), body))
        for i, (key, version, body) in enumerate(calls)
    )
    decoder = FrameDecoder()
    answers = []
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        sock.sendall(frames)  # all at once: the broker reads them together
        while len(answers) < len(calls):
            data = sock.recv(65536)
            assert data, "the broker closed the connection"
            decoder.receive_data(data)
            while (frame := decoder.next_frame()) is not None:
                key, version, _ = calls[len(answers)]
                answers.append(rpc.decode_response(key, version, frame))
    assert [header.correlation_id for header, _ in answers] == [100, 101, 102, 103]
    assert answers[2][1].topics[0].name == "piped"


def _long_poll(topic: str, correlation_id: int) -> bytes:
    """A Fetch frame of ``topic``'s partition 0 from offset 0 that waits ten minutes."""
    fetch = FetchRequest(
        max_wait_ms=600_000,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )
    header = RequestHeader(ApiKey.FETCH, 11, correlation_id, "long-poller")
    return encode_frame(rpc.encode_request(header, fetch))


def _next_response(sock: socket.socket, decoder: FrameDecoder) -> bytearray:
    while (frame := decoder.next_frame()) is None:
        data = sock.recv(65536)
        assert data, "the broker closed the connection"
        decoder.receive_data(data)
    return frame


def test_an_answer_is_not_held_back_behind_a_long_poll_sent_after_it(
    broker_factory: BrokerFactory,
) -> None:
    """Requests sent together are answered together, but not by waiting for the
    slowest: ApiVersions, then a Fetch that parks until a record arrives, in one
    write. The ApiVersions answer comes while the Fetch still waits; the Fetch is
    answered once another connection produces."""
    broker = broker_factory()
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as producer:
        producer.request(
            ApiKey.METADATA, 4, MetadataRequest(topics=[MetadataRequestTopic(name="held")])
        )
        versions = rpc.encode_request(
            RequestHeader(ApiKey.API_VERSIONS, 0, 1, "t"), ApiVersionsRequest()
        )
        decoder = FrameDecoder()
        with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
            sock.sendall(encode_frame(versions) + _long_poll("held", 2))
            header, _ = rpc.decode_response(ApiKey.API_VERSIONS, 0, _next_response(sock, decoder))
            assert header.correlation_id == 1
            sock.setblocking(False)
            try:
                early = sock.recv(65536)
            except BlockingIOError:
                early = b""
            assert early == b"", "the long poll was answered before anything was produced"
            sock.setblocking(True)
            assert producer.produce("held", steady_batch())[0] == 0
            header, fetched = rpc.decode_response(ApiKey.FETCH, 11, _next_response(sock, decoder))
    assert header.correlation_id == 2
    assert fetched.responses[0].partitions[0].high_watermark == 1


def test_a_client_that_does_not_read_its_answers_stops_being_read(
    broker_factory: BrokerFactory,
) -> None:
    """A client pipelines thousands of requests and reads nothing: the
    broker stops reading it once the answers back up (what it holds for a client
    is bounded), serves other clients meanwhile, and once the client reads,
    every answer arrives, in order."""
    broker = broker_factory()
    # 20,000 answers of ~400 bytes fill the broker's send buffer (at most 4 MiB
    # here) twice over; 8 KiB of padding after each request's body (ignored, as
    # Kafka ignores it) make 160 MiB of requests, more than the broker's receive
    # buffer (at most 32 MiB) can hold for it.
    count = 20_000
    request = ApiVersionsRequest(client_software_name="slow", client_software_version="1")
    padding = bytes(8 * 1024)
    requests = b"".join(
        encode_frame(
            rpc.encode_request(RequestHeader(ApiKey.API_VERSIONS, 3, i, "slow"), request) + padding
        )
        for i in range(count)
    )
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.settimeout(TIMEOUT_S)
        sock.connect(broker.address)
        sock.setblocking(False)
        unsent = memoryview(requests)
        stalled_since = None
        while unsent:  # until the broker has stopped reading for a second
            try:
                unsent = unsent[sock.send(unsent) :]
                stalled_since = None
            except BlockingIOError:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 1.0:
                    break
                time.sleep(0.01)
        assert unsent, "the broker read every request while none of its answers was read"
        with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as other:
            other.request(ApiKey.METADATA, 1, MetadataRequest(topics=None))
        decoder = FrameDecoder()
        answered = 0
        deadline = time.monotonic() + TIMEOUT_S
        while answered < count:
            assert time.monotonic() < deadline, f"{answered} of {count} answers arrived"
            if unsent:
                with contextlib.suppress(BlockingIOError):
                    unsent = unsent[sock.send(unsent) :]
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            assert data, "the broker closed the connection"
            decoder.receive_data(data)
            while (frame := decoder.next_frame()) is not None:
                assert struct.unpack_from(">i", frame)[0] == answered  # the correlation id
                answered += 1


def test_a_group_member_is_described_with_the_host_its_connection_came_from(
    broker_factory: BrokerFactory,
) -> None:
    """Each request carries its connection's client host: members joining from two
    loopback addresses at once are each described with their own (as Kafka shows it)."""
    broker = broker_factory(settings={"group.initial.rebalance.delay.ms": "0"})
    members: list[ProtocolClient] = []
    try:
        for group, source in (("from-1", "127.0.0.1"), ("from-2", "127.0.0.2")):
            client = ProtocolClient(
                *broker.address, client_id=f"in-{group}", timeout_s=TIMEOUT_S, source_host=source
            )
            members.append(client)
            coordinator = client.request(
                ApiKey.FIND_COORDINATOR, 1, FindCoordinatorRequest(key=group, key_type=0)
            )
            assert coordinator.error_code == 0, coordinator
            joined = client.request(
                ApiKey.JOIN_GROUP,
                1,
                JoinGroupRequest(
                    group_id=group,
                    session_timeout_ms=30_000,
                    rebalance_timeout_ms=30_000,
                    member_id="",
                    protocol_type="consumer",
                    protocols=[JoinGroupRequestProtocol(name="range", metadata=b"m")],
                ),
            )
            assert joined.error_code == 0, joined
        with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as admin:
            described = admin.request(
                ApiKey.DESCRIBE_GROUPS, 0, DescribeGroupsRequest(groups=["from-1", "from-2"])
            )
    finally:
        for client in members:
            client.close()
    assert {g.group_id: [(m.client_id, m.client_host) for m in g.members]
            for g in described.groups} == {
        "from-1": [("in-from-1", "/127.0.0.1")],
        "from-2": [("in-from-2", "/127.0.0.2")],
    }  # fmt: skip


def test_shutdown_answers_a_long_poll_in_flight(broker_factory: BrokerFactory) -> None:
    """A Fetch parked for ten minutes is answered (empty) when the broker stops, and
    the broker exits cleanly within its stop timeout: it did not wait out the poll."""
    broker = broker_factory()
    with ProtocolClient(*broker.address, timeout_s=TIMEOUT_S) as client:
        client.request(
            ApiKey.METADATA, 4, MetadataRequest(topics=[MetadataRequestTopic(name="lp")])
        )
    with socket.create_connection(broker.address, timeout=TIMEOUT_S) as sock:
        sock.sendall(_long_poll("lp", 7))
        wait_until_read(sock, "the broker to read the fetch")  # then it parks
        broker.stop()  # SIGTERM; insists on exit code 0 within its stop timeout
        answer = _recv_all(sock, TIMEOUT_S)  # the response, then the close
    decoder = FrameDecoder()
    decoder.receive_data(answer)
    frame = decoder.next_frame()
    assert frame is not None, "the in-flight fetch got no answer"
    response_header, response = rpc.decode_response(ApiKey.FETCH, 11, frame)
    assert response_header.correlation_id == 7
    (topic,) = response.responses
    assert topic.partitions[0].error_code == 0
    assert topic.partitions[0].high_watermark == 0


def test_checkpoints_are_written_at_their_interval_not_every_maintenance_round(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(
        settings={
            "log.flush.offset.checkpoint.interval.ms": "1000",
            "log.flush.scheduler.interval.ms": "100",  # maintenance ten times as often
        }
    )
    checkpoint = broker.data_dir / "recovery-point-offset-checkpoint"
    versions = set()  # each write renames a new file into place
    deadline = time.monotonic() + 3.5
    while time.monotonic() < deadline:
        stat = checkpoint.stat()
        versions.add((stat.st_ino, stat.st_mtime_ns))
        time.sleep(0.02)
    # the one from startup, then one a second: 4 or 5; one a round would be ~30
    assert 2 <= len(versions) <= 6, f"{len(versions)} checkpoint writes in 3.5 s"


def test_a_failed_checkpoint_write_is_logged_and_tried_again(
    broker_factory: BrokerFactory,
) -> None:
    broker = broker_factory(
        settings={
            "log.flush.offset.checkpoint.interval.ms": "100",
            "log.flush.scheduler.interval.ms": "100",
            "num.partitions": "1",
        }
    )
    checkpoint = broker.data_dir / "recovery-point-offset-checkpoint"
    blocker = checkpoint.with_name(checkpoint.name + ".tmp")
    blocker.mkdir()  # the temp file cannot be created: every checkpoint write fails
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    for i in range(5):
        producer.send("blocked", value=b"before-%d" % i).get(timeout=TIMEOUT_S)
    wait_for(
        lambda: "writing the offset checkpoints failed" in broker.stderr_text(),
        "the broker to log the failed checkpoint",
    )
    for i in range(5):
        producer.send("blocked", value=b"after-%d" % i).get(timeout=TIMEOUT_S)
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, consumer_timeout_ms=IDLE_TIMEOUT_MS
    )
    consumer.assign([TopicPartition("blocked", 0)])
    consumer.seek_to_beginning()
    values = [record.value for record in read_to_end(consumer)]
    consumer.close()
    assert values == [b"before-%d" % i for i in range(5)] + [b"after-%d" % i for i in range(5)]
    broker.assert_running()

    blocker.rmdir()  # the next round writes it
    wait_for(lambda: "blocked 0 " in checkpoint.read_text(), "the checkpoint to name the partition")
    broker.stop()
    assert (broker.data_dir / ".kafka_cleanshutdown").exists()
