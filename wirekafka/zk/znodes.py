"""Kafka's ZooKeeper layout: one declaration per znode, named as in Kafka's ``ZkData.scala`` (sans-IO).

Each ``*ZNode`` class stands for one znode of Kafka in ZooKeeper mode (2.8 to
3.x). ``path`` is its path: a string, or a function of the znode's parameters.
A znode that holds data also has ``encode``, which writes the ``version`` of
its JSON that Kafka writes now, byte for byte as Kafka writes it, and
``decode``, which reads every version Kafka has written and raises
:class:`ZnodeFormatError`, naming the znode, on anything else. Decoding keeps
what this broker uses and checks types as Kafka's reads do; keys Kafka does not
read (such as most ``version`` keys) are not looked at.

    /brokers/ids/<id>                              BrokerIdZNode (ephemeral)
    /brokers/topics/<topic>                        TopicZNode
    /brokers/topics/<topic>/partitions/<p>/state   TopicPartitionStateZNode
    /controller                                    ControllerZNode (ephemeral)
    /controller_epoch                              ControllerEpochZNode
    /config/<entity type>/<entity name>            ConfigEntityZNode
    /config/changes/config_change_<seq>            ConfigEntityChangeNotificationSequenceZNode
    /admin/delete_topics/<topic>                   DeleteTopicsTopicZNode (no data)
    /consumers/<group>/offsets/<topic>/<p>         ConsumerOffset
    /cluster/id                                    ClusterIdZNode
    /latest_producer_id_block                      ProducerIdBlockZNode

:data:`PERSISTENT_ZK_PATHS` lists the znodes every broker creates at startup.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wirekafka.zk.znode_json import (
    INT16_MAX,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    JsonObject,
    ZnodeFormatError,
    check_int,
    describe,
    dumps,
    now_ms,
    parse_decimal,
    parse_java_integer,
    parse_object,
)

__all__ = [
    "CONFIG_ENTITY_TYPES",
    "CONFIG_TYPE_TOPIC",
    "CONFIG_TYPE_USER",
    "LEADER_RECOVERY_STATE_RECOVERED",
    "LEADER_RECOVERY_STATE_RECOVERING",
    "PERSISTENT_ZK_PATHS",
    "PRODUCER_ID_BLOCK_SIZE",
    "SECURITY_PROTOCOLS",
    "AdminZNode",
    "BrokerIdZNode",
    "BrokerIdsZNode",
    "BrokerRegistration",
    "BrokerSequenceIdZNode",
    "BrokersZNode",
    "ClusterIdZNode",
    "ClusterZNode",
    "ConfigEntityChangeNotificationSequenceZNode",
    "ConfigEntityChangeNotificationZNode",
    "ConfigEntityTypeZNode",
    "ConfigEntityZNode",
    "ConfigZNode",
    "ConsumerOffset",
    "ConsumerPathZNode",
    "ControllerEpochZNode",
    "ControllerZNode",
    "DeleteTopicsTopicZNode",
    "DeleteTopicsZNode",
    "EndPoint",
    "IsrChangeNotificationZNode",
    "LogDirEventNotificationZNode",
    "PartitionState",
    "ProducerIdBlock",
    "ProducerIdBlockZNode",
    "SupportedVersionRange",
    "TopicAssignment",
    "TopicPartitionStateZNode",
    "TopicPartitionZNode",
    "TopicPartitionsZNode",
    "TopicZNode",
    "TopicsZNode",
    "ZnodeFormatError",
    "desanitize_entity_name",
    "sanitize_entity_name",
]


def _segment(what: str, value: str) -> str:
    if not isinstance(value, str) or not value or "/" in value or value in (".", ".."):
        raise ValueError(f"{what} {value!r} cannot be a znode name")
    return value


def _int_segment(what: str, value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an int, got {value!r}")
    return str(value)


def _timestamp(js: JsonObject) -> int | None:
    """``"timestamp"``, which Kafka writes as a string of epoch milliseconds and never
    reads: None when absent or null, a JSON integer taken too, anything else an error."""
    value = js.get("timestamp")
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX:
        return value
    if isinstance(value, str):
        return parse_java_integer(js.znode, "'timestamp'", value, INT64_MIN, INT64_MAX)
    js.fail(f"'timestamp' must be a string of milliseconds, got {describe(value)}")


def _encode_timestamp(timestamp_ms: int | None) -> str:
    """A timestamp as Kafka writes it: a string of epoch milliseconds; None: now."""
    return str(
        now_ms() if timestamp_ms is None else check_int("timestamp_ms", timestamp_ms, 0, INT64_MAX)
    )


# ---------------------------------------------------------------------------
# /controller, /controller_epoch


class ControllerZNode:
    """``/controller``: the ephemeral claim of the broker that is the controller.

    Kafka 3.4+ writes version 2, ``kraftControllerEpoch`` -1 meaning a ZooKeeper-mode
    controller::

        {"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}

    2.8 to 3.3 wrote version 1, without ``kraftControllerEpoch``. Reading takes
    ``brokerid`` from any version, as ``ControllerZNode.decode`` does.
    """

    path = "/controller"
    version = 2

    @classmethod
    def encode(cls, broker_id: int, timestamp_ms: int | None = None) -> bytes:
        return dumps(
            {
                "version": cls.version,
                "brokerid": check_int("broker_id", broker_id),
                "timestamp": _encode_timestamp(timestamp_ms),
                "kraftControllerEpoch": -1,
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> int:
        """The controller's broker id."""
        return parse_object(cls.__name__, data).int32("brokerid")


class ControllerEpochZNode:
    """``/controller_epoch``: the controller epoch as decimal text, e.g. ``b"7"``."""

    path = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(check_int("controller epoch", epoch)).encode("ascii")

    @classmethod
    def decode(cls, data: bytes) -> int:
        return parse_decimal(cls.__name__, "the epoch", data, INT32_MIN, INT32_MAX)


# ---------------------------------------------------------------------------
# /brokers/ids/<id>


class BrokersZNode:
    path = "/brokers"


class BrokerIdsZNode:
    path = f"{BrokersZNode.path}/ids"


# SecurityProtocol's names; the listener named after each is the default map
# (SocketServerConfigs.DEFAULT_NAME_TO_SECURITY_PROTO).
SECURITY_PROTOCOLS: tuple[str, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# SocketServerConfigs.URI_PARSE_REGEXP (whole-string match).
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
    """What ``/brokers/ids/<id>`` says about a broker (the id is the znode's name).

    ``timestamp_ms`` None encodes the current time.
    """

    endpoints: tuple[EndPoint, ...]
    jmx_port: int = -1
    rack: str | None = None
    timestamp_ms: int | None = None
    features: Mapping[str, SupportedVersionRange] = field(default_factory=dict)

    @property
    def plaintext_endpoint(self) -> EndPoint | None:
        return next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)

    def endpoint(self, listener_name: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener_name == listener_name), None)


