"""Connections from this broker to the others, secured as the inter-broker listener is.

``inter.broker.listener.name`` (or ``security.inter.broker.protocol``) names the
listener brokers reach each other on; its protocol says what a connection to it
needs, as in Kafka:

* SSL and SASL_SSL: a TLS handshake, this broker the client. The listener's
  trust store checks the other broker's certificate (its host name too, with
  ``ssl.endpoint.identification.algorithm=https``, the default); the listener's
  key store is this broker's certificate, should the other ask for one.
* SASL_PLAINTEXT and SASL_SSL: SaslHandshake v1 and SaslAuthenticate with
  ``sasl.mechanism.inter.broker.protocol``, as the user of the ``username`` and
  ``password`` options of the listener's JAAS entry for that mechanism.

A failure raises :class:`InterBrokerSecurityError` (a ConnectionError), whose
message names the broker, the listener, the mechanism and the user, never a
password.
"""

from __future__ import annotations

import ssl

import trio

from wirekafka.config import BrokerConfig
from wirekafka.listener_security import ListenerSecurity
from wirekafka.protocol.api_table import API_TABLE, ApiKey
from wirekafka.protocol.messages.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from wirekafka.protocol.messages.sasl_handshake import (
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from wirekafka.security.sasl_client import (
    SaslClientError,
    SaslCredentials,
    check_authenticate,
    check_handshake,
    sasl_client,
)
from wirekafka.server.inter_broker import BrokerConnection
from wirekafka.server.tls import client_context
from wirekafka.worker_threads import METADATA, run_blocking

SASL_HANDSHAKE_VERSION = 1  # the tokens travel in SaslAuthenticate requests
SASL_AUTHENTICATE_VERSION = API_TABLE[ApiKey.SASL_AUTHENTICATE].max_version
# Of a session's lifetime, what passes before authenticating again (Kafka's clients
# pick between 85 % and 95 %)
REAUTHENTICATE_FRACTION = 0.85


class InterBrokerSecurityError(ConnectionError):
    """The TLS handshake or the SASL exchange with another broker failed."""


class InterBrokerConnector:
    """Opens connections to the other brokers' inter-broker listener."""

    def __init__(
        self,
        listener: ListenerSecurity,
        tls_context: ssl.SSLContext | None,
        credentials: SaslCredentials | None,
    ) -> None:
        if listener.sasl is not None and credentials is None:
            raise ValueError(f"listener {listener.listener_name}: SASL without credentials")
        self.listener = listener
        self.tls_context = tls_context
        self.credentials = credentials

    @classmethod
    async def load(cls, config: BrokerConfig) -> InterBrokerConnector:
        """The connector of the broker configured by ``config`` (its trust and key
        stores read in a worker thread)."""
        listener = config.listener_security[config.inter_broker_listener_name]
        context = None
        if listener.tls is not None:
            context = await run_blocking(
                METADATA, client_context, listener.tls, listener.listener_name
            )
        return cls(listener, context, config.inter_broker_sasl_credentials)

    async def connect(
        self, host: str, port: int, broker_id: int, client_id: str, timeout_s: float
    ) -> BrokerConnection:
        """A connection to broker ``broker_id`` at ``host:port``, secured and
        authenticated within ``timeout_s`` (TooSlowError after it); OSError if it cannot
        be reached, InterBrokerSecurityError if TLS or SASL fails."""
        where = f"broker {broker_id} at {host}:{port} (listener {self.listener.listener_name})"
        with trio.fail_after(timeout_s):
            stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
            try:
                if self.tls_context is not None:
                    stream = await tls_handshake(stream, self.tls_context, host, where)
                connection = BrokerConnection(
                    stream,
                    broker_id,
                    client_id,
                    authenticate=self._authenticate if self.credentials is not None else None,
                )
                await connection.authenticate(timeout_s)
            except BaseException:
                await trio.aclose_forcefully(stream)
                raise
        return connection

    async def _authenticate(self, connection: BrokerConnection, timeout_s: float) -> float | None:
        credentials = self.credentials
        assert credentials is not None
        try:
            return await _sasl_exchange(connection, credentials, timeout_s)
        except SaslClientError as exc:
            raise InterBrokerSecurityError(
                f"broker {connection.broker_id} (listener {self.listener.listener_name}): {exc}"
            ) from None


async def tls_handshake(
    stream: trio.abc.Stream, context: ssl.SSLContext, host: str, where: str
) -> trio.SSLStream[trio.abc.Stream]:
    secured = trio.SSLStream(stream, context, server_hostname=host)
    try:
        await secured.do_handshake()
    except trio.BrokenResourceError as exc:
        cause = exc.__cause__
        reason = getattr(cause, "verify_message", None) or getattr(cause, "reason", None)
        raise InterBrokerSecurityError(
            f"{where}: the TLS handshake failed: {reason or cause or 'the connection closed'}"
        ) from None
    return secured


async def _sasl_exchange(
    connection: BrokerConnection, credentials: SaslCredentials, timeout_s: float
) -> float | None:
    """SaslHandshake and SaslAuthenticate until the mechanism is done; the trio time to
    authenticate again, or None if the session does not expire."""
    started = trio.current_time()
    handshake = await connection.send_request(
        ApiKey.SASL_HANDSHAKE,
        SASL_HANDSHAKE_VERSION,
        SaslHandshakeRequest(mechanism=credentials.mechanism),
        timeout_s,
    )
    assert isinstance(handshake, SaslHandshakeResponse)
    check_handshake(handshake, credentials.mechanism)
    client = sasl_client(credentials)
    token: bytes | None = client.initial_token()
    lifetime_ms = 0
    while token is not None:
        response = await connection.send_request(
            ApiKey.SASL_AUTHENTICATE,
            SASL_AUTHENTICATE_VERSION,
            SaslAuthenticateRequest(auth_bytes=token),
            timeout_s,
        )
        assert isinstance(response, SaslAuthenticateResponse)
        check_authenticate(response, credentials)
        lifetime_ms = response.session_lifetime_ms
        token = client.evaluate(response.auth_bytes)
    if lifetime_ms <= 0:
        return None
    return started + lifetime_ms / 1000 * REAUTHENTICATE_FRACTION
