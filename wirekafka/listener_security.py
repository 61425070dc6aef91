"""How each listener secures its connections: Kafka's security keys, read and checked.

A listener's security protocol comes from ``listener.security.protocol.map``,
whose default names each of the four protocols after itself. An ``ssl.*`` or ``sasl.*``
key applies to every listener; ``listener.name.<name>.<key>`` (the name in
lower case, as Kafka writes it) sets it for one listener and wins. A SASL
mechanism's JAAS entry is ``listener.name.<name>.<mechanism>.sasl.jaas.config``.

Only PEM key and trust stores are read (``ssl.keystore.type=PEM``): a file
holding the private key and the certificate chain, or both given inline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wirekafka.listeners import Listener
from wirekafka.security.cipher_suites import cipher_choice
from wirekafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    parse_jaas_config,
    plain_users,
)
from wirekafka.security.sasl_client import SaslCredentials, client_credentials
from wirekafka.security.ssl_principal import PrincipalMapper
from wirekafka.storage.config import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_SECURITY_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENT_AUTH = ("none", "requested", "required")
ENDPOINT_IDENTIFICATION_ALGORITHMS = ("https", "")  # https: the host name is checked
TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")

# key -> default; each may also be given per listener (listener.name.<name>.<key>)
LISTENER_KEY_DEFAULTS: dict[str, str | None] = {
    "ssl.keystore.type": "PEM",
    "ssl.keystore.location": None,
    "ssl.keystore.key": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.keystore.password": None,
    "ssl.key.password": None,
    "ssl.truststore.type": "PEM",
    "ssl.truststore.location": None,
    "ssl.truststore.certificates": None,
    "ssl.truststore.password": None,
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.protocol": "TLSv1.3",
    "ssl.cipher.suites": "",
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.principal.mapping.rules": "DEFAULT",
    "sasl.enabled.mechanisms": None,  # None: the mechanisms this listener can serve
    "connections.max.reauth.ms": "0",
}
# the keys read here: the listener keys, and which listener brokers use
SECURITY_KEY_DEFAULTS: dict[str, str | None] = {
    "listener.security.protocol.map": DEFAULT_SECURITY_PROTOCOL_MAP,
    "inter.broker.listener.name": None,
    "security.inter.broker.protocol": None,  # None: PLAINTEXT, unless the listener name is set
    **LISTENER_KEY_DEFAULTS,
}

_LISTENER_PREFIX = re.compile(r"^listener\.name\.(?P<listener>[a-z0-9_]+)\.(?P<key>.+)$")
_JAAS_KEY = re.compile(r"^(?P<mechanism>[a-z0-9-]+)\.sasl\.jaas\.config$")


def is_security_key(key: str) -> bool:
    """Whether ``key`` is one of the security keys this module reads."""
    if key in SECURITY_KEY_DEFAULTS:
        return True
    match = _LISTENER_PREFIX.match(key)
    if match is None:
        return False
    rest = match["key"]
    return rest in LISTENER_KEY_DEFAULTS or _JAAS_KEY.match(rest) is not None


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """A listener's TLS: what the server side of its handshakes needs."""

    keystore_location: str | None  # PEM: private key and certificate chain in one file
    keystore_key: str | None  # PEM text of the private key, inline
    keystore_certificate_chain: str | None  # PEM text of the chain, inline
    key_password: str | None = None  # of an encrypted private key
    truststore_location: str | None = None  # PEM file of the CAs a client cert must chain to
    truststore_certificates: str | None = None  # the same, inline
    client_auth: str = "none"  # none | requested | required
    enabled_protocols: tuple[str, ...] = TLS_VERSIONS
    cipher_suites: tuple[str, ...] = ()  # empty: OpenSSL's defaults
    principal_mapping_rules: str = "DEFAULT"
    # the client side (a broker connecting to another): "https" checks the host name
    endpoint_identification_algorithm: str = "https"

    def __repr__(self) -> str:  # never show a key or a password
        return f"TlsSettings(keystore_location={self.keystore_location!r}, ...)"