class BrokerIdZNode:
    """``/brokers/ids/<id>``: a live broker's ephemeral registration.

    Kafka 2.7+ writes version 5, in this key order::

        {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
         "endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"port":9092,"host":"h",
         "version":5,"timestamp":"1700000000000"}

    (``"rack"`` after ``endpoints`` when set). ``host`` and ``port`` are the first
    PLAINTEXT endpoint's, null and -1 without one, for old clients such as pykafka.

    Reading, as ``BrokerIdZNode.decode``: ``version`` and ``jmx_port`` are required;
    version 1 has only ``host`` and ``port``; 2+ list ``endpoints`` by listener name,
    whose protocols ``listener_security_protocol_map`` gives (without it, each
    listener is named after its protocol); ``rack`` and ``features`` are optional.
    """

    version = 5

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BrokerIdsZNode.path}/{_int_segment('broker id', broker_id)}"

    @classmethod
    def encode(cls, registration: BrokerRegistration) -> bytes:
        for endpoint in registration.endpoints:
            if endpoint.security_protocol not in SECURITY_PROTOCOLS:
                raise ValueError(f"unknown security protocol {endpoint.security_protocol!r}")
            check_int("port", endpoint.port)
        plaintext = registration.plaintext_endpoint
        obj: dict[str, object] = {
            "features": {
                name: {"min_version": r.min_version, "max_version": r.max_version}
                for name, r in registration.features.items()
            },
            "listener_security_protocol_map": {
                e.listener_name: e.security_protocol for e in registration.endpoints
            },
            "endpoints": [e.connection_string for e in registration.endpoints],
        }
        if registration.rack is not None:
            obj["rack"] = registration.rack
        obj["jmx_port"] = check_int("jmx_port", registration.jmx_port)
        obj["port"] = -1 if plaintext is None else plaintext.port
        obj["host"] = None if plaintext is None else plaintext.host
        obj["version"] = cls.version
        obj["timestamp"] = _encode_timestamp(registration.timestamp_ms)
        return dumps(obj)

    @classmethod
    def decode(cls, data: bytes) -> BrokerRegistration:
        js = parse_object(cls.__name__, data)
        version = js.int32("version")
        jmx_port = js.int32("jmx_port")
        if version < 1:
            js.fail(f"unsupported version {version}")
        if version == 1:
            endpoints: tuple[EndPoint, ...] = (
                EndPoint("PLAINTEXT", "PLAINTEXT", js.string("host"), js.int32("port")),
            )
        else:
            protocols = _security_protocol_map(js)
            endpoints = tuple(
                _parse_endpoint(js, text, protocols) for text in js.string_list("endpoints")
            )
        return BrokerRegistration(
            endpoints=endpoints,
            jmx_port=jmx_port,
            rack=js.optional_string("rack"),
            timestamp_ms=_timestamp(js),
            features=_features(js),
        )


