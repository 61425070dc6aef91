"""One client connection: frames in, requests handled in order, responses out in order.

Pipelined requests wait in the socket's receive buffer and the frame decoder
until the one before them is answered; produce requests that follow one
another there are handled together (:func:`_pipelined_produces`: one write per
partition for all of them). Responses are held in the connection's
:class:`~wirekafka.server.sending.ResponseQueue`: the reader handles what the
socket holds (up to ``YIELD_AFTER_BYTES``), then sends them in one write
itself before it waits for more, or leaves them to the queue's task (before a
request that may wait, and what the socket does not take). A frame that is too big, a malformed
request, an unknown API or version (except ApiVersions, answered with
UNSUPPORTED_VERSION) close this connection alone, with a log line naming the
peer and the API.

What a connection buffers is bounded. Without a reservation it reads only
while it holds fewer than ``UNRESERVED_BYTES`` (whole small requests, the
start of the next frame): that is every request of most clients, and no other
connection can make it wait. A frame larger than that reserves its size from
the broker's memory pool (``queued.max.request.bytes``) once its size prefix
has arrived; the connection reads no more until it has the bytes, then reads
up to the frame's end, and gives them back when the request has been handled.
While it takes pipelined produce requests together, a connection whose last read
took all it asked for (the socket may hold more) reads on beyond its allowance,
up to ``GROUP_EXTRA_BYTES`` taken from the pool only if they are free at once
(:class:`GroupReads`), and gives them back when the group has been answered.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from time import perf_counter
from typing import Any, Protocol

import trio

from wirekafka.broker.context import BrokerContext, CloseConnection
from wirekafka.handlers.api_versions import api_versions_response
from wirekafka.handlers.produce import handle_produces
from wirekafka.handlers.registry import HANDLERS
from wirekafka.listener_security import ListenerSecurity
from wirekafka.protocol.api_table import API_TABLE, ApiKey, api_for
from wirekafka.protocol.errors import ErrorCode, ProtocolError
from wirekafka.protocol.framing import FrameDecoder, frame_prefix
from wirekafka.protocol.headers import peek_request_prefix
from wirekafka.protocol.produce_response import answer_parts
from wirekafka.protocol.rpc import Request, decode_request, encode_response_parts
from wirekafka.protocol.simple_produce import SimpleProduce, read_simple_produce
from wirekafka.security.principal import ANONYMOUS
from wirekafka.security.ssl_principal import PrincipalMapper
from wirekafka.server.authentication import SASL_APIS, AuthenticationFailed, SaslAuthenticator
from wirekafka.server.memory_pool import MemoryPool, Reservation
from wirekafka.server.sending import ResponseQueue, send_parts, send_ready
from wirekafka.server.tls import TlsHandshakeError, TlsTransport

log = logging.getLogger("wirekafka.server")

# What a connection may buffer without a reservation: half the kernel's default
# socket receive buffer (tcp_rmem, 128 KiB), and more than most clients' requests.
UNRESERVED_BYTES = 64 * 1024
RECEIVE_BYTES = 256 * 1024  # the most read at once into a reserved frame
# A reader goes on with whatever the socket holds until it has read this much
# since it last waited, then lets the writer and other connections run.
YIELD_AFTER_BYTES = 256 * 1024
# Produce requests a client pipelined are handled together, this many at most
# (their batches for one partition written with one pwritev)
MAX_PIPELINED_PRODUCES = 64
# and read on for, beyond the connection's allowance: with 64 KiB, a producer's group
# was six 10 KiB requests, and each request cost a sixth of a read, a write and a wake-up
GROUP_EXTRA_BYTES = 192 * 1024
PRODUCE_API = API_TABLE[ApiKey.PRODUCE]
# A client has this long from connecting to finishing its TLS handshake and SASL login
AUTHENTICATION_TIMEOUT_S = 10.0


class Idle(Protocol):
    """A connection waiting for its client: what the broker stops when it stops."""

    def cancel(self) -> None: ...


class ConnectionHost(Protocol):
    """What a connection needs from the server that runs it."""

    context: BrokerContext
    stopping: bool
    memory_pool: MemoryPool
    principal_mappers: Mapping[str, PrincipalMapper]  # ssl.principal.mapping.rules by listener

    def add_idle(self, waiting: Idle) -> None: ...

    def remove_idle(self, waiting: Idle) -> None: ...


class ReadWait:
    """A connection's reader waiting for the next request.

    It waits for its socket to become readable, with no cancel scope or timer of
    its own (entering those costs more than handling a small request). The broker
    ends the wait by shutting the socket down for reading: when it stops
    (:meth:`cancel`), and when the wait has lasted ``connections.max.idle.ms``
    (:meth:`expire`, from the broker's periodic check of the waiting readers).
    """

    __slots__ = ("expired", "since", "sock")

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self.since = 0.0  # trio.current_time() when the wait began
        self.expired = False

    def cancel(self) -> None:
        with contextlib.suppress(OSError):  # the client went first
            self.sock.shutdown(socket.SHUT_RD)

    def expire(self) -> None:
        self.expired = True
        self.cancel()


RequestPrefix = tuple[int, int, int]  # api key, api version, correlation id


def _describe(prefix: RequestPrefix | None) -> str:
    if prefix is None:
        return "before a whole request header"
    api_key, api_version, correlation_id = prefix
    api = api_for(api_key)
    name = api.name if api is not None else f"api key {api_key}"
    return f"{name} v{api_version} (correlation id {correlation_id})"


class Session:
    """Who is on the other end of a connection, and where it came in."""

    __slots__ = ("authenticator", "client_host", "listener_name", "principal")

    def __init__(self, client_host: str, listener_name: str, principal: str = ANONYMOUS) -> None:
        self.client_host = client_host  # as Kafka shows a client's address: "/127.0.0.1"
        self.listener_name = listener_name
        self.principal = principal
        self.authenticator: SaslAuthenticator | None = None  # on a SASL listener


def _sasl_response(authenticator: SaslAuthenticator, request: Request) -> Any:
    """Answer SaslHandshake or SaslAuthenticate; AuthenticationFailed ends the connection."""
    if request.header.api_key == ApiKey.SASL_HANDSHAKE:
        return authenticator.handshake(request)
    return authenticator.authenticate(request)


def _check_login(authenticator: SaslAuthenticator, prefix: RequestPrefix) -> None:
    """A request other than the SASL ones is served only within the SASL session."""
    if authenticator.expired():
        raise CloseConnection(
            "its SASL session ended (connections.max.reauth.ms) without re-authentication"
        )
    if authenticator.exchanging:
        raise CloseConnection(f"{_describe(prefix)} in the middle of its re-authentication")


async def _respond(
    host: ConnectionHost, frame: bytearray, prefix: RequestPrefix, session: Session
) -> list[Any] | None:
    api_key, api_version, correlation_id = prefix
    authenticator = session.authenticator
    if authenticator is not None:
        if api_key in SASL_APIS:  # re-authentication (KIP-368)
            request = decode_request(frame, session.client_host, session.principal)
            response = _sasl_response(authenticator, request)
            return encode_response_parts(api_key, api_version, correlation_id, response)
        _check_login(authenticator, prefix)
    api = api_for(api_key)
    if api is None:
        raise ProtocolError("unknown api key")
    if not api.supports(api_version):
        if api_key == ApiKey.API_VERSIONS:  # answered as v0, so any client can read it
            body = api_versions_response(ErrorCode.UNSUPPORTED_VERSION)
            return encode_response_parts(ApiKey.API_VERSIONS, 0, correlation_id, body)
        raise ProtocolError(f"version not served (v{api.min_version}-v{api.max_version} are)")
    request = decode_request(frame, session.client_host, session.principal, session.listener_name)
    context = host.context
    started = perf_counter()
    response = await HANDLERS[api_key](context, request)
    context.metrics.handled(api_key, api_version, perf_counter() - started)
    if response is None:
        return None
    return encode_response_parts(api_key, api_version, correlation_id, response)


class GroupReads:
    """A connection's reads into its decoder (:meth:`read`), and those a group of
    pipelined produce requests makes beyond the connection's allowance while the
    socket may hold more of them (:meth:`read_more`): up to ``GROUP_EXTRA_BYTES``,
    reserved from the pool only if free at once (a group never waits for room),
    until :meth:`done`."""

    __slots__ = (
        "_decoder", "_left", "_more_waiting", "_pool", "_read_into", "read_bytes",
        "reservation",
    )  # fmt: skip

    def __init__(
        self,
        decoder: FrameDecoder,
        read_into: Callable[[memoryview], int | None],
        pool: MemoryPool,
    ) -> None:
        self._decoder = decoder
        self._read_into = read_into
        self._pool = pool
        self._more_waiting = False  # the last read filled what it was given
        self.reservation: Reservation | None = None
        self._left = 0
        self.read_bytes = 0  # since the group began

    def read(self, size: int) -> int | None:
        """Read up to ``size`` bytes into the decoder: how many (0 at the socket's end),
        or None if the socket holds none now. Raises ProtocolError on a bad frame size."""
        view = self._decoder.fill_view(size)
        received = self._read_into(view)
        self._more_waiting = received == len(view)
        if received:
            self._decoder.filled(received)
        return received

    def read_more(self) -> int:
        """Read more of the group into the decoder: how many bytes (0: no more now)."""
        decoder = self._decoder
        if not self._more_waiting or needs_reservation(decoder) is not None:
            return 0  # the socket is empty, or a large frame comes: the reader's to reserve
        if self.reservation is None:
            self.reservation = self._pool.try_reserve(GROUP_EXTRA_BYTES)
            if self.reservation is None:
                return 0
            self._left = GROUP_EXTRA_BYTES
        size = min(receive_size(decoder, False), self._left)
        if size <= 0:
            return 0
        received = self.read(size)
        if not received:  # nothing now, or the end: the reader finds which
            return 0
        self._left -= received
        self.read_bytes += received
        return received

    def done(self) -> int:
        """The group was answered: its frames are gone, and its reservation with them.
        How many bytes it read."""
        if self.reservation is not None:
            self._pool.release(self.reservation)
            self.reservation = None
        read_bytes, self.read_bytes = self.read_bytes, 0
        return read_bytes


def _produce_request(frame: bytearray, session: Session, simple: bool) -> Request | SimpleProduce:
    """A produce request's frame read as a SimpleProduce if ``simple`` (nothing to
    authorize) and it is one (one topic, one partition), else decoded; raises
    ProtocolError if it cannot be."""
    if simple:
        read = read_simple_produce(frame)
        if read is not None:
            return read
    return decode_request(frame, session.client_host, session.principal, session.listener_name)


def _pipelined_produces(
    decoder: FrameDecoder,
    first: Request | SimpleProduce,
    session: Session,
    reads: GroupReads | None = None,
    simple: bool = False,
) -> list[Request | SimpleProduce]:
    """``first``, a produce request, and the produce requests that follow it in the
    decoder (whole, of a served version, decodable), taken from it, reading on with
    ``reads`` while the decoder runs out; the first request that is not one stays
    there, to be handled, or refused, on its own. ``simple``: see
    :func:`_produce_request`."""
    requests = [first]
    authenticator = session.authenticator
    while len(requests) < MAX_PIPELINED_PRODUCES:
        frame = decoder.peek_frame()
        if frame is None and reads is not None and reads.read_more():
            continue
        if frame is None or len(frame) < 8 or frame[0] or frame[1]:  # not Produce (key 0)
            break
        if authenticator is not None and authenticator.expired():
            break  # its SASL session ended: refused on its own, and the connection closed
        if not PRODUCE_API.supports(peek_request_prefix(frame)[1]):
            break
        try:
            request = _produce_request(frame, session, simple)
        except ProtocolError:
            break
        decoder.next_frame()
        requests.append(request)
    return requests


async def _respond_produces(
    host: ConnectionHost, requests: list[Request | SimpleProduce]
) -> list[list[Any] | CloseConnection | None]:
    """Answer produce requests a client pipelined, together (see
    :func:`~wirekafka.handlers.produce.handle_produces`): each one's response parts, or
    None (acks=0), or the CloseConnection that ends the connection after those before."""
    context = host.context
    started = perf_counter()
    answers = await handle_produces(context, requests)
    elapsed = perf_counter() - started
    encoded: list[list[Any] | CloseConnection | None] = []
    by_version: dict[int, int] = {}  # the requests answered, counted once per version
    for request, answer in zip(requests, answers, strict=False):  # answers may stop early
        if type(request) is SimpleProduce:
            version = request.api_version
        else:
            version = request.header.api_version  # type: ignore[union-attr]
        by_version[version] = by_version.get(version, 0) + 1
        if answer is None or isinstance(answer, CloseConnection):
            encoded.append(answer)
        else:
            encoded.append(answer_parts(request, answer))
    for version, count in by_version.items():
        context.metrics.handled(ApiKey.PRODUCE, version, elapsed, count)
    return encoded


def receive_size(decoder: FrameDecoder, reserved: bool) -> int:
    """How many bytes to read next. Unreserved, up to ``UNRESERVED_BYTES`` buffered in
    all; reserved (the frame being received has its size from the pool), up to the
    frame's end, so what is buffered beyond it stays within the allowance, and the
    frame is handed out without being copied."""
    if reserved:
        pending = decoder.pending_frame_bytes
        assert pending is not None, "a reservation is taken for a frame whose size is known"
        return min(RECEIVE_BYTES, pending - decoder.buffered_bytes)
    return UNRESERVED_BYTES - decoder.buffered_bytes


def needs_reservation(decoder: FrameDecoder) -> int | None:
    """The bytes to reserve before reading on: the size of the frame being received,
    if it is larger than the unreserved allowance."""
    pending = decoder.pending_frame_bytes
    return pending if pending is not None and pending > UNRESERVED_BYTES else None


async def _wait_for_room(host: ConnectionHost, nbytes: int) -> Reservation | None:
    """Reserve ``nbytes`` of the pool; None if the broker stopped first."""
    with trio.CancelScope() as waiting:
        host.add_idle(waiting)  # nothing read yet: shutdown need not wait for it
        try:
            return await host.memory_pool.reserve(nbytes)
        finally:
            host.remove_idle(waiting)
    return None


class PlainTransport:
    """A connection's bytes as the socket carries them (PLAINTEXT, SASL_PLAINTEXT)."""

    __slots__ = ("_fd", "sock")

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self._fd = sock.fileno()

    def read_into(self, buffer: memoryview) -> int | None:
        """Bytes the socket holds now, into ``buffer``: how many (0 at its end), or None
        if it holds none."""
        try:
            return os.readv(self._fd, (buffer,))
        except BlockingIOError:
            return None

    async def send_parts(self, parts: Sequence[object]) -> None:
        await send_parts(self.sock, parts)

    def send_ready(self, parts: Sequence[object]) -> list[object]:
        """Send as much of ``parts`` as the socket takes now; what is left."""
        return send_ready(self._fd, parts)


class Transport(Protocol):
    """Reads and writes of a connection's Kafka bytes: plain, or through TLS."""

    sock: trio.socket.SocketType

    def read_into(self, buffer: memoryview) -> int | None: ...

    async def send_parts(self, parts: Sequence[object]) -> None: ...

    @property
    def send_ready(self) -> Callable[[Sequence[object]], list[object]] | None:
        """Sends what the connection takes now, returning the rest; None if it cannot."""


async def _read_requests(
    host: ConnectionHost,
    transport: Transport,
    responses: ResponseQueue,
    peer: str,
    session: Session,
    decoder: FrameDecoder,
) -> None:
    """Handle requests in the order they arrive until the client or the broker stops;
    responses go to ``responses``. The task reads and handles what the socket holds
    without yielding, until it would wait for data, a handler waits, or it has read
    ``YIELD_AFTER_BYTES``: the responses of the requests handled meanwhile leave
    together."""
    config = host.context.config
    sock = transport.sock
    waiting = ReadWait(sock)
    reads = GroupReads(decoder, transport.read_into, host.memory_pool)
    prefix: RequestPrefix | None = None  # of the request being handled
    reserved: Reservation | None = None  # for the frame being received or handled
    unyielded = 0  # bytes read since this task last let others run
    try:
        while not host.stopping:
            frame = decoder.next_frame()
            if frame is None:
                if unyielded >= YIELD_AFTER_BYTES:
                    responses.kick()
                    await trio.lowlevel.checkpoint()  # the writer sends what was answered
                    unyielded = 0
                if reserved is None and (wanted := needs_reservation(decoder)) is not None:
                    responses.kick()
                    reserved = await _wait_for_room(host, wanted)
                    if reserved is None:
                        return  # the broker is stopping
                received = reads.read(receive_size(decoder, reserved is not None))
                if received is None:  # nothing to read: answer, and wait for the client
                    responses.send_now()
                    waiting.since = trio.current_time()
                    host.add_idle(waiting)
                    try:
                        await trio.lowlevel.wait_readable(sock)
                    finally:
                        host.remove_idle(waiting)
                    if host.stopping:
                        return
                    if waiting.expired:
                        idle_s = config.connections_max_idle_ms / 1000
                        log.info("closing connection from %s: idle for %.0f s", peer, idle_s)
                        return
                    unyielded = 0
                    continue
                if not received:
                    return
                unyielded += received
                continue
            prefix = None  # a header that cannot be read is not the last request's
            prefix = peek_request_prefix(frame)
            if responses.holding:  # the handler may wait: what came before goes meanwhile
                responses.kick()
            if prefix[0] == ApiKey.PRODUCE and PRODUCE_API.supports(prefix[1]):
                if session.authenticator is not None:
                    _check_login(session.authenticator, prefix)
                simple = host.context.authorizer is None
                first = _produce_request(frame, session, simple)
                frame = None
                answers = await _respond_produces(
                    host, _pipelined_produces(decoder, first, session, reads, simple)
                )
                unyielded += reads.done()
            else:
                answers = [await _respond(host, frame, prefix, session)]
                frame = None
            if reserved is not None:  # it was this request's: reads stop at its frame's end
                host.memory_pool.release(reserved)
                reserved = None
            for parts in answers:
                if isinstance(parts, CloseConnection):
                    raise parts
                if parts is not None:
                    if responses.full:
                        await responses.wait_for_room()
                    responses.hold(parts)
    except AuthenticationFailed as exc:
        await _refuse(host, responses, prefix, exc, peer)
    except (ProtocolError, CloseConnection) as exc:
        log.warning("closing connection from %s: %s: %s", peer, _describe(prefix), exc)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:
        log.exception("closing connection from %s after an error in %s", peer, _describe(prefix))
    finally:
        if reserved is not None:
            host.memory_pool.release(reserved)
        reads.done()


async def _write_responses(
    responses: ResponseQueue, connection: trio.CancelScope, peer: str
) -> None:
    """Run the connection's writer; if the socket fails, the connection ends."""
    try:
        await responses.run()
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:
        log.exception("closing connection from %s after an error sending a response", peer)
    finally:
        connection.cancel()


async def _within_login_window(
    host: ConnectionHost,
    deadline: float,
    step: Callable[[], Awaitable[bool]],
    peer: str,
    listener: ListenerSecurity,
    late: str,
) -> bool:
    """Run ``step`` (the TLS handshake, the SASL exchange; False when it refused the
    client, having said why) before ``deadline``, the end of the client's
    ``AUTHENTICATION_TIMEOUT_S`` from connecting; the broker stopping ends it too.
    True once it succeeded."""
    with trio.CancelScope(deadline=deadline) as waiting:
        host.add_idle(waiting)
        try:
            return await step()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            return False
        finally:
            host.remove_idle(waiting)
    if not host.stopping:
        log.info(
            "closing connection from %s on %s: %s within %.0f s",
            peer,
            listener.listener_name,
            late,
            AUTHENTICATION_TIMEOUT_S,
        )
    return False


async def _tls_handshake(tls: TlsTransport, peer: str, listener: ListenerSecurity) -> bool:
    """The TLS handshake; False (logged) if the client failed it."""
    try:
        await tls.handshake()
    except TlsHandshakeError as exc:
        log.info(
            "closing connection from %s on %s: TLS handshake failed: %s",
            peer,
            listener.listener_name,
            exc,
        )
        return False
    return True


async def _next_frame(transport: Transport, decoder: FrameDecoder) -> bytearray | None:
    """The next whole frame (at most ``UNRESERVED_BYTES``); None when the client leaves."""
    while (frame := decoder.next_frame()) is None:
        received = transport.read_into(decoder.fill_view(UNRESERVED_BYTES - decoder.buffered_bytes))
        if received is None:
            await trio.lowlevel.wait_readable(transport.sock)
        elif not received:
            return None
        else:
            decoder.filled(received)
    return frame


async def _refuse(
    host: ConnectionHost,
    responses: ResponseQueue,
    prefix: RequestPrefix | None,
    failed: AuthenticationFailed,
    peer: str,
) -> None:
    """A failed login: its answer goes out after ``connection.failed.authentication.delay.ms``
    (a client guessing passwords gets no faster answers), then the connection closes."""
    log.info("closing connection from %s: authentication failed: %s", peer, failed.reason)
    await trio.sleep(host.context.config.connection_failed_authentication_delay_ms / 1000)
    if failed.response is not None and prefix is not None:
        api_key, api_version, correlation_id = prefix
        responses.put(encode_response_parts(api_key, api_version, correlation_id, failed.response))


async def _exchange(
    host: ConnectionHost,
    transport: Transport,
    responses: ResponseQueue,
    decoder: FrameDecoder,
    session: Session,
    authenticator: SaslAuthenticator,
    peer: str,
) -> bool:
    """Frames until the client is authenticated (True): ApiVersions, SaslHandshake, then
    tokens. False after a failed login, answered; ProtocolError or CloseConnection for a
    client that breaks the exchange."""
    prefix: RequestPrefix | None = None
    while authenticator.principal is None:
        frame = await _next_frame(transport, decoder)
        if frame is None:
            raise CloseConnection("it left before authenticating")
        if authenticator.raw_tokens:  # after SaslHandshake v0: bare tokens, bare answers
            try:
                token = authenticator.raw_token(bytes(frame))
            except AuthenticationFailed as exc:
                await _refuse(host, responses, None, exc, peer)
                return False
            responses.put([frame_prefix(len(token)), token])
            continue
        prefix = peek_request_prefix(frame)
        api_key = prefix[0]
        if api_key == ApiKey.API_VERSIONS:
            parts = await _respond(host, frame, prefix, session)
        elif api_key in SASL_APIS:
            request = decode_request(frame, session.client_host)
            try:
                response = _sasl_response(authenticator, request)
            except AuthenticationFailed as exc:
                await _refuse(host, responses, prefix, exc, peer)
                return False
            parts = encode_response_parts(prefix[0], prefix[1], prefix[2], response)
        else:
            raise CloseConnection(
                f"{_describe(prefix)} before SASL authentication (only ApiVersions, "
                "SaslHandshake and SaslAuthenticate are served before it)"
            )
        if parts is not None:
            responses.put(parts)
    return True


async def _authenticate(
    host: ConnectionHost,
    transport: Transport,
    responses: ResponseQueue,
    decoder: FrameDecoder,
    session: Session,
    listener: ListenerSecurity,
    peer: str,
) -> bool:
    """The SASL exchange of a new connection, with frames of at most
    ``sasl.server.max.receive.size`` (and ``UNRESERVED_BYTES``); True once the client is
    authenticated (``session.principal`` is set), False (logged) if it was refused."""
    assert listener.sasl is not None
    context = host.context
    scram_users = context.scram_users
    authenticator = SaslAuthenticator(
        listener,
        listener.sasl.plain_users,
        scram_users.lookup if scram_users is not None else _no_scram_users,
        trio.current_time,
    )
    session.authenticator = authenticator
    limit = decoder.max_frame_bytes
    decoder.max_frame_bytes = min(context.config.sasl_server_max_receive_size, UNRESERVED_BYTES)
    try:
        if not await _exchange(host, transport, responses, decoder, session, authenticator, peer):
            return False
    except (ProtocolError, CloseConnection) as exc:
        log.info("closing connection from %s on %s: %s", peer, listener.listener_name, exc)
        return False
    assert authenticator.principal is not None
    session.principal = authenticator.principal
    decoder.max_frame_bytes = limit
    return True


def _no_scram_users(mechanism: str, user: str) -> None:
    return None


async def serve_connection(
    host: ConnectionHost,
    stream: trio.SocketStream,
    listener: ListenerSecurity | None = None,
    tls_context: ssl.SSLContext | None = None,
) -> None:
    """Serve one client on ``listener`` (None: a PLAINTEXT listener named PLAINTEXT);
    ``tls_context``: the listener's, for SSL and SASL_SSL."""
    try:
        address = stream.socket.getpeername()
        peer = f"{address[0]}:{address[1]}"
        client_host = f"/{address[0]}"  # as Kafka shows a client's address
    except OSError:
        peer = "an unknown peer"
        client_host = ""
    session = Session(client_host, listener.listener_name if listener else "PLAINTEXT")
    transport: Transport = PlainTransport(stream.socket)
    login_deadline = trio.current_time() + AUTHENTICATION_TIMEOUT_S  # TLS and SASL both
    try:
        if tls_context is not None:
            assert listener is not None and listener.tls is not None
            tls = TlsTransport(stream.socket, tls_context)
            handshake = functools.partial(_tls_handshake, tls, peer, listener)
            if not await _within_login_window(
                host, login_deadline, handshake, peer, listener, "no TLS handshake"
            ):
                return
            if listener.sasl is None:
                mapper = host.principal_mappers[listener.listener_name]
                session.principal = tls.principal(mapper) or ANONYMOUS
            transport = tls
        responses = ResponseQueue(transport.send_parts, transport.send_ready)
        decoder = FrameDecoder(host.context.config.socket_request_max_bytes, UNRESERVED_BYTES)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write_responses, responses, nursery.cancel_scope, peer)
            try:
                if listener is not None and listener.sasl is not None:
                    login = functools.partial(
                        _authenticate, host, transport, responses, decoder, session, listener, peer
                    )
                    if not await _within_login_window(
                        host, login_deadline, login, peer, listener, "not authenticated"
                    ):
                        return
                await _read_requests(host, transport, responses, peer, session, decoder)
            finally:
                responses.finish()  # what was answered still goes out
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()
