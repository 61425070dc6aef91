"""Benchmark limit: a plain socket→file loop in Python that librdkafka's producer
can load, the floor under wirekafka's Produce.

It answers ApiVersions (with wirekafka's versions, so that a client picks the
same ones: librdkafka writes record batches only to a broker with Fetch v4 and
up), Metadata (this one broker, one topic, every partition led here) and
Produce requests of one topic and one partition each, v3 and up (what
``rdkafka_performance`` sends), on trio, as wirekafka does; any other request
closes the connection. A produce's batch has its base offset patched in place
and is written to its partition's file, then answered. It reads the socket
into the decoder's buffer as wirekafka does; the requests read in one go are
answered with one send, and those to one partition in a row written with one
``pwritev``; a file grows ahead of its writes in ``posix_fallocate`` steps, as
wirekafka's active segment does. Nothing else: no CRC, no look at the
records, no index, no log state but each partition's next offset and file
position. So what a run costs here is what reading the requests, writing their
batches and answering cost a Python process at the least; what wirekafka
spends above it is its own work (``bench_peers`` runs it as the peer
``socket→file`` of the producer rows).

``--loop epoll`` serves the same answers from a bare ``select.epoll`` loop
instead of trio (``bench_peers --epoll-floor``, the peer ``socket→file epoll``):
what the same work costs a Python process without trio's scheduling, so the two
peers together tell trio's share of the limit from the work's.

    python -m tools.produce_floor [--loop epoll] TOPIC:PARTITIONS DIRECTORY   # prints host:port
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import sys
from pathlib import Path

import trio

from wirekafka.handlers.api_versions import api_versions_response
from wirekafka.protocol.api_table import ApiKey, api_for
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.framing import FrameDecoder, encode_frame
from wirekafka.protocol.headers import peek_request_prefix
from wirekafka.protocol.messages.api_versions import ApiVersionsResponse
from wirekafka.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from wirekafka.protocol.messages.produce import PartitionProduceResponse
from wirekafka.protocol.produce_response import answer_parts
from wirekafka.protocol.records.record_batch import set_base_offset, single_batch_summary
from wirekafka.protocol.rpc import decode_request, encode_response
from wirekafka.protocol.simple_produce import SimpleProduce, read_simple_produce
from wirekafka.storage.files import LOG_SUFFIX, segment_path
from wirekafka.storage.segment import PREALLOCATE_STEP_BYTES

NODE_ID = 0
RECEIVE_BYTES = 256 * 1024


def partition_file(directory: Path, topic: str, index: int) -> Path:
    """The file a partition's batches go to, named as a log's first segment."""
    return segment_path(directory / f"{topic}-{index}", 0, LOG_SUFFIX)


class PartitionFile:
    """One partition: its file, where the next batch goes and the next offset."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.position = 0
        self.allocated = 0
        self.next_offset = 0

    def write(self, batches: list[memoryview]) -> None:
        """Write ``batches`` (their offsets patched already) after what is written."""
        size = sum(batch.nbytes for batch in batches)
        end = self.position + size
        if end > self.allocated:
            os.posix_fallocate(
                self.fd, self.allocated, end + PREALLOCATE_STEP_BYTES - self.allocated
            )
            self.allocated = end + PREALLOCATE_STEP_BYTES
        written = (
            os.pwrite(self.fd, batches[0], self.position)
            if len(batches) == 1
            else os.pwritev(self.fd, batches, self.position)
        )
        if written != size:
            raise OSError(f"short write of {written} of {size} bytes")
        self.position = end

    def close(self) -> None:
        os.close(self.fd)