def _security_protocol_map(js: JsonObject) -> dict[str, str]:
    listeners = js.optional_object("listener_security_protocol_map")
    if listeners is None:
        return {name: name for name in SECURITY_PROTOCOLS}
    result: dict[str, str] = {}
    for listener in listeners:
        protocol = listeners.string(listener)
        if protocol.upper() not in SECURITY_PROTOCOLS:
            js.fail(
                f"listener_security_protocol_map: unknown security protocol {protocol!r} "
                f"for listener {listener!r}"
            )
        result[listener] = protocol.upper()
    return result


def _parse_endpoint(js: JsonObject, text: str, protocols: Mapping[str, str]) -> EndPoint:
    match = _ENDPOINT.fullmatch(text)
    if match is None:
        js.fail(f"unable to parse {text!r} to a broker endpoint")
    listener = match.group(1).upper()
    port = parse_java_integer(
        js.znode, f"the port of endpoint {text!r}", match.group(3), INT32_MIN, INT32_MAX
    )
    if listener not in protocols:
        js.fail(f"no security protocol defined for listener {listener}")
    return EndPoint(listener, protocols[listener], match.group(2) or None, port)


def _features(js: JsonObject) -> dict[str, SupportedVersionRange]:
    features = js.optional_object("features")
    if features is None:
        return {}
    result: dict[str, SupportedVersionRange] = {}
    for name in features:
        levels = features.object(name)
        low, high = levels.int32("min_version"), levels.int32("max_version")
        for key in levels:  # e.g. first_active_version: read, as Kafka does
            levels.int32(key)
        if not 0 <= low <= high <= INT16_MAX:
            js.fail(f"features.{name}: expected 0 <= min_version <= max_version, got {low}, {high}")
        result[name] = SupportedVersionRange(low, high)
    return result


# ---------------------------------------------------------------------------
# /brokers/topics/<topic> and its partitions


class TopicsZNode:
    path = f"{BrokersZNode.path}/topics"


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """A topic's replicas: partition -> broker ids, preferred leader first.

    ``adding_replicas`` / ``removing_replicas``: the partitions under reassignment
    (KIP-455). ``topic_id``: Kafka's base64 Uuid string (22 characters), when known.
    """

    partitions: Mapping[int, tuple[int, ...]]
    topic_id: str | None = None
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


_UUID_LENGTH = 16


def _is_topic_id(topic_id: str) -> bool:
    """``Uuid.fromString``: at most 24 characters of URL-safe base64 for 16 bytes."""
    if len(topic_id) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", topic_id):
        return False
    padded = topic_id + "=" * (-len(topic_id) % 4)
    try:
        return len(base64.urlsafe_b64decode(padded.encode("ascii"))) == _UUID_LENGTH
    except (binascii.Error, ValueError):
        return False


