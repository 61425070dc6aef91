"""The broker's settings: Kafka's ``server.properties`` keys, read and checked.

Values come from a properties file and ``--override key=value`` pairs (the
overrides win). Every key must be known: a misspelt key or a bad value stops
startup with a :class:`ConfigError` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wirekafka.listener_security import (
    ListenerSecurity,
    inter_broker_listener,
    inter_broker_sasl_credentials,
    is_security_key,
    listener_security,
)
from wirekafka.listeners import Listener, parse_http_listener, parse_listeners
from wirekafka.security.authorizer import AUTHORIZER_DEFAULTS, AuthorizerConfig, authorizer_config
from wirekafka.security.sasl_client import SaslCredentials
from wirekafka.storage.config import (
    BROKER_LOG_KEYS,
    ConfigError,
    LogConfig,
    log_config_from_properties,
)

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
DEFAULT_LOG_DIR = "./wirekafka-data"
MAX_INFLATION = 64  # a batch's records inflate to at most this times message.max.bytes

# key -> default value as text (None: no default); what this broker reads besides log.*.
BROKER_DEFAULTS: dict[str, str | None] = {
    "broker.id": "0",
    "listeners": DEFAULT_LISTENERS,
    "advertised.listeners": None,
    "log.dirs": None,
    "log.dir": DEFAULT_LOG_DIR,
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "message.max.bytes": "1048588",
    "socket.request.max.bytes": "104857600",
    "connections.max.idle.ms": "600000",
    "log.retention.check.interval.ms": "300000",
    "log.flush.scheduler.interval.ms": "1000",
    "log.flush.offset.checkpoint.interval.ms": "60000",
    "producer.id.expiration.ms": "86400000",
    "producer.id.expiration.check.interval.ms": "600000",
    "cluster.id": None,
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.initial.rebalance.delay.ms": "3000",
    "offsets.topic.num.partitions": "50",
    "offsets.retention.minutes": "10080",
    "offsets.retention.check.interval.ms": "600000",
    "offset.metadata.max.bytes": "4096",
    "log.cleaner.backoff.ms": "15000",
    "zookeeper.connect": None,
    "zookeeper.session.timeout.ms": "18000",
    "zookeeper.connection.timeout.ms": None,
    # None: derived from the open file limit (wirekafka.fd_budget)
    "max.connections": None,
    "max.connections.per.ip": None,
    "max.broker.partitions": None,
    "max.connections.per.ip.overrides": "",
    "queued.max.request.bytes": None,  # None: socket.request.max.bytes
    # replication (min.insync.replicas and unclean.leader.election.enable are also
    # topic configs: storage/config.py's log keys)
    "offsets.topic.replication.factor": "3",
    "replica.lag.time.max.ms": "30000",
    "auto.leader.rebalance.enable": "true",
    "replica.fetch.max.bytes": "1048576",
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.min.bytes": "1",
    "controlled.shutdown.enable": "true",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "5000",
    # wirekafka's own: where /metrics and /health are served over HTTP (empty: nowhere)
    "metrics.listener": "",
    # security (the listeners' own keys are wirekafka.listener_security's)
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "connection.failed.authentication.delay.ms": "100",
    "sasl.server.max.receive.size": "524288",
    # authorizer.class.name (Kafka's class names of the built-in ACL authorizer), super.users,
    # allow.everyone.if.no.acl.found
    **AUTHORIZER_DEFAULTS,
}

# Kafka's check of the hosts in max.connections.per.ip.overrides (Utils.validHostPattern)
_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]+")


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """The broker's settings, read by :func:`broker_config_from_properties`,
    which holds the defaults (``BROKER_DEFAULTS``, and LogConfig's for ``log.*``)."""

    broker_id: int
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    log_dirs: tuple[Path, ...]
    num_partitions: int
    default_replication_factor: int
    auto_create_topics_enable: bool
    message_max_bytes: int
    socket_request_max_bytes: int
    connections_max_idle_ms: int
    log_retention_check_interval_ms: int
    log_flush_scheduler_interval_ms: int
    log_flush_offset_checkpoint_interval_ms: int
    producer_id_expiration_ms: int
    producer_id_expiration_check_interval_ms: int
    cluster_id: str | None
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_initial_rebalance_delay_ms: int
    offsets_topic_num_partitions: int
    offsets_retention_ms: int
    offsets_retention_check_interval_ms: int
    offset_metadata_max_bytes: int
    log_cleaner_backoff_ms: int
    zookeeper_connect: str | None  # None: the embedded default, no ZooKeeper
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int
    max_connections: int | None  # None: half of the file descriptors (wirekafka.fd_budget)
    max_connections_per_ip: int | None  # None: max_connections
    max_broker_partitions: int | None  # None: one per file descriptor left for log files
    max_connections_per_ip_overrides: Mapping[str, int]  # host or address -> its limit
    queued_max_request_bytes: int  # requests being received or waiting to be handled, in bytes
    # __consumer_offsets' replicas, at most the live brokers when it is created
    offsets_topic_replication_factor: int
    replica_lag_time_max_ms: int  # a follower this far behind leaves the ISR
    auto_leader_rebalance_enable: bool  # preferred replicas take leadership back
    replica_fetch_max_bytes: int  # a follower's fetch: per partition
    replica_fetch_wait_max_ms: int  # a follower's fetch: longest wait
    replica_fetch_min_bytes: int  # a follower's fetch: bytes to wait for
    # a clean stop with ZooKeeper asks the controller to move leaderships away first
    controlled_shutdown_enable: bool
    controlled_shutdown_max_retries: int  # attempts at it (Kafka counts them so)
    controlled_shutdown_retry_backoff_ms: int  # the wait between two attempts
    metrics_listener: Listener | None  # http://host:port of /metrics and /health; None: off
    listener_security: Mapping[str, ListenerSecurity]  # by listener name
    inter_broker_listener_name: str  # the listener brokers reach each other on
    sasl_mechanism_inter_broker_protocol: str
    # who this broker authenticates as to the others (ZooKeeper mode, a SASL inter-broker
    # listener); None: they are not reached over SASL
    inter_broker_sasl_credentials: SaslCredentials | None
    connection_failed_authentication_delay_ms: int  # a failed login is answered, then closed
    sasl_server_max_receive_size: int  # the largest SASL token before authentication
    authorizer: AuthorizerConfig | None  # None: no authorizer.class.name, every request allowed
    log: LogConfig  # also min.insync.replicas, unclean.leader.election.enable
    properties: Mapping[str, str]  # as given, for DescribeConfigs

    @property
    def max_inflated_bytes(self) -> int:
        """How far the records of one compressed batch may inflate (produce checks,
        down-conversion): beyond any ratio a producer's batch reaches in practice,
        and a bound on what a small hostile payload can cost."""
        return MAX_INFLATION * self.message_max_bytes


def read_properties_file(path: Path) -> dict[str, str]:
    """``key=value`` lines (``:`` also separates); ``#`` and ``!`` start comments."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    properties: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            raise ConfigError(f"{path}:{number}: expected key=value, got {raw!r}")
        properties[line[:cut].strip()] = line[cut + 1 :].strip()
    return properties


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    properties = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override {pair!r}: expected key=value")
        properties[key.strip()] = value.strip()
    return properties


def _int(properties: Mapping[str, str], key: str, minimum: int, maximum: int = 2**63 - 1) -> int:
    text = properties.get(key, BROKER_DEFAULTS[key])
    try:
        value = int(str(text))
    except ValueError:
        raise ConfigError(f"{key}={text!r}: not an integer") from None
    if not minimum <= value <= maximum:
        raise ConfigError(f"{key}={value}: must be between {minimum} and {maximum}")
    return value


def _optional_int(
    properties: Mapping[str, str], key: str, minimum: int, maximum: int
) -> int | None:
    """An integer key without a default: None when it is not set."""
    if not properties.get(key):
        return None
    return _int(properties, key, minimum, maximum)


def _bool(properties: Mapping[str, str], key: str) -> bool:
    text = str(properties.get(key, BROKER_DEFAULTS[key])).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"{key}={text!r}: expected true or false")
    return text == "true"


def _overrides(properties: Mapping[str, str], key: str) -> dict[str, int]:
    """``host:count,...`` as Kafka reads it: the last ``:`` of an entry splits it (IPv6)."""
    text = str(properties.get(key, BROKER_DEFAULTS[key]) or "").strip()
    overrides: dict[str, int] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        host, sep, count = entry.rpartition(":")
        host = host.strip()
        if not sep or not _VALID_HOST.fullmatch(host):
            raise ConfigError(f"{key}={text!r}: {entry!r} is not of the form host:count")
        try:
            overrides[host] = int(count)
        except ValueError:
            raise ConfigError(f"{key}={text!r}: {count.strip()!r} is not an integer") from None
        if overrides[host] < 0:
            raise ConfigError(f"{key}={text!r}: the count for {host} must be at least 0")
    return overrides


def _queued_max_request_bytes(properties: Mapping[str, str], socket_request_max_bytes: int) -> int:
    """At least ``socket.request.max.bytes``, as Kafka requires, so any request fits; unset or
    Kafka's ``-1`` (unbounded there) is ``socket.request.max.bytes``: every resource is bounded."""
    key = "queued.max.request.bytes"
    if not properties.get(key):
        return socket_request_max_bytes
    value = _int(properties, key, -(2**63), 2**63 - 1)
    if value <= 0:
        return socket_request_max_bytes
    if value < socket_request_max_bytes:
        raise ConfigError(
            f"{key}={value}: must be at least socket.request.max.bytes "
            f"({socket_request_max_bytes}), or -1 for that"
        )
    return value


def _authorizer(properties: Mapping[str, str]) -> AuthorizerConfig | None:
    try:
        return authorizer_config(properties)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def broker_config_from_properties(properties: Mapping[str, str]) -> BrokerConfig:
    """Check every key and value; raise ConfigError naming the first bad one."""
    for key in properties:
        if key not in BROKER_DEFAULTS and key not in BROKER_LOG_KEYS and not is_security_key(key):
            raise ConfigError(f"unknown config key {key!r}")
    listeners = parse_listeners("listeners", properties.get("listeners", DEFAULT_LISTENERS))
    advertised_text = properties.get("advertised.listeners")
    advertised = (
        parse_listeners("advertised.listeners", advertised_text) if advertised_text else listeners
    )
    names = {listener.name for listener in listeners}
    for listener in advertised:
        if listener.name not in names:
            raise ConfigError(
                f"advertised.listeners: {listener.name} is not one of the listeners {sorted(names)}"
            )
    dirs_text = properties.get("log.dirs") or properties.get("log.dir") or DEFAULT_LOG_DIR
    log_dirs = tuple(Path(part.strip()) for part in dirs_text.split(",") if part.strip())
    if not log_dirs:
        raise ConfigError(f"log.dirs={dirs_text!r}: names no directory")
    cluster_id = properties.get("cluster.id") or None
    session_timeout = _int(properties, "zookeeper.session.timeout.ms", 1, 2**31 - 1)
    socket_request_max_bytes = _int(properties, "socket.request.max.bytes", 1, 2**31 - 1)
    per_ip_overrides = _overrides(properties, "max.connections.per.ip.overrides")
    max_connections_per_ip = _optional_int(properties, "max.connections.per.ip", 0, 2**31 - 1)
    if max_connections_per_ip == 0 and not per_ip_overrides:
        raise ConfigError(
            "max.connections.per.ip=0: allowed only with max.connections.per.ip.overrides"
        )
    replica_lag_time_max_ms = _int(properties, "replica.lag.time.max.ms", 0)
    replica_fetch_wait_max_ms = _int(properties, "replica.fetch.wait.max.ms", 0, 2**31 - 1)
    if replica_fetch_wait_max_ms > replica_lag_time_max_ms:  # as Kafka requires
        raise ConfigError(
            f"replica.fetch.wait.max.ms={replica_fetch_wait_max_ms} must be at most "
            f"replica.lag.time.max.ms={replica_lag_time_max_ms}, or followers drop out of the ISR"
        )
    security = listener_security(properties, listeners)
    zookeeper_connect = properties.get("zookeeper.connect") or None
    inter_broker_name = inter_broker_listener(
        properties, security, required=bool(zookeeper_connect)
    )
    inter_broker_mechanism = (
        (properties.get("sasl.mechanism.inter.broker.protocol") or "PLAIN").strip().upper()
    )
    inter_broker_credentials = None
    if zookeeper_connect and security[inter_broker_name].sasl is not None:
        inter_broker_credentials = inter_broker_sasl_credentials(
            security[inter_broker_name], inter_broker_mechanism
        )
    return BrokerConfig(
        broker_id=_int(properties, "broker.id", 0, 2**31 - 1),
        listeners=listeners,
        advertised_listeners=advertised,
        log_dirs=log_dirs,
        num_partitions=_int(properties, "num.partitions", 1, 2**31 - 1),
        default_replication_factor=_int(properties, "default.replication.factor", 1, 2**15 - 1),
        auto_create_topics_enable=_bool(properties, "auto.create.topics.enable"),
        message_max_bytes=_int(properties, "message.max.bytes", 0, 2**31 - 1),
        socket_request_max_bytes=socket_request_max_bytes,
        connections_max_idle_ms=_int(properties, "connections.max.idle.ms", -1),
        log_retention_check_interval_ms=_int(properties, "log.retention.check.interval.ms", 1),
        log_flush_scheduler_interval_ms=_int(properties, "log.flush.scheduler.interval.ms", 1),
        log_flush_offset_checkpoint_interval_ms=_int(
            properties, "log.flush.offset.checkpoint.interval.ms", 1, 2**31 - 1
        ),
        producer_id_expiration_ms=_int(properties, "producer.id.expiration.ms", 1),
        producer_id_expiration_check_interval_ms=_int(
            properties, "producer.id.expiration.check.interval.ms", 1
        ),
        cluster_id=cluster_id,
        group_min_session_timeout_ms=_int(properties, "group.min.session.timeout.ms", 0, 2**31 - 1),
        group_max_session_timeout_ms=_int(properties, "group.max.session.timeout.ms", 0, 2**31 - 1),
        group_initial_rebalance_delay_ms=_int(
            properties, "group.initial.rebalance.delay.ms", 0, 2**31 - 1
        ),
        offsets_topic_num_partitions=_int(properties, "offsets.topic.num.partitions", 1, 10_000),
        offsets_retention_ms=_int(properties, "offsets.retention.minutes", 1, 2**31 - 1) * 60_000,
        offsets_retention_check_interval_ms=_int(
            properties, "offsets.retention.check.interval.ms", 1
        ),
        offset_metadata_max_bytes=_int(properties, "offset.metadata.max.bytes", 0, 2**31 - 1),
        log_cleaner_backoff_ms=_int(properties, "log.cleaner.backoff.ms", 1),
        zookeeper_connect=zookeeper_connect,
        zookeeper_session_timeout_ms=session_timeout,
        zookeeper_connection_timeout_ms=(
            _int(properties, "zookeeper.connection.timeout.ms", 1, 2**31 - 1)
            if properties.get("zookeeper.connection.timeout.ms")
            else session_timeout
        ),
        max_connections=_optional_int(properties, "max.connections", 1, 2**31 - 1),
        max_connections_per_ip=max_connections_per_ip,
        max_broker_partitions=_optional_int(properties, "max.broker.partitions", 1, 2**31 - 1),
        max_connections_per_ip_overrides=per_ip_overrides,
        queued_max_request_bytes=_queued_max_request_bytes(properties, socket_request_max_bytes),
        offsets_topic_replication_factor=_int(
            properties, "offsets.topic.replication.factor", 1, 2**15 - 1
        ),
        replica_lag_time_max_ms=replica_lag_time_max_ms,
        auto_leader_rebalance_enable=_bool(properties, "auto.leader.rebalance.enable"),
        replica_fetch_max_bytes=_int(properties, "replica.fetch.max.bytes", 0, 2**31 - 1),
        replica_fetch_wait_max_ms=replica_fetch_wait_max_ms,
        replica_fetch_min_bytes=_int(properties, "replica.fetch.min.bytes", 0, 2**31 - 1),
        controlled_shutdown_enable=_bool(properties, "controlled.shutdown.enable"),
        controlled_shutdown_max_retries=_int(
            properties, "controlled.shutdown.max.retries", 0, 2**31 - 1
        ),
        controlled_shutdown_retry_backoff_ms=_int(
            properties, "controlled.shutdown.retry.backoff.ms", 0
        ),
        metrics_listener=parse_http_listener(
            "metrics.listener", properties.get("metrics.listener", "")
        ),
        listener_security=security,
        inter_broker_listener_name=inter_broker_name,
        sasl_mechanism_inter_broker_protocol=inter_broker_mechanism,
        inter_broker_sasl_credentials=inter_broker_credentials,
        connection_failed_authentication_delay_ms=_int(
            properties, "connection.failed.authentication.delay.ms", 0, 2**31 - 1
        ),
        sasl_server_max_receive_size=_int(properties, "sasl.server.max.receive.size", 1, 2**31 - 1),
        authorizer=_authorizer(properties),
        log=log_config_from_properties(properties),
        properties=dict(properties),
    )
