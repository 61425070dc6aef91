"""Kafka's ZooKeeper layout: znode paths and the JSON kept in them (sans-IO).

Kafka in ZooKeeper mode (2.8 to 3.x) keeps its cluster metadata in znodes whose
paths and JSON layouts are defined in Kafka's ``core/src/main/scala/kafka/zk/ZkData.scala``.
This module encodes those layouts as Kafka writes them and decodes them as
Kafka reads them, with no ZooKeeper client and no I/O.

Encoding follows Kafka byte for byte where the order is fixed, and otherwise
uses the key order Kafka's Jackson mapper is commonly seen to produce; JSON is
compact (no spaces) and UTF-8 without ``\\u`` escapes of non-ASCII characters,
as Jackson writes it.

Decoding follows Kafka's typed reads (``kafka.utils.json.DecodeJson``): an
``Int`` must be a JSON integer within 32 bits (not a float, not a boolean, not
a string), a ``String`` a JSON string. Where Kafka swallows a JSON parse error
(``Json.parseBytes`` returns ``None``) and carries on with an empty value, this
module raises :class:`ZnodeFormatError` instead: every decoder raises only that
exception on bad input.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

__all__ = [
    "ADMIN_PATH",
    "BROKERS_PATH",
    "BROKER_IDS_PATH",
    "BROKER_SEQID_PATH",
    "CLUSTER_ID_PATH",
    "CLUSTER_PATH",
    "CONFIG_CHANGES_PATH",
    "CONFIG_CHANGE_SEQUENCE_PREFIX",
    "CONFIG_ENTITY_TYPES",
    "CONFIG_PATH",
    "CONSUMERS_PATH",
    "CONTROLLER_EPOCH_PATH",
    "CONTROLLER_PATH",
    "DEFAULT_SECURITY_PROTOCOL_MAP",
    "DELETE_TOPICS_PATH",
    "ISR_CHANGE_NOTIFICATION_PATH",
    "LEADER_RECOVERY_STATE_RECOVERED",
    "LEADER_RECOVERY_STATE_RECOVERING",
    "LOG_DIR_EVENT_NOTIFICATION_PATH",
    "PERSISTENT_ZK_PATHS",
    "PRODUCER_ID_BLOCK_PATH",
    "PRODUCER_ID_BLOCK_SIZE",
    "SECURITY_PROTOCOLS",
    "TOPICS_PATH",
    "BrokerRegistration",
    "ClusterId",
    "ConfigChangeNotification",
    "ControllerRegistration",
    "EndPoint",
    "EntityConfig",
    "PartitionState",
    "ProducerIdBlock",
    "SupportedVersionRange",
    "TopicAssignment",
    "ZnodeFormatError",
    "broker_path",
    "config_change_path",
    "config_entity_path",
    "config_entity_type_path",
    "consumer_offset_path",
    "decode_broker",
    "decode_cluster_id",
    "decode_config_change",
    "decode_consumer_offset",
    "decode_controller",
    "decode_controller_epoch",
    "decode_entity_config",
    "decode_partition_state",
    "decode_producer_id_block",
    "decode_topic_assignment",
    "delete_topic_path",
    "encode_broker",
    "encode_cluster_id",
    "encode_config_change",
    "encode_consumer_offset",
    "encode_controller",
    "encode_controller_epoch",
    "encode_entity_config",
    "encode_partition_state",
    "encode_producer_id_block",
    "encode_topic_assignment",
    "iter_persistent_paths",
    "partition_path",
    "partition_state_path",
    "topic_config_path",
    "topic_partitions_path",
    "topic_path",
]

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT16_MAX = 2**15 - 1


class ZnodeFormatError(ValueError):
    """The bytes of a znode are not the JSON (or number) Kafka keeps there."""


# ---------------------------------------------------------------------------
# Paths (ZkData.scala: the ``path`` of each ``*ZNode`` object)

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQID_PATH = "/brokers/seqid"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
CONFIG_PATH = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_SEQUENCE_PREFIX = "config_change_"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
CONSUMERS_PATH = "/consumers"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"

# ConfigType.all (2.8-3.5, kafka.server) / ConfigType.ALL (3.6+, server-common), in order.
CONFIG_ENTITY_TYPES: tuple[str, ...] = ("topics", "clients", "users", "brokers", "ips")

# ZkData.PersistentZkPaths: created (with no data) at every broker start, in this order.
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    *(f"{CONFIG_PATH}/{entity_type}" for entity_type in CONFIG_ENTITY_TYPES),
)


def _segment(what: str, value: str) -> str:
    if not isinstance(value, str) or not value or "/" in value or value in (".", ".."):
        raise ValueError(f"{what} {value!r} cannot be a znode name")
    return value


def _int_segment(what: str, value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an int, got {value!r}")
    return str(value)


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<id>``: the broker's ephemeral registration (:func:`encode_broker`)."""
    return f"{BROKER_IDS_PATH}/{_int_segment('broker id', broker_id)}"