class TopicZNode:
    """``/brokers/topics/<topic>``: the topic's replica assignment.

    Kafka 2.8+ writes version 3 (``topic_id`` only when known; ``adding_replicas`` and
    ``removing_replicas`` list only partitions under reassignment)::

        {"partitions":{"0":[1,2]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",
         "adding_replicas":{},"removing_replicas":{},"version":3}

    Reading, as ``TopicZNode.decode``, takes any version (1 has only ``partitions``):
    every key is optional, and adding/removing replicas count only for partitions
    in ``partitions``.
    """

    version = 3

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicsZNode.path}/{_segment('topic', topic)}"

    @classmethod
    def encode(cls, assignment: TopicAssignment) -> bytes:
        obj: dict[str, object] = {"partitions": _assignment_json(assignment.partitions, True)}
        if assignment.topic_id is not None:
            if not _is_topic_id(assignment.topic_id):
                raise ValueError(f"topic_id {assignment.topic_id!r} is not a base64 Uuid")
            obj["topic_id"] = assignment.topic_id
        obj["adding_replicas"] = _assignment_json(assignment.adding_replicas, False)
        obj["removing_replicas"] = _assignment_json(assignment.removing_replicas, False)
        obj["version"] = cls.version
        return dumps(obj)

    @classmethod
    def decode(cls, data: bytes) -> TopicAssignment:
        js = parse_object(cls.__name__, data)
        topic_id = js.optional_string("topic_id")
        if topic_id is not None and not _is_topic_id(topic_id):
            js.fail(f"topic_id {topic_id[:30]!r} is not a base64 Uuid (16 bytes)")
        listed = js.optional_object("partitions") or JsonObject(js.znode, {})
        adding_json = js.optional_object("adding_replicas")
        removing_json = js.optional_object("removing_replicas")
        partitions: dict[int, tuple[int, ...]] = {}
        adding: dict[int, tuple[int, ...]] = {}
        removing: dict[int, tuple[int, ...]] = {}
        for key in listed:
            partition = parse_java_integer(js.znode, f"partition {key!r}", key, 0, INT32_MAX)
            partitions[partition] = listed.int32_list(key)
            for source, target in ((adding_json, adding), (removing_json, removing)):
                if source is not None and key in source and (replicas := source.int32_list(key)):
                    target[partition] = replicas
        return TopicAssignment(
            partitions=dict(sorted(partitions.items())),
            topic_id=topic_id,
            adding_replicas=dict(sorted(adding.items())),
            removing_replicas=dict(sorted(removing.items())),
        )


def _assignment_json(
    mapping: Mapping[int, Sequence[int]], keep_empty: bool
) -> dict[str, list[int]]:
    result: dict[str, list[int]] = {}
    for partition in sorted(mapping):
        check_int("partition", partition, 0)
        replicas = [check_int("replica", r) for r in mapping[partition]]
        if replicas or keep_empty:
            result[str(partition)] = replicas
    return result


