"""TLS on a connection: the server's SSL context, and a socket's bytes through it; the
client's SSL context of a broker connecting to another.

The connection keeps its own non-blocking reads and writes; TLS sits between
them and the socket as an ``ssl.SSLObject`` over memory buffers. Reading
decrypts what the socket holds; writing encrypts the responses' parts and
sends the records. Record data cannot go out with ``sendfile`` (the kernel
would send it unencrypted): file spans are read with ``pread`` in large
chunks and encrypted from there, the one copy TLS needs.

Only the reader feeds the TLS object and only the writer sends its output, so
the two tasks never interleave records on the socket. Bytes TLS itself
produces after the handshake (a TLS 1.3 key update's answer) leave with the
next response.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import trio

from wirekafka.listener_security import TlsSettings
from wirekafka.security.cipher_suites import cipher_choice
from wirekafka.security.principal import user
from wirekafka.security.ssl_principal import PrincipalMapper, rfc2253_name
from wirekafka.storage.spans import FileSpan
from wirekafka.worker_threads import blocking

RAW_RECEIVE_BYTES = 256 * 1024  # read from the socket at once
FILE_CHUNK_BYTES = 256 * 1024  # of a file span, read and encrypted at once
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class TlsConfigError(ValueError):
    """The key or trust store cannot be used; names the key and the reason."""


@blocking
def server_context(settings: TlsSettings, listener_name: str) -> ssl.SSLContext:
    """The SSL context of a TLS listener, from its PEM stores (read here, once)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_stores(context, settings, listener_name)
    context.verify_mode = _VERIFY[settings.client_auth]
    return context


@blocking
def client_context(settings: TlsSettings, listener_name: str) -> ssl.SSLContext:
    """The SSL context a broker connects to the others with on the TLS listener
    ``listener_name``: its trust store (the system's CAs without one) checks their
    certificates, its key store is its client certificate, as in Kafka, and
    ``ssl.endpoint.identification.algorithm=https`` checks their host names."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = settings.endpoint_identification_algorithm == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    if settings.truststore_location is None and settings.truststore_certificates is None:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    _load_stores(context, settings, listener_name)
    return context


def _load_stores(context: ssl.SSLContext, settings: TlsSettings, listener_name: str) -> None:
    """The listener's protocols, key store, trust store and cipher suites into ``context``."""
    enabled = set(settings.enabled_protocols)
    if settings.cipher_suites:  # checked when the config was read
        choice = cipher_choice(settings.cipher_suites)
        if choice.tls12_openssl:
            context.set_ciphers(":".join(choice.tls12_openssl))
        else:
            enabled.discard("TLSv1.2")
        if not choice.tls13:
            enabled.discard("TLSv1.3")
    versions = sorted(_TLS_VERSIONS[p] for p in enabled)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    context.options |= ssl.OP_NO_RENEGOTIATION | ssl.OP_NO_COMPRESSION
    where = f"listener {listener_name}"
    try:
        if settings.keystore_location is not None:
            context.load_cert_chain(settings.keystore_location, password=settings.key_password)
        else:
            assert settings.keystore_key and settings.keystore_certificate_chain
            _load_inline_chain(context, settings)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(
            f"{where}: cannot load the key store (ssl.keystore.*, ssl.key.password): "
            f"{getattr(exc, 'strerror', None) or exc}"
        ) from None
    try:
        if settings.truststore_location is not None:
            context.load_verify_locations(cafile=settings.truststore_location)
        if settings.truststore_certificates is not None:
            context.load_verify_locations(cadata=settings.truststore_certificates)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(
            f"{where}: cannot load the trust store (ssl.truststore.*): "
            f"{getattr(exc, 'strerror', None) or exc}"
        ) from None


def _load_inline_chain(context: ssl.SSLContext, settings: TlsSettings) -> None:
    """``ssl.keystore.key`` and ``ssl.keystore.certificate.chain`` given as text: OpenSSL
    reads them from a file only readable by this user, removed at once."""
    with tempfile.TemporaryDirectory(prefix="wirekafka-tls-") as directory:
        path = Path(directory) / "keystore.pem"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(f"{settings.keystore_key}\n{settings.keystore_certificate_chain}\n")
        context.load_cert_chain(path, password=settings.key_password)