def topic_path(topic: str) -> str:
    """``/brokers/topics/<topic>``: the replica assignment (:func:`encode_topic_assignment`)."""
    return f"{TOPICS_PATH}/{_segment('topic', topic)}"


def topic_partitions_path(topic: str) -> str:
    """``/brokers/topics/<topic>/partitions`` (no data)."""
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<p>`` (no data)."""
    return f"{topic_partitions_path(topic)}/{_int_segment('partition', partition)}"


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<p>/state`` (:func:`encode_partition_state`)."""
    return f"{partition_path(topic, partition)}/state"


def config_entity_type_path(entity_type: str) -> str:
    """``/config/<entity type>``, e.g. ``/config/topics``."""
    return f"{CONFIG_PATH}/{_segment('config entity type', entity_type)}"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    """``/config/<entity type>/<entity name>`` (:func:`encode_entity_config`)."""
    return f"{config_entity_type_path(entity_type)}/{_segment('config entity', entity_name)}"


def topic_config_path(topic: str) -> str:
    """``/config/topics/<topic>``: the topic's config overrides (:func:`encode_entity_config`)."""
    return config_entity_path("topics", topic)


def config_change_path(sequence: str = "") -> str:
    """``/config/changes/config_change_<seq>``; without ``sequence``, the prefix to
    create a persistent sequential znode with (:func:`encode_config_change`)."""
    return f"{CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_SEQUENCE_PREFIX}{sequence}"


def delete_topic_path(topic: str) -> str:
    """``/admin/delete_topics/<topic>``: a request to delete the topic (no data)."""
    return f"{DELETE_TOPICS_PATH}/{_segment('topic', topic)}"


def consumer_offset_path(group: str, topic: str, partition: int) -> str:
    """``/consumers/<group>/offsets/<topic>/<p>``: an old (ZooKeeper) consumer's offset."""
    return (
        f"{CONSUMERS_PATH}/{_segment('group', group)}/offsets/"
        f"{_segment('topic', topic)}/{_int_segment('partition', partition)}"
    )


# ---------------------------------------------------------------------------
# JSON helpers: Jackson-like output, Kafka-like typed reads


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _fail(what: str, message: str) -> NoReturn:
    raise ZnodeFormatError(f"{what}: {message}")


def _show(data: bytes) -> str:
    text = repr(data[:200])
    return text + ("..." if len(data) > 200 else "")


def _bytes(what: str, data: object) -> bytes:
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        _fail(what, f"expected the znode's bytes, got {type(data).__name__}")
    if not data:
        _fail(what, "the znode has no data")
    return data