class TopicPartitionsZNode:
    """``/brokers/topics/<topic>/partitions`` (no data)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    """``/brokers/topics/<topic>/partitions/<p>`` (no data)."""

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"{TopicPartitionsZNode.path(topic)}/{_int_segment('partition', partition)}"


LEADER_RECOVERY_STATE_RECOVERED = 0
LEADER_RECOVERY_STATE_RECOVERING = 1


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Leader, ISR and epochs of one partition; ``leader`` -1 when there is none.

    ``leader_recovery_state``: KIP-704 (Kafka 3.2+).
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERY_STATE_RECOVERED


class TopicPartitionStateZNode:
    """``/brokers/topics/<topic>/partitions/<p>/state``: the partition's leader and ISR.

    Kafka writes version 1, ``leader_recovery_state`` only when not RECOVERED (0)::

        {"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}

    Reading requires leader, leader_epoch, isr and controller_epoch;
    ``leader_recovery_state`` absent is RECOVERED.
    """

    version = 1

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"{TopicPartitionZNode.path(topic, partition)}/state"

    @classmethod
    def encode(cls, state: PartitionState) -> bytes:
        if state.leader_recovery_state not in _RECOVERY_STATES:
            raise ValueError(f"unknown leader_recovery_state {state.leader_recovery_state!r}")
        obj: dict[str, object] = {
            "controller_epoch": check_int("controller_epoch", state.controller_epoch),
            "leader": check_int("leader", state.leader),
            "version": cls.version,
            "leader_epoch": check_int("leader_epoch", state.leader_epoch),
            "isr": [check_int("isr replica", r) for r in state.isr],
        }
        if state.leader_recovery_state != LEADER_RECOVERY_STATE_RECOVERED:
            obj["leader_recovery_state"] = state.leader_recovery_state
        return dumps(obj)

    @classmethod
    def decode(cls, data: bytes) -> PartitionState:
        js = parse_object(cls.__name__, data)
        recovery = js.optional_int32("leader_recovery_state")
        if recovery is None:
            recovery = LEADER_RECOVERY_STATE_RECOVERED
        if recovery not in _RECOVERY_STATES:
            js.fail(f"unknown leader_recovery_state {recovery}")
        return PartitionState(
            leader=js.int32("leader"),
            leader_epoch=js.int32("leader_epoch"),
            isr=js.int32_list("isr"),
            controller_epoch=js.int32("controller_epoch"),
            leader_recovery_state=recovery,
        )


_RECOVERY_STATES = (LEADER_RECOVERY_STATE_RECOVERED, LEADER_RECOVERY_STATE_RECOVERING)


# ---------------------------------------------------------------------------
# /config/<entity type>/<entity name>


class ConfigZNode:
    path = "/config"


# ConfigType.TOPIC, ConfigType.USER; ConfigType.all (2.8-3.5, kafka.server) / ConfigType.ALL (3.6+,
# server-common), in order.
CONFIG_TYPE_TOPIC = "topics"
CONFIG_TYPE_USER = "users"
CONFIG_ENTITY_TYPES: tuple[str, ...] = (
    CONFIG_TYPE_TOPIC,
    "clients",
    CONFIG_TYPE_USER,
    "brokers",
    "ips",
)


def sanitize_entity_name(name: str) -> str:
    """A user's (or client id's) name as Kafka names its config znode (``Sanitizer.sanitize``):
    UTF-8, percent-encoded but for letters, digits and ``.-_``, a space as ``%20``."""
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize_entity_name(sanitized: str) -> str:
    """The name a config znode of :func:`sanitize_entity_name` stands for (``+`` a space, as
    Kafka's ``Sanitizer.desanitize`` reads it); ValueError if it is not percent-encoded UTF-8."""
    if re.search(r"%(?![0-9A-Fa-f]{2})", sanitized):
        raise ValueError(f"{sanitized!r} is not a percent-encoded name")
    return urllib.parse.unquote_plus(sanitized, errors="strict")


class ConfigEntityTypeZNode:
    """``/config/<entity type>``, e.g. ``/config/topics`` (no data)."""

    @staticmethod
    def path(entity_type: str) -> str:
        return f"{ConfigZNode.path}/{_segment('config entity type', entity_type)}"


class ConfigEntityZNode:
    """``/config/<entity type>/<entity name>``: an entity's config overrides, e.g. a topic's.

    Kafka writes version 1, values as strings (a ``java.util.Properties``)::

        {"version":1,"config":{"cleanup.policy":"compact"}}

    Reading: ``config`` absent or null is empty; its values must be strings.
    """

    version = 1

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"{ConfigEntityTypeZNode.path(entity_type)}/{_segment('config entity', entity_name)}"

    @classmethod
    def encode(cls, config: Mapping[str, str]) -> bytes:
        for key, value in config.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"config keys and values must be strings, got {key!r}: {value!r}")
        return dumps({"version": cls.version, "config": dict(config)})

    @classmethod
    def decode(cls, data: bytes) -> dict[str, str]:
        config = parse_object(cls.__name__, data).optional_object("config")
        return {} if config is None else {key: config.string(key) for key in config}


class ConfigEntityChangeNotificationZNode:
    path = f"{ConfigZNode.path}/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    """``/config/changes/config_change_<seq>``: a change of an entity's configs, created
    sequential with each write of the entity's znode, so that every broker reads it again.

    Kafka writes version 2, the entity's path below ``/config`` (its name sanitized)::

        {"version":2,"entity_path":"users/alice"}

    Reading takes ``entity_path`` of version 2 and ``entity_type``/``entity_name`` of
    version 1, giving the path either way.
    """

    prefix = "config_change_"
    path_prefix = f"{ConfigEntityChangeNotificationZNode.path}/{prefix}"
    version = 2

    @classmethod
    def encode(cls, entity_type: str, sanitized_entity_name: str) -> bytes:
        entity_path = f"{_segment('config entity type', entity_type)}/" + _segment(
            "config entity", sanitized_entity_name
        )
        return dumps({"version": cls.version, "entity_path": entity_path})

    @classmethod
    def decode(cls, data: bytes) -> str:
        """The changed entity's path below ``/config``: ``users/alice``."""
        js = parse_object(cls.__name__, data)
        if js.get("version") == 1:
            return f"{js.string('entity_type')}/{js.string('entity_name')}"
        return js.string("entity_path")


# ---------------------------------------------------------------------------
# notifications, /admin


class IsrChangeNotificationZNode:
    path = "/isr_change_notification"


class LogDirEventNotificationZNode:
    path = "/log_dir_event_notification"


class AdminZNode:
    path = "/admin"


class DeleteTopicsZNode:
    path = f"{AdminZNode.path}/delete_topics"