class TlsHandshakeError(Exception):
    """The client's TLS handshake failed; the message says why, for the log."""


class TlsTransport:
    """One connection's TLS, server side."""

    __slots__ = ("_closed", "_fd", "_incoming", "_object", "_outgoing", "sock")

    def __init__(self, sock: trio.socket.SocketType, context: ssl.SSLContext) -> None:
        self.sock = sock
        self._fd = sock.fileno()
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._object = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._closed = False  # the socket reached its end

    async def handshake(self) -> None:
        """Complete the handshake; TlsHandshakeError if the client fails it or leaves."""
        while True:
            try:
                self._object.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._receive():
                    raise TlsHandshakeError(
                        "the client closed the connection during the handshake"
                    ) from None
                continue
            except ssl.SSLError as exc:
                with contextlib.suppress(OSError, trio.BrokenResourceError):
                    await self._flush()  # the alert that tells the client why
                raise TlsHandshakeError(exc.reason or str(exc)) from None
            await self._flush()
            return

    def principal(self, mapper: PrincipalMapper) -> str | None:
        """``User:<mapped subject>`` of the client's certificate; None without one."""
        certificate = self._object.getpeercert()
        if not certificate:
            return None
        subject = certificate.get("subject", ())
        return user(mapper.name_of(rfc2253_name(subject)))  # type: ignore[arg-type]

    async def _receive(self) -> bool:
        """Wait for bytes from the socket and feed them to TLS; False at its end."""
        while True:
            try:
                data = os.read(self._fd, RAW_RECEIVE_BYTES)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.sock)
                continue
            if not data:
                self._incoming.write_eof()
                return False
            self._incoming.write(data)
            return True

    # The reader does not send: records are encrypted by the writer alone.
    send_ready: Callable[[Sequence[object]], list[object]] | None = None

    def read_into(self, buffer: memoryview) -> int | None:
        """Decrypted bytes available now, into ``buffer``: how many (0 at the end), or
        None if none yet."""
        while True:
            try:
                # with a buffer, read() fills it and returns a count (typeshed says bytes)
                return cast(int, self._object.read(buffer.nbytes, buffer))
            except ssl.SSLWantReadError:
                if self._closed:
                    return 0
                try:
                    data = os.read(self._fd, RAW_RECEIVE_BYTES)
                except BlockingIOError:
                    return None
                if not data:
                    self._closed = True
                    self._incoming.write_eof()
                    continue
                self._incoming.write(data)
            except ssl.SSLZeroReturnError:  # the client's close_notify
                return 0
            except ssl.SSLError as exc:
                raise ConnectionError(f"TLS: {exc.reason or exc}") from None

    async def send_parts(self, parts: Sequence[object]) -> None:
        """Encrypt and send responses' parts in order (file spans read from their files)."""
        pending: list[object] = []
        for part in parts:
            if isinstance(part, FileSpan):
                self._encrypt(b"".join(pending))  # type: ignore[arg-type]
                pending = []
                await self._encrypt_span(part)
            else:
                pending.append(part)
        if pending:
            self._encrypt(b"".join(pending))  # type: ignore[arg-type]
        await self._flush()

    def _encrypt(self, data: bytes) -> None:
        view = memoryview(data)
        while view.nbytes:
            try:
                written = self._object.write(view)
            except ssl.SSLError as exc:  # the peer closed its side (a response it left)
                raise ConnectionError(f"TLS: {exc.reason or exc}") from None
            view = view[written:]

    async def _encrypt_span(self, span: FileSpan) -> None:
        position, remaining = span.position, span.size_bytes
        while remaining:
            chunk = os.pread(span.fileno(), min(remaining, FILE_CHUNK_BYTES), position)
            if not chunk:
                raise OSError(f"{span.file.path}: {remaining} bytes of a span are missing")
            self._encrypt(chunk)
            position += len(chunk)
            remaining -= len(chunk)
            if self._outgoing.pending >= FILE_CHUNK_BYTES:
                await self._flush()

    async def _flush(self) -> None:
        """Send what TLS has produced."""
        data = self._outgoing.read()
        view = memoryview(data)
        while view.nbytes:
            try:
                sent = os.write(self._fd, view)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
                continue
            view = view[sent:]