class Floor:
    """The answers to the requests of a connection, as they are read (sans sockets)."""

    def __init__(self, topic: str, partitions: int, directory: Path, host: str, port: int) -> None:
        self.topic, self.host, self.port = topic, host, port
        self.partitions = []
        for index in range(partitions):
            path = partition_file(directory, topic, index)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.partitions.append(PartitionFile(path))

    def close(self) -> None:
        for partition in self.partitions:
            partition.close()

    def answer(self, frames: list[bytearray]) -> list[bytes | bytearray]:
        """The responses to ``frames`` (request bodies, in the order read), each with its
        size prefix; the produces among them written first. Raises ProtocolError on
        a request this floor does not answer."""
        answers: list[bytes | bytearray] = []
        produced: list[tuple[SimpleProduce, PartitionProduceResponse]] = []
        run: list[memoryview] = []  # batches of one partition in a row, to write together
        run_file: PartitionFile | None = None
        for frame in frames:
            api_key, version, correlation_id = peek_request_prefix(frame)
            if api_key != ApiKey.PRODUCE:
                answers.append(self._control(frame, api_key, version, correlation_id))
                continue
            request = read_simple_produce(frame)
            if request is None:
                raise ProtocolError("a produce of one topic and one partition is answered only")
            target = self._partition(request)
            if target is None:
                answer = PartitionProduceResponse(
                    index=request.partition,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    base_offset=-1,
                )
            else:
                records = request.records
                summary = single_batch_summary(records)  # as wirekafka's append reads it
                if summary is None:
                    raise ProtocolError(f"{records.nbytes} bytes are no record batch")
                base_offset = target.next_offset
                set_base_offset(records, 0, base_offset)
                target.next_offset = base_offset + summary[0] + 1  # its last offset delta
                if target is not run_file:
                    if run_file is not None:
                        run_file.write(run)
                    run, run_file = [], target
                run.append(records)
                answer = PartitionProduceResponse(
                    index=request.partition,
                    error_code=ErrorCode.NONE,
                    base_offset=base_offset,
                    log_append_time_ms=-1,
                    log_start_offset=0,
                )
            if request.acks != 0:
                produced.append((request, answer))
                answers.append(b"")  # its place, filled once the batches are written
        if run_file is not None:
            run_file.write(run)
        filled = iter(produced)
        return [answer if answer else b"".join(answer_parts(*next(filled))) for answer in answers]

    def _partition(self, request: SimpleProduce) -> PartitionFile | None:
        if request.topic != self.topic or not 0 <= request.partition < len(self.partitions):
            return None
        return self.partitions[request.partition]

    def _control(self, frame: bytearray, api_key: int, version: int, correlation_id: int) -> bytes:
        """The size-prefixed response to an ApiVersions or Metadata request."""
        body: ApiVersionsResponse | MetadataResponse
        if api_key == ApiKey.API_VERSIONS:
            served = api_for(api_key)
            if served is None or not served.supports(version):
                # as wirekafka answers a version it does not serve: at v0, the error
                body = api_versions_response(ErrorCode.UNSUPPORTED_VERSION)
                version = 0
            else:
                body = api_versions_response()
        elif api_key == ApiKey.METADATA:
            decode_request(frame)  # refuses a version the codec has not
            body = self._metadata()
        else:
            raise ProtocolError(f"api key {api_key} is not answered here")
        return encode_frame(encode_response(api_key, version, correlation_id, body))

    def _metadata(self) -> MetadataResponse:
        partitions = [
            MetadataResponsePartition(
                error_code=ErrorCode.NONE,
                partition_index=index,
                leader_id=NODE_ID,
                replica_nodes=[NODE_ID],
                isr_nodes=[NODE_ID],
                offline_replicas=[],
            )
            for index in range(len(self.partitions))
        ]
        return MetadataResponse(
            throttle_time_ms=0,
            brokers=[MetadataResponseBroker(node_id=NODE_ID, host=self.host, port=self.port)],
            cluster_id="socket-file",
            controller_id=NODE_ID,
            topics=[
                MetadataResponseTopic(
                    error_code=ErrorCode.NONE,
                    name=self.topic,
                    is_internal=False,
                    partitions=partitions,
                )
            ],
        )