class DeleteTopicsTopicZNode:
    """``/admin/delete_topics/<topic>``: a request to delete the topic (no data)."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.path}/{_segment('topic', topic)}"


# ---------------------------------------------------------------------------
# /consumers (old consumers)


class ConsumerPathZNode:
    path = "/consumers"


class ConsumerOffset:
    """``/consumers/<group>/offsets/<topic>/<p>``: an old (ZooKeeper) consumer's
    committed offset, as decimal text, e.g. ``b"42"``."""

    @staticmethod
    def path(group: str, topic: str, partition: int) -> str:
        return (
            f"{ConsumerPathZNode.path}/{_segment('group', group)}/offsets/"
            f"{_segment('topic', topic)}/{_int_segment('partition', partition)}"
        )

    @staticmethod
    def encode(offset: int) -> bytes:
        return str(check_int("offset", offset, INT64_MIN, INT64_MAX)).encode("ascii")

    @classmethod
    def decode(cls, data: bytes) -> int:
        return parse_decimal(cls.__name__, "the offset", data, INT64_MIN, INT64_MAX)


# ---------------------------------------------------------------------------
# /cluster/id, /brokers/seqid, /latest_producer_id_block


class ClusterZNode:
    path = "/cluster"


class ClusterIdZNode:
    """``/cluster/id``: the cluster's id, ``{"version":"1","id":"..."}`` (a string version).

    Reading takes ``id``, as ``ClusterIdZNode.fromJson`` does.
    """

    path = f"{ClusterZNode.path}/id"
    version = "1"

    @classmethod
    def encode(cls, cluster_id: str) -> bytes:
        if not isinstance(cluster_id, str):
            raise ValueError(f"the cluster id must be a string, got {cluster_id!r}")
        return dumps({"version": cls.version, "id": cluster_id})

    @classmethod
    def decode(cls, data: bytes) -> str:
        return parse_object(cls.__name__, data).string("id")


class BrokerSequenceIdZNode:
    path = f"{BrokersZNode.path}/seqid"


PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last block of producer ids handed out: ``block_start`` .. ``block_end`` inclusive."""

    broker: int
    block_start: int
    block_end: int

    def next_block(self, broker: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
        """The block after this one, for ``broker`` (what ZkProducerIdManager writes next)."""
        return ProducerIdBlock(broker, self.block_end + 1, self.block_end + size)

    @classmethod
    def first(cls, broker: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
        """The first block, when ``/latest_producer_id_block`` is empty."""
        return cls(broker, 0, size - 1)


class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block of producer ids a broker took.

    Kafka writes version 1, start and end as strings::

        {"version":1,"broker":0,"block_start":"0","block_end":"999"}

    The znode is created empty, meaning no block yet: callers check for empty data
    before decoding. Reading requires broker, block_start and block_end, and a block
    size that fits an int.
    """

    path = "/latest_producer_id_block"
    version = 1

    @classmethod
    def encode(cls, block: ProducerIdBlock) -> bytes:
        start = check_int("block_start", block.block_start, 0, INT64_MAX)
        end = check_int("block_end", block.block_end, 0, INT64_MAX)
        if not 1 <= end - start + 1 <= INT32_MAX:
            raise ValueError(f"block {start}..{end} is empty or too large")
        return dumps(
            {
                "version": cls.version,
                "broker": check_int("broker", block.broker),
                "block_start": str(start),
                "block_end": str(end),
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlock:
        js = parse_object(cls.__name__, data)
        broker = js.int32("broker")
        start = parse_java_integer(
            js.znode, "'block_start'", js.string("block_start"), INT64_MIN, INT64_MAX
        )
        end = parse_java_integer(
            js.znode, "'block_end'", js.string("block_end"), INT64_MIN, INT64_MAX
        )
        if not INT32_MIN <= end - start + 1 <= INT32_MAX:
            js.fail(f"block {start}..{end} has a size that does not fit an int")
        return ProducerIdBlock(broker, start, end)


# ZkData.PersistentZkPaths: created (with no data) at every broker start, in this order.
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    ConsumerPathZNode.path,
    BrokerIdsZNode.path,
    TopicsZNode.path,
    ConfigEntityChangeNotificationZNode.path,
    DeleteTopicsZNode.path,
    BrokerSequenceIdZNode.path,
    IsrChangeNotificationZNode.path,
    ProducerIdBlockZNode.path,
    LogDirEventNotificationZNode.path,
    *(ConfigEntityTypeZNode.path(entity_type) for entity_type in CONFIG_ENTITY_TYPES),
)