def _text(what: str, data: object) -> str:
    raw = _bytes(what, data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(what, f"not UTF-8 ({exc.reason} at byte {exc.start}): {_show(raw)}")


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _object(what: str, data: object) -> dict[str, Any]:
    text = _text(what, data)
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        _fail(what, f"not JSON ({exc}): {_show(text.encode())}")
    if not isinstance(value, dict):
        _fail(what, f"expected a JSON object, got {_json_type(value)}: {_show(text.encode())}")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _is_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _as_int32(what: str, key: str, value: object) -> int:
    if not _is_int(value, INT32_MIN, INT32_MAX):
        _fail(what, f"{key!r} must be a 32-bit integer, got {_json_type(value)} {value!r}")
    assert isinstance(value, int)
    return value


def _as_str(what: str, key: str, value: object) -> str:
    if not isinstance(value, str):
        _fail(what, f"{key!r} must be a string, got {_json_type(value)} {value!r}")
    return value


def _as_object(what: str, key: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(what, f"{key!r} must be a JSON object, got {_json_type(value)}")
    return value


def _as_int32_list(what: str, key: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list):
        _fail(what, f"{key!r} must be an array of integers, got {_json_type(value)}")
    return tuple(_as_int32(what, f"{key}[{i}]", item) for i, item in enumerate(value))


def _required(what: str, obj: Mapping[str, Any], key: str) -> Any:
    if key not in obj:
        _fail(what, f"the key {key!r} is missing")
    return obj[key]


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _parse_java_integer(what: str, key: str, text: str, low: int, high: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: optional sign, ASCII digits, in range."""
    if not _JAVA_INT.fullmatch(text):
        _fail(what, f"{key} must be a decimal integer, got {text!r}")
    value = int(text)
    if not low <= value <= high:
        _fail(what, f"{key} {text} is out of range")
    return value


def _timestamp(what: str, obj: Mapping[str, Any]) -> int | None:
    """Kafka writes ``"timestamp"`` as a string of epoch milliseconds and never reads it back.

    Absent or null: ``None``; a JSON integer is taken too; anything else is an error.
    """
    value = obj.get("timestamp")
    if value is None:
        return None
    if _is_int(value, INT64_MIN, INT64_MAX):
        assert isinstance(value, int)
        return value
    if isinstance(value, str):
        return _parse_java_integer(what, "'timestamp'", value, INT64_MIN, INT64_MAX)
    _fail(what, f"'timestamp' must be a string of milliseconds, got {_json_type(value)}")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _check_int(name: str, value: object, low: int = INT32_MIN, high: int = INT32_MAX) -> int:
    if not _is_int(value, low, high):
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
    assert isinstance(value, int)
    return value


# ---------------------------------------------------------------------------
# /brokers/ids/<id> (BrokerIdZNode, EndPoint, SupportedVersionRange)

# SecurityProtocol's names; the listener named after each is the default map
# (SocketServerConfigs.DEFAULT_NAME_TO_SECURITY_PROTO, EndPoint.DefaultSecurityProtocolMap).
SECURITY_PROTOCOLS: tuple[str, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_SECURITY_PROTOCOL_MAP: Mapping[str, str] = {name: name for name in SECURITY_PROTOCOLS}

# EndPoint.uriParseExp / SocketServerConfigs.URI_PARSE_REGEXP (whole-string match).
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One advertised listener: ``CLIENT://host:9092``; ``host`` None is the wildcard (``CLIENT://:9092``)."""

    listener_name: str
    security_protocol: str
    host: str | None
    port: int

    @property
    def connection_string(self) -> str:
        """``EndPoint.connectionString``: IPv6 hosts in brackets (``Utils.formatAddress``)."""
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:
            hostport = f"[{self.host}]:{self.port}"
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.listener_name}://{hostport}"


@dataclass(frozen=True, slots=True)
class SupportedVersionRange:
    """A supported feature's range, written ``{"min_version":N,"max_version":M}``."""

    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The JSON of ``/brokers/ids/<id>`` (``BrokerIdZNode``); the id itself is the znode's name.

    ``version`` 5 is what Kafka 2.7+ writes (inter.broker.protocol.version >= 2.7);
    ``timestamp_ms`` None encodes the current time. ``host`` and ``port`` (top-level keys,
    for old clients such as pykafka) are those of the first PLAINTEXT endpoint, or
    None and -1 when there is none, as Kafka writes them.
    """

    endpoints: tuple[EndPoint, ...]
    jmx_port: int = -1
    rack: str | None = None
    timestamp_ms: int | None = None
    features: Mapping[str, SupportedVersionRange] = field(default_factory=dict)
    version: int = 5

    @property
    def plaintext_endpoint(self) -> EndPoint | None:
        for endpoint in self.endpoints:
            if endpoint.security_protocol == "PLAINTEXT":
                return endpoint
        return None

    @property
    def host(self) -> str | None:
        endpoint = self.plaintext_endpoint
        return None if endpoint is None else endpoint.host

    @property
    def port(self) -> int:
        endpoint = self.plaintext_endpoint
        return -1 if endpoint is None else endpoint.port


def encode_broker(registration: BrokerRegistration) -> bytes:
    """``BrokerIdZNode.encode``: keys by version, as Kafka writes them.

    All versions: version, host, port, endpoints, jmx_port, timestamp (a string);
    3+: rack (when set); 4+: listener_security_protocol_map; 5+: features.
    """
    version = _check_int("version", registration.version, 1)
    jmx_port = _check_int("jmx_port", registration.jmx_port)
    for endpoint in registration.endpoints:
        if endpoint.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"unknown security protocol {endpoint.security_protocol!r}")
        _check_int("port", endpoint.port)
    timestamp = registration.timestamp_ms
    timestamp = (
        _now_ms() if timestamp is None else _check_int("timestamp_ms", timestamp, 0, INT64_MAX)
    )
    obj: dict[str, object] = {}
    if version >= 5:
        obj["features"] = {
            name: {"min_version": r.min_version, "max_version": r.max_version}
            for name, r in registration.features.items()
        }
    if version >= 4:
        obj["listener_security_protocol_map"] = {
            e.listener_name: e.security_protocol for e in registration.endpoints
        }
    obj["endpoints"] = [e.connection_string for e in registration.endpoints]
    if version >= 3 and registration.rack is not None:
        obj["rack"] = registration.rack
    obj["jmx_port"] = jmx_port
    obj["port"] = registration.port
    obj["host"] = registration.host
    obj["version"] = version
    obj["timestamp"] = str(timestamp)
    return _dumps(obj)


def _security_protocol_map(what: str, value: object) -> dict[str, str]:
    if value is None:
        return dict(DEFAULT_SECURITY_PROTOCOL_MAP)
    result: dict[str, str] = {}
    key = "listener_security_protocol_map"
    for listener, protocol in _as_object(what, key, value).items():
        name = _as_str(what, f"{key}.{listener}", protocol).upper()
        if name not in SECURITY_PROTOCOLS:
            _fail(what, f"{key}: unknown security protocol {protocol!r} for listener {listener!r}")
        result[listener] = name
    return result


def _parse_endpoint(what: str, text: str, protocols: Mapping[str, str]) -> EndPoint:
    match = _ENDPOINT.fullmatch(text)
    if match is None:
        _fail(what, f"unable to parse {text!r} to a broker endpoint")
    listener = match.group(1).upper()
    host = match.group(2) or None
    port = _parse_java_integer(
        what, f"the port of endpoint {text!r}", match.group(3), INT32_MIN, INT32_MAX
    )
    if listener not in protocols:
        _fail(what, f"no security protocol defined for listener {listener}")
    return EndPoint(listener, protocols[listener], host, port)


def _features(what: str, value: object) -> dict[str, SupportedVersionRange]:
    if value is None:
        return {}
    result: dict[str, SupportedVersionRange] = {}
    for name, item in _as_object(what, "features", value).items():
        ranges = _as_object(what, f"features.{name}", item)
        levels = {k: _as_int32(what, f"features.{name}.{k}", v) for k, v in ranges.items()}
        if "min_version" not in levels or "max_version" not in levels:
            _fail(what, f"features.{name} must have 'min_version' and 'max_version'")
        low, high = levels["min_version"], levels["max_version"]
        if not (0 <= low <= high <= INT16_MAX):
            _fail(
                what,
                f"features.{name}: expected 0 <= min_version <= max_version, got {low}, {high}",
            )
        result[name] = SupportedVersionRange(low, high)
    return result


def decode_broker(data: bytes) -> BrokerRegistration:
    """``BrokerIdZNode.decode``: version >= 1 and jmx_port required; version 1 reads
    host and port (a PLAINTEXT endpoint), later versions read ``endpoints`` with
    ``listener_security_protocol_map`` (default: listener name = protocol name)."""
    what = "broker registration"
    obj = _object(what, data)
    version = _as_int32(what, "version", _required(what, obj, "version"))
    jmx_port = _as_int32(what, "jmx_port", _required(what, obj, "jmx_port"))
    if version < 1:
        _fail(what, f"unsupported version {version}")
    if version == 1:
        host = _as_str(what, "host", _required(what, obj, "host"))
        port = _as_int32(what, "port", _required(what, obj, "port"))
        endpoints: tuple[EndPoint, ...] = (EndPoint("PLAINTEXT", "PLAINTEXT", host, port),)
    else:
        protocols = _security_protocol_map(what, obj.get("listener_security_protocol_map"))
        raw = _required(what, obj, "endpoints")
        if not isinstance(raw, list):
            _fail(what, f"'endpoints' must be an array of strings, got {_json_type(raw)}")
        endpoints = tuple(
            _parse_endpoint(what, _as_str(what, f"endpoints[{i}]", item), protocols)
            for i, item in enumerate(raw)
        )
    rack = obj.get("rack")
    if rack is not None:
        rack = _as_str(what, "rack", rack)
    return BrokerRegistration(
        endpoints=endpoints,
        jmx_port=jmx_port,
        rack=rack,
        timestamp_ms=_timestamp(what, obj),
        features=_features(what, obj.get("features")),
        version=version,
    )


# ---------------------------------------------------------------------------
# /brokers/topics/<topic> (TopicZNode)

_UUID_LENGTH = 16


def _check_topic_id(what: str, topic_id: str) -> str:
    """``Uuid.fromString``: at most 24 characters of URL-safe base64 for 16 bytes."""
    if len(topic_id) > 24:
        _fail(what, f"topic_id {topic_id[:24]!r}... is too long to be a base64 UUID")
    if not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", topic_id):
        _fail(what, f"topic_id {topic_id!r} is not URL-safe base64")
    padded = topic_id + "=" * (-len(topic_id) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        _fail(what, f"topic_id {topic_id!r} is not URL-safe base64")
    if len(raw) != _UUID_LENGTH:
        _fail(what, f"topic_id {topic_id!r} does not decode to the 16 bytes of a UUID")
    return topic_id


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """The JSON of ``/brokers/topics/<topic>``: partition -> replicas (broker ids, preferred leader first).

    ``adding_replicas`` / ``removing_replicas`` are the partitions under reassignment
    (KIP-455). ``topic_id`` is Kafka's base64 Uuid string (22 characters), written
    when known. Kafka 2.8+ writes version 3; decoding ignores the version as Kafka does
    (it is None when the key is absent).
    """

    partitions: Mapping[int, tuple[int, ...]]
    topic_id: str | None = None
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    version: int | None = 3


def _assignment_json(name: str, mapping: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {}
    for partition in sorted(mapping):
        _check_int(f"{name} partition", partition, 0)
        replicas = [_check_int(f"{name} replica", r) for r in mapping[partition]]
        if name == "partitions" or replicas:
            result[str(partition)] = replicas
    return result


def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    """``TopicZNode.encode``.

    Version 3 (Kafka 2.8+): ``{"partitions":{"0":[1,2]},"topic_id":"...",
    "adding_replicas":{},"removing_replicas":{},"version":3}`` (topic_id only when set);
    version 2 (2.4-2.7) has no topic_id; version 1 (before 2.4) is ``{"version":1,"partitions":{...}}``.
    """
    version = assignment.version if assignment.version is not None else 3
    _check_int("version", version, 1)
    obj: dict[str, object] = {"partitions": _assignment_json("partitions", assignment.partitions)}
    if version >= 3 and assignment.topic_id is not None:
        try:
            obj["topic_id"] = _check_topic_id("topic_id", assignment.topic_id)
        except ZnodeFormatError as exc:
            raise ValueError(str(exc)) from None
    if version >= 2:
        obj["adding_replicas"] = _assignment_json("adding_replicas", assignment.adding_replicas)
        obj["removing_replicas"] = _assignment_json(
            "removing_replicas", assignment.removing_replicas
        )
    obj["version"] = version
    return _dumps(obj)


def _partition_key(what: str, key: str) -> int:
    partition = _parse_java_integer(what, f"partition key {key!r}", key, INT32_MIN, INT32_MAX)
    if partition < 0:
        _fail(what, f"partition key {key!r} is negative")
    return partition


def decode_topic_assignment(data: bytes) -> TopicAssignment:
    """``TopicZNode.decode``: any version; ``partitions``, ``adding_replicas``,
    ``removing_replicas`` and ``topic_id`` are all optional. As in Kafka, the
    adding/removing lists are read only for partitions in ``partitions``."""
    what = "topic assignment"
    obj = _object(what, data)
    version = obj.get("version")
    if version is not None:
        version = _as_int32(what, "version", version)
    topic_id = obj.get("topic_id")
    if topic_id is not None:
        topic_id = _check_topic_id(what, _as_str(what, "topic_id", topic_id))
    partitions_json = obj.get("partitions")
    partitions_json = (
        {} if partitions_json is None else _as_object(what, "partitions", partitions_json)
    )
    extra: dict[str, dict[str, Any]] = {}
    for key in ("adding_replicas", "removing_replicas"):
        value = obj.get(key)
        extra[key] = {} if value is None else _as_object(what, key, value)
    partitions: dict[int, tuple[int, ...]] = {}
    adding: dict[int, tuple[int, ...]] = {}
    removing: dict[int, tuple[int, ...]] = {}
    for key, replicas in partitions_json.items():
        partition = _partition_key(what, key)
        partitions[partition] = _as_int32_list(what, f"partitions.{key}", replicas)
        for name, target in (("adding_replicas", adding), ("removing_replicas", removing)):
            if key in extra[name]:
                listed = _as_int32_list(what, f"{name}.{key}", extra[name][key])
                if listed:
                    target[partition] = listed
    return TopicAssignment(
        partitions=dict(sorted(partitions.items())),
        topic_id=topic_id,
        adding_replicas=dict(sorted(adding.items())),
        removing_replicas=dict(sorted(removing.items())),
        version=version,
    )


# ---------------------------------------------------------------------------
# /brokers/topics/<topic>/partitions/<p>/state (TopicPartitionStateZNode)

LEADER_RECOVERY_STATE_RECOVERED = 0
LEADER_RECOVERY_STATE_RECOVERING = 1


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Leader, ISR and epochs of one partition; ``leader`` -1 when there is none.

    ``leader_recovery_state`` (KIP-704, Kafka 3.2+) is written only when not
    RECOVERED (0), and read as RECOVERED when absent.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERY_STATE_RECOVERED
    version: int = 1


def encode_partition_state(state: PartitionState) -> bytes:
    """``{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}``
    (+ ``"leader_recovery_state":1`` when recovering)."""
    obj: dict[str, object] = {
        "controller_epoch": _check_int("controller_epoch", state.controller_epoch),
        "leader": _check_int("leader", state.leader),
        "version": _check_int("version", state.version),
        "leader_epoch": _check_int("leader_epoch", state.leader_epoch),
        "isr": [_check_int("isr replica", r) for r in state.isr],
    }
    if state.leader_recovery_state not in (
        LEADER_RECOVERY_STATE_RECOVERED,
        LEADER_RECOVERY_STATE_RECOVERING,
    ):
        raise ValueError(f"unknown leader_recovery_state {state.leader_recovery_state!r}")
    if state.leader_recovery_state != LEADER_RECOVERY_STATE_RECOVERED:
        obj["leader_recovery_state"] = state.leader_recovery_state
    return _dumps(obj)


def decode_partition_state(data: bytes) -> PartitionState:
    """``TopicPartitionStateZNode.decode``: leader, leader_epoch, isr, controller_epoch
    required; leader_recovery_state optional (0 or 1); version read when present (else 1)."""
    what = "partition state"
    obj = _object(what, data)
    leader = _as_int32(what, "leader", _required(what, obj, "leader"))
    leader_epoch = _as_int32(what, "leader_epoch", _required(what, obj, "leader_epoch"))
    isr = _as_int32_list(what, "isr", _required(what, obj, "isr"))
    recovery = obj.get("leader_recovery_state")
    if recovery is None:
        recovery = LEADER_RECOVERY_STATE_RECOVERED
    recovery = _as_int32(what, "leader_recovery_state", recovery)
    if recovery not in (LEADER_RECOVERY_STATE_RECOVERED, LEADER_RECOVERY_STATE_RECOVERING):
        _fail(what, f"unknown leader_recovery_state {recovery}")
    controller_epoch = _as_int32(what, "controller_epoch", _required(what, obj, "controller_epoch"))
    version = obj.get("version")
    version = 1 if version is None else _as_int32(what, "version", version)
    return PartitionState(leader, leader_epoch, isr, controller_epoch, recovery, version)


# ---------------------------------------------------------------------------
# /controller and /controller_epoch (ControllerZNode, ControllerEpochZNode)


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """The JSON of the ephemeral ``/controller``.

    Version 2 (Kafka 3.4+) adds ``kraftControllerEpoch``: -1 for a ZooKeeper-mode
    controller. Version 1 (2.8-3.3) has none; it decodes as None.
    """

    broker_id: int
    timestamp_ms: int | None = None
    kraft_controller_epoch: int | None = -1
    version: int = 2


def encode_controller(controller: ControllerRegistration) -> bytes:
    """``{"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}``;
    version 1 without kraftControllerEpoch."""
    version = _check_int("version", controller.version, 1)
    timestamp = controller.timestamp_ms
    timestamp = (
        _now_ms() if timestamp is None else _check_int("timestamp_ms", timestamp, 0, INT64_MAX)
    )
    obj: dict[str, object] = {
        "version": version,
        "brokerid": _check_int("broker_id", controller.broker_id),
        "timestamp": str(timestamp),
    }
    if version >= 2:
        epoch = controller.kraft_controller_epoch
        obj["kraftControllerEpoch"] = (
            -1 if epoch is None else _check_int("kraft_controller_epoch", epoch)
        )
    return _dumps(obj)


def decode_controller(data: bytes) -> ControllerRegistration:
    """``ControllerZNode.decodeController``: brokerid required, kraftControllerEpoch optional."""
    what = "controller registration"
    obj = _object(what, data)
    broker_id = _as_int32(what, "brokerid", _required(what, obj, "brokerid"))
    epoch = obj.get("kraftControllerEpoch")
    if epoch is not None:
        epoch = _as_int32(what, "kraftControllerEpoch", epoch)
    version = obj.get("version")
    version = (
        (2 if epoch is not None else 1) if version is None else _as_int32(what, "version", version)
    )
    return ControllerRegistration(broker_id, _timestamp(what, obj), epoch, version)


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch``: the epoch as a decimal string, e.g. ``b"1"``."""
    return str(_check_int("controller epoch", epoch)).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    what = "controller epoch"
    return _parse_java_integer(what, "the epoch", _text(what, data), INT32_MIN, INT32_MAX)


# ---------------------------------------------------------------------------
# /config/<type>/<name> (ConfigEntityZNode) and /config/changes (ConfigEntityChangeNotification*)


@dataclass(frozen=True, slots=True)
class EntityConfig:
    """``{"version":1,"config":{"cleanup.policy":"compact"}}``: an entity's config overrides."""

    config: Mapping[str, str] = field(default_factory=dict)
    version: int = 1


def encode_entity_config(entity: EntityConfig) -> bytes:
    """``ConfigEntityZNode.encode``: values are strings, as in a java.util.Properties."""
    config: dict[str, str] = {}
    for key, value in entity.config.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"config keys and values must be strings, got {key!r}: {value!r}")
        config[key] = value
    return _dumps({"version": _check_int("version", entity.version), "config": config})


def decode_entity_config(data: bytes) -> EntityConfig:
    """``ConfigEntityZNode.decode``: a missing or null ``config`` is empty; values must be strings."""
    what = "entity config"
    obj = _object(what, data)
    version = obj.get("version")
    version = 1 if version is None else _as_int32(what, "version", version)
    raw = obj.get("config")
    config = {} if raw is None else _as_object(what, "config", raw)
    return EntityConfig(
        {key: _as_str(what, f"config.{key}", value) for key, value in config.items()}, version
    )


@dataclass(frozen=True, slots=True)
class ConfigChangeNotification:
    """A ``/config/changes/config_change_<seq>`` znode: which entity's config changed.

    Version 2 (written since 0.10.1): ``entity_path`` = ``<type>/<name>``, e.g. ``topics/foo``.
    Version 1 (read only): ``entity_type`` (``topics`` or ``clients``) and ``entity_name``.
    """

    entity_type: str
    entity_name: str

    @property
    def entity_path(self) -> str:
        return f"{self.entity_type}/{self.entity_name}"


def encode_config_change(change: ConfigChangeNotification) -> bytes:
    """``{"version":2,"entity_path":"topics/foo"}``."""
    _segment("config entity type", change.entity_type)
    return _dumps({"version": 2, "entity_path": change.entity_path})


def decode_config_change(data: bytes) -> ConfigChangeNotification:
    """``ZkConfigManager.ConfigChangedNotificationHandler``: version 1 or 2."""
    what = "config change notification"
    obj = _object(what, data)
    version = _as_int32(what, "version", _required(what, obj, "version"))
    if version == 1:
        entity_type = obj.get("entity_type")
        if entity_type not in ("topics", "clients"):
            _fail(
                what,
                f"version 1 must have 'entity_type' 'clients' or 'topics', got {entity_type!r}",
            )
        name = obj.get("entity_name")
        if name is None:
            _fail(what, "version 1 does not specify 'entity_name'")
        return ConfigChangeNotification(entity_type, _as_str(what, "entity_name", name))
    if version == 2:
        path = obj.get("entity_path")
        if path is None:
            _fail(what, "version 2 must specify 'entity_path'")
        path = _as_str(what, "entity_path", path)
        entity_type, slash, entity_name = path.partition("/")
        if not slash or not entity_type:
            _fail(what, f"'entity_path' must be <entity type>/<name>, got {path!r}")
        return ConfigChangeNotification(entity_type, entity_name)
    _fail(what, f"unknown version {version}")


# ---------------------------------------------------------------------------
# /consumers/<group>/offsets/<topic>/<p> (ConsumerOffset)


def encode_consumer_offset(offset: int) -> bytes:
    """The offset as a decimal string, e.g. ``b"42"``."""
    return str(_check_int("offset", offset, INT64_MIN, INT64_MAX)).encode("ascii")


def decode_consumer_offset(data: bytes) -> int:
    what = "consumer offset"
    return _parse_java_integer(what, "the offset", _text(what, data), INT64_MIN, INT64_MAX)


# ---------------------------------------------------------------------------
# /cluster/id (ClusterIdZNode)


@dataclass(frozen=True, slots=True)
class ClusterId:
    """``{"version":"1","id":"..."}`` -- the version is a JSON string here."""

    id: str
    version: str = "1"


def encode_cluster_id(cluster: ClusterId) -> bytes:
    if not isinstance(cluster.id, str) or not isinstance(cluster.version, str):
        raise ValueError("the cluster id and its version must be strings")
    return _dumps({"version": cluster.version, "id": cluster.id})


def decode_cluster_id(data: bytes) -> ClusterId:
    """``ClusterIdZNode.fromJson``: ``id`` (a string) required; ``version`` as written, "1" if absent."""
    what = "cluster id"
    obj = _object(what, data)
    cluster_id = _as_str(what, "id", _required(what, obj, "id"))
    version = obj.get("version", "1")
    if isinstance(version, bool) or not isinstance(version, (str, int)):
        _fail(what, f"'version' must be a string, got {_json_type(version)}")
    return ClusterId(cluster_id, str(version))


# ---------------------------------------------------------------------------
# /latest_producer_id_block (ProducerIdBlockZNode)

PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last block of producer ids handed out: ``block_start`` .. ``block_end`` inclusive."""

    broker: int
    block_start: int
    block_end: int
    version: int = 1

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1

    def next_block(self, broker: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
        """The block after this one, for ``broker`` (what ZkProducerIdManager writes next)."""
        return ProducerIdBlock(broker, self.block_end + 1, self.block_end + size)

    @classmethod
    def first(cls, broker: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
        """The first block, when ``/latest_producer_id_block`` is empty."""
        return cls(broker, 0, size - 1)


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    """``{"version":1,"broker":0,"block_start":"0","block_end":"999"}`` -- start and end as strings."""
    start = _check_int("block_start", block.block_start, 0, INT64_MAX)
    end = _check_int("block_end", block.block_end, 0, INT64_MAX)
    if not 1 <= end - start + 1 <= INT32_MAX:
        raise ValueError(f"block {start}..{end} is empty or too large")
    return _dumps(
        {
            "version": _check_int("version", block.version),
            "broker": _check_int("broker", block.broker),
            "block_start": str(start),
            "block_end": str(end),
        }
    )


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    """``ProducerIdBlockZNode.parseProducerIdBlockData``: broker (int), block_start and
    block_end (decimal strings of longs) required; the block size must fit an int.

    Kafka treats an empty znode as "no block yet": callers check for empty data first.
    """
    what = "producer id block"
    obj = _object(what, data)
    broker = _as_int32(what, "broker", _required(what, obj, "broker"))
    start_text = _as_str(what, "block_start", _required(what, obj, "block_start"))
    end_text = _as_str(what, "block_end", _required(what, obj, "block_end"))
    start = _parse_java_integer(what, "'block_start'", start_text, INT64_MIN, INT64_MAX)
    end = _parse_java_integer(what, "'block_end'", end_text, INT64_MIN, INT64_MAX)
    if not INT32_MIN <= end - start + 1 <= INT32_MAX:
        _fail(what, f"block {start}..{end} has a size that does not fit an int")
    version = obj.get("version")
    version = 1 if version is None else _as_int32(what, "version", version)
    return ProducerIdBlock(broker, start, end, version)


def iter_persistent_paths() -> Iterator[str]:
    """The paths Kafka creates at startup (``PERSISTENT_ZK_PATHS``), each after its parents."""
    seen: set[str] = set()
    for path in PERSISTENT_ZK_PATHS:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:depth])
            if prefix not in seen:
                seen.add(prefix)
                yield prefix