@dataclass(frozen=True, slots=True)
class SaslSettings:
    enabled_mechanisms: tuple[str, ...]
    jaas_configs: Mapping[str, str]  # mechanism -> its JAAS entry, as given
    plain_users: Mapping[str, str]  # PLAIN's users and passwords (user_<name>="<password>")

    def __repr__(self) -> str:
        return f"SaslSettings(enabled_mechanisms={self.enabled_mechanisms!r})"


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    listener_name: str
    security_protocol: str
    tls: TlsSettings | None  # SSL and SASL_SSL
    sasl: SaslSettings | None  # SASL_PLAINTEXT and SASL_SSL
    reauth_ms: int = 0  # connections.max.reauth.ms; 0: a session never expires

    def __repr__(self) -> str:
        return f"ListenerSecurity({self.listener_name}: {self.security_protocol})"


def parse_security_protocol_map(text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...``; every protocol one of Kafka's four."""
    key = "listener.security.protocol.map"
    mapping: dict[str, str] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = entry.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(f"{key}: {entry!r} is not of the form LISTENER_NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"{key}: {entry!r}: {protocol!r} is not a security protocol "
                f"({', '.join(SECURITY_PROTOCOLS)})"
            )
        if name in mapping:
            raise ConfigError(f"{key}: listener {name} is mapped twice")
        mapping[name] = protocol
    return mapping


class _ListenerKeys:
    """One listener's view of the keys: its own prefixed value, else the broker-wide one."""

    def __init__(self, properties: Mapping[str, str], listener_name: str) -> None:
        self.properties = properties
        self.prefix = f"listener.name.{listener_name.lower()}."

    def name(self, key: str) -> str:
        prefixed = self.prefix + key
        return prefixed if prefixed in self.properties else key

    def get(self, key: str) -> str | None:
        value = self.properties.get(self.prefix + key)
        if value is None:
            value = self.properties.get(key, LISTENER_KEY_DEFAULTS.get(key))
        return value.strip() if value is not None else None

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        value = (self.get(key) or "").lower()
        allowed = {c.lower(): c for c in choices}
        if value not in allowed:
            raise ConfigError(f"{self.name(key)}={value!r}: expected one of {', '.join(choices)}")
        return allowed[value]

    def items(self, key: str) -> tuple[str, ...]:
        return tuple(filter(None, (part.strip() for part in (self.get(key) or "").split(","))))

    def jaas_configs(self) -> dict[str, str]:
        configs = {}
        for mechanism in SASL_MECHANISMS:
            text = self.properties.get(f"{self.prefix}{mechanism.lower()}.sasl.jaas.config")
            if text is not None:
                configs[mechanism] = text
        return configs


def _tls_settings(keys: _ListenerKeys) -> TlsSettings:
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        if (keys.get(key) or "").upper() != "PEM":
            raise ConfigError(
                f"{keys.name(key)}={keys.get(key)!r}: only PEM stores are read "
                "(convert JKS or PKCS12 with openssl or keytool)"
            )
    for key in ("ssl.keystore.password", "ssl.truststore.password"):
        if keys.get(key):
            raise ConfigError(
                f"{keys.name(key)}: PEM stores have no store password "
                "(an encrypted private key takes ssl.key.password)"
            )
    location = keys.get("ssl.keystore.location") or None
    key_text = keys.get("ssl.keystore.key") or None
    chain = keys.get("ssl.keystore.certificate.chain") or None
    if location is not None and (key_text or chain):
        raise ConfigError(
            f"{keys.name('ssl.keystore.location')}: give the key store as a file or as "
            "ssl.keystore.key and ssl.keystore.certificate.chain, not both"
        )
    if location is None and not (key_text and chain):
        raise ConfigError(
            f"{keys.prefix}ssl.keystore.location (or ssl.keystore.key with "
            "ssl.keystore.certificate.chain) must be set for a TLS listener"
        )
    truststore_location = keys.get("ssl.truststore.location") or None
    truststore_certificates = keys.get("ssl.truststore.certificates") or None
    client_auth = keys.choice("ssl.client.auth", CLIENT_AUTH)
    if client_auth != "none" and not (truststore_location or truststore_certificates):
        raise ConfigError(
            f"{keys.name('ssl.client.auth')}={client_auth}: needs ssl.truststore.location "
            "or ssl.truststore.certificates, the CAs client certificates are checked against"
        )
    protocols = keys.items("ssl.enabled.protocols")
    for protocol in protocols:
        if protocol not in TLS_VERSIONS:
            raise ConfigError(
                f"{keys.name('ssl.enabled.protocols')}: {protocol!r} is not served "
                f"({', '.join(TLS_VERSIONS)} are)"
            )
    if not protocols:
        raise ConfigError(f"{keys.name('ssl.enabled.protocols')}: names no protocol")
    cipher_suites = keys.items("ssl.cipher.suites")
    if cipher_suites:
        try:
            choice = cipher_choice(cipher_suites)
        except ValueError as exc:
            raise ConfigError(f"{keys.name('ssl.cipher.suites')}: {exc}") from None
        left = set(protocols) - ({"TLSv1.2"} if not choice.tls12_openssl else set())
        left -= {"TLSv1.3"} if not choice.tls13 else set()
        if not left:
            raise ConfigError(
                f"{keys.name('ssl.cipher.suites')}: names no suite of the enabled protocols "
                f"({', '.join(protocols)})"
            )
    mapping_rules = keys.get("ssl.principal.mapping.rules") or "DEFAULT"
    identification = (keys.get("ssl.endpoint.identification.algorithm") or "").lower()
    if identification not in ENDPOINT_IDENTIFICATION_ALGORITHMS:
        raise ConfigError(
            f"{keys.name('ssl.endpoint.identification.algorithm')}={identification!r}: "
            "expected https (check the host name in the certificate) or empty (do not)"
        )
    try:
        PrincipalMapper(mapping_rules)
    except ValueError as exc:
        raise ConfigError(f"{keys.name('ssl.principal.mapping.rules')}: {exc}") from None
    return TlsSettings(
        keystore_location=location,
        keystore_key=key_text,
        keystore_certificate_chain=chain,
        key_password=keys.get("ssl.key.password") or None,
        truststore_location=truststore_location,
        truststore_certificates=truststore_certificates,
        client_auth=client_auth,
        enabled_protocols=protocols,
        cipher_suites=cipher_suites,
        principal_mapping_rules=mapping_rules,
        endpoint_identification_algorithm=identification,
    )


def _sasl_settings(keys: _ListenerKeys) -> SaslSettings:
    jaas = keys.jaas_configs()
    if keys.get("sasl.enabled.mechanisms") is None:
        # SCRAM's users are stored by the broker; PLAIN's come from its JAAS entry
        mechanisms = tuple(m for m in SASL_MECHANISMS if m != "PLAIN" or m in jaas)
    else:
        mechanisms = tuple(m.upper() for m in keys.items("sasl.enabled.mechanisms"))
    for mechanism in mechanisms:
        if mechanism not in SASL_MECHANISMS:
            raise ConfigError(
                f"{keys.name('sasl.enabled.mechanisms')}: {mechanism} is not served "
                f"({', '.join(SASL_MECHANISMS)} are)"
            )
    if "PLAIN" in mechanisms and "PLAIN" not in jaas:
        raise ConfigError(
            f"{keys.prefix}plain.sasl.jaas.config must be set to enable PLAIN: "
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_NAME="PASSWORD";'
        )
    if not mechanisms:
        raise ConfigError(f"{keys.name('sasl.enabled.mechanisms')}: names no mechanism")
    users: dict[str, str] = {}
    if "PLAIN" in jaas:
        try:
            users = plain_users(parse_jaas_config(jaas["PLAIN"]))
        except ValueError as exc:  # names no password: the parser quotes no value
            raise ConfigError(f"{keys.prefix}plain.sasl.jaas.config: {exc}") from None
    return SaslSettings(enabled_mechanisms=mechanisms, jaas_configs=jaas, plain_users=users)


def _reauth_ms(keys: _ListenerKeys) -> int:
    text = keys.get("connections.max.reauth.ms") or "0"
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(
            f"{keys.name('connections.max.reauth.ms')}={text!r}: not an integer"
        ) from None
    if value < 0:
        raise ConfigError(f"{keys.name('connections.max.reauth.ms')}={value}: must be at least 0")
    return value


def listener_security(
    properties: Mapping[str, str], listeners: tuple[Listener, ...]
) -> dict[str, ListenerSecurity]:
    """Each listener's security, by listener name; ConfigError naming the first bad key."""
    protocol_map = parse_security_protocol_map(
        properties.get("listener.security.protocol.map", DEFAULT_SECURITY_PROTOCOL_MAP)
    )
    names = {listener.name for listener in listeners}
    for key in properties:
        match = _LISTENER_PREFIX.match(key)
        if match is not None and match["listener"].upper() not in names:
            raise ConfigError(f"{key}: there is no listener named {match['listener'].upper()}")
    security = {}
    for listener in listeners:
        protocol = protocol_map.get(listener.name)
        if protocol is None:
            raise ConfigError(
                f"listeners: {listener.name} has no security protocol in "
                f"listener.security.protocol.map ({', '.join(protocol_map) or 'empty'})"
            )
        keys = _ListenerKeys(properties, listener.name)
        sasl = protocol.startswith("SASL_")
        security[listener.name] = ListenerSecurity(
            listener_name=listener.name,
            security_protocol=protocol,
            tls=_tls_settings(keys) if protocol.endswith("SSL") else None,
            sasl=_sasl_settings(keys) if sasl else None,
            reauth_ms=_reauth_ms(keys) if sasl else 0,
        )
    return security


def inter_broker_listener(
    properties: Mapping[str, str], security: Mapping[str, ListenerSecurity], required: bool
) -> str:
    """The listener brokers use to reach each other: ``inter.broker.listener.name``, or the
    one whose protocol is ``security.inter.broker.protocol`` (PLAINTEXT by default)."""
    name = (properties.get("inter.broker.listener.name") or "").strip().upper()
    protocol = (properties.get("security.inter.broker.protocol") or "").strip().upper()
    if name and protocol:
        raise ConfigError(
            "inter.broker.listener.name and security.inter.broker.protocol: set only one"
        )
    if name:
        if name not in security:
            raise ConfigError(f"inter.broker.listener.name={name}: not one of the listeners")
        return name
    protocol = protocol or "PLAINTEXT"
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(f"security.inter.broker.protocol={protocol!r}: not a security protocol")
    if protocol in security:
        return protocol
    if required:
        raise ConfigError(
            f"no listener is named {protocol}, which brokers reach each other on: set "
            "inter.broker.listener.name to one of the listeners "
            f"({', '.join(security)})"
        )
    return next(iter(security))


def inter_broker_sasl_credentials(security: ListenerSecurity, mechanism: str) -> SaslCredentials:
    """Who this broker authenticates as to the others on the SASL listener ``security``
    (``sasl.mechanism.inter.broker.protocol`` = ``mechanism``): the ``username`` and
    ``password`` of the listener's JAAS entry for the mechanism, as in Kafka."""
    assert security.sasl is not None, "a SASL listener"
    name = security.listener_name
    key = "sasl.mechanism.inter.broker.protocol"
    if mechanism not in SASL_MECHANISMS:
        raise ConfigError(f"{key}={mechanism}: not served ({', '.join(SASL_MECHANISMS)} are)")
    jaas_key = f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    login_module = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
    needed = (
        f"{jaas_key} must give the user this broker authenticates as to the others on the "
        f'inter-broker listener {name}: {login_module} required username="NAME" '
        'password="PASSWORD";'
    )
    text = security.sasl.jaas_configs.get(mechanism)
    if text is None:
        raise ConfigError(needed)
    if mechanism not in security.sasl.enabled_mechanisms:
        raise ConfigError(
            f"{key}={mechanism} must be one of listener.name.{name.lower()}.sasl.enabled.mechanisms"
            f" ({', '.join(security.sasl.enabled_mechanisms)}): brokers authenticate to each "
            f"other with it on the inter-broker listener {name}"
        )
    try:
        return client_credentials(mechanism, parse_jaas_config(text))
    except ValueError as exc:  # names no value
        raise ConfigError(f"{needed} ({exc})") from None