def answer_read(floor: Floor, decoder: FrameDecoder, received: int) -> bytes | None:
    """The answers to every whole request in ``decoder`` once ``received`` more
    bytes are in it, joined for one send (empty: none whole yet); None on a
    request not answered here, named on stderr: its connection is closed."""
    try:
        decoder.filled(received)
        frames = []
        while (frame := decoder.next_frame()) is not None:
            frames.append(frame)
        return b"".join(floor.answer(frames)) if frames else b""
    except ProtocolError as exc:
        print(f"closing a connection: {exc}", file=sys.stderr, flush=True)
        return None


async def serve_connection(floor: Floor, stream: trio.SocketStream) -> None:
    """Read what the socket holds into the decoder's buffer (as wirekafka reads), and
    answer every whole request in it with one send; a request not answered here
    closes the connection, named on stderr."""
    decoder = FrameDecoder()
    sock = stream.socket
    fd = sock.fileno()
    async with stream:
        while True:
            try:
                received = os.readv(fd, (decoder.fill_view(RECEIVE_BYTES),))
            except BlockingIOError:
                await trio.lowlevel.wait_readable(sock)
                continue
            if not received:
                return
            answers = answer_read(floor, decoder, received)
            if answers is None:
                return
            if answers:
                await stream.send_all(answers)


async def main(topic: str, partitions: int, directory: Path) -> None:
    [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
    host, port = listener.socket.getsockname()[:2]
    floor = Floor(topic, partitions, directory, host, port)
    print(f"{host}:{port}", flush=True)
    try:
        async with trio.open_nursery() as nursery:
            while True:
                nursery.start_soon(serve_connection, floor, await listener.accept())
    finally:
        floor.close()


class EpollConnection:
    """One connection of the epoll loop: its socket (blocking: a read follows a
    readiness event, and a send waits for room while nothing else can run) and
    the decoder its bytes are read into."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socket = sock
        self.decoder = FrameDecoder()

    def serve_ready(self, floor: Floor) -> bool:
        """Read what the socket holds and answer every whole request in it with
        one send, as :func:`serve_connection` does; False once the connection
        ends (closed or reset by the peer, or on a request not answered here)."""
        decoder = self.decoder
        try:
            received = os.readv(self.socket.fileno(), (decoder.fill_view(RECEIVE_BYTES),))
        except ConnectionError:
            return False
        answers = answer_read(floor, decoder, received) if received else None
        if answers is None:
            return False
        if answers:
            try:
                self.socket.sendall(answers)
            except ConnectionError:
                return False
        return True


def main_epoll(topic: str, partitions: int, directory: Path) -> None:
    """The same floor on a bare ``select.epoll`` loop: no trio between a
    readiness event and the read it announces."""
    with socket.create_server(("127.0.0.1", 0)) as listener, select.epoll() as poller:
        host, port = listener.getsockname()[:2]
        floor = Floor(topic, partitions, directory, host, port)
        print(f"{host}:{port}", flush=True)
        poller.register(listener.fileno(), select.EPOLLIN)
        connections: dict[int, EpollConnection] = {}
        try:
            while True:
                for fd, _ in poller.poll():
                    if fd == listener.fileno():
                        accepted = EpollConnection(listener.accept()[0])
                        connections[accepted.socket.fileno()] = accepted
                        poller.register(accepted.socket.fileno(), select.EPOLLIN)
                    elif not connections[fd].serve_ready(floor):
                        poller.unregister(fd)
                        connections.pop(fd).socket.close()
        finally:
            for connection in connections.values():
                connection.socket.close()
            floor.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(usage=__doc__.rsplit("\n\n", 1)[-1].strip())
    parser.add_argument("--loop", choices=("trio", "epoll"), default="trio")
    parser.add_argument("partitions", metavar="TOPIC:PARTITIONS")
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    name, _, count = args.partitions.rpartition(":")
    if not name or not count.isdigit():
        parser.error(f"{args.partitions!r} is not TOPIC:PARTITIONS")
    if args.loop == "epoll":
        main_epoll(name, int(count), args.directory)
    else:
        trio.run(main, name, int(count), args.directory)
