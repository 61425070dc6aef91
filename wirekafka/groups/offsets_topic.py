"""Keys and values of the records in Kafka's internal topic ``__consumer_offsets``.

Declared as Kafka declares them, in its message specs ``OffsetCommitKey``,
``OffsetCommitValue``, ``GroupMetadataKey`` and ``GroupMetadataValue``
(``core/src/main/resources/common/message/`` before Kafka 3.5,
``group-coordinator/src/main/resources/common/message/`` since), and encoded
by the codec of the wire protocol (:mod:`wirekafka.protocol.codec`): every
key and value is a :class:`~wirekafka.protocol.codec.DataMessage`, an int16
version and the struct at that version, with no header.

A key's int16 names the record type:

* 0 and 1: an offset commit key (group, topic, partition; both have that
  layout, Kafka writes 1);
* 2: a group metadata key (group);
* 3 and up: the records of KIP-848 consumer groups, share and streams groups,
  which this module does not read (:class:`UnknownRecordType`).

Kafka 3.x's specs call that int16 the key's version (OffsetCommitKey 0-1,
GroupMetadataKey 2, as declared here); Kafka 4.x's call it the record type
and give each key one version, 0, of the same layout: the bytes are the same.

A value starts with its own int16 version, 0 to 4 for both value types;
version 4 is flexible (compact strings, bytes and arrays, tagged fields).
Kafka 3.9 writes OffsetCommitValue 1 or 3 and GroupMetadataValue 3; Kafka 4.1
and later write OffsetCommitValue 4 with the topic id in tag 0 (KAFKA-19141).
A tombstone (a deleted offset or group) is a record whose value is null.

Fields a version does not carry decode as their declared default (-1, None
for ``group_instance_id``, the zero UUID for ``topic_id``) and are dropped on
encoding, as Kafka does with these "ignorable" fields. Every malformed or
unknown input raises :class:`ProtocolError` and nothing else; unlike Kafka's
readers, bytes left over after a key or value are rejected as malformed.
"""

from __future__ import annotations

from uuid import UUID

from wirekafka.protocol import schema as wire
from wirekafka.protocol.codec import data_message
from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer, Reader

__all__ = [
    "GROUP_METADATA_KEY",
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE",
    "NO_VALUE",
    "OFFSET_COMMIT_KEY",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_VALUE",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordKey",
    "UnknownRecordType",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "default_offset_commit_value_version",
    "encode_group_metadata",
    "encode_group_metadata_value",
    "encode_key",
    "encode_offset_commit",
    "encode_offset_commit_value",
    "java_string_hash",
    "partition_for_group",
]

# The "not set" value of an int field (the specs' defaults, Kafka's
# OffsetCommitRequest.DEFAULT_TIMESTAMP and RecordBatch.NO_PARTITION_LEADER_EPOCH).
NO_VALUE = -1


class UnknownRecordType(ProtocolError):
    """A key type this module does not know (for instance the consumer group
    records of KIP-848, key types 3 and up), as opposed to a malformed key. A
    loader may skip such records."""


# --------------------------------------------------------------------------
# Declarations


@wire.message
class OffsetCommitKey:
    group: str = wire.string("0-1")
    topic: str = wire.string("0-1")
    partition: int = wire.int32("0-1")


@wire.message
class OffsetCommitValue:
    offset: int = wire.int64("0+")
    leader_epoch: int = wire.int32("3+", default=NO_VALUE)
    metadata: str = wire.string("0+")
    commit_timestamp_ms: int = wire.int64("0+", default=NO_VALUE)
    # Only version 1 carries it; NO_VALUE means "no expire timestamp".
    expire_timestamp_ms: int = wire.int64("1", default=NO_VALUE)
    # Kafka 4.1+ (KAFKA-19141); wirekafka assigns no topic ids and leaves it zero.
    topic_id: UUID = wire.uuid("4+", tag=0, tagged="4+")


@wire.message
class GroupMetadataKey:
    group: str = wire.string("2")


@wire.message
class MemberMetadata:
    member_id: str = wire.string("0+")
    group_instance_id: str | None = wire.string("3+", nullable="3+", default=None)
    client_id: str = wire.string("0+")
    client_host: str = wire.string("0+")
    # Version 0 has no rebalance timeout; it decodes as NO_VALUE (Kafka's loader
    # then uses the session timeout in its place).
    rebalance_timeout_ms: int = wire.int32("1+", default=NO_VALUE)
    session_timeout_ms: int = wire.int32("0+")
    subscription: bytes = wire.bytes_("0+")
    assignment: bytes = wire.bytes_("0+")


@wire.message
class GroupMetadataValue:
    protocol_type: str = wire.string("0+")
    generation: int = wire.int32("0+")
    protocol: str | None = wire.string("0+", nullable="0+", default=None)
    leader: str | None = wire.string("0+", nullable="0+", default=None)
    current_state_timestamp_ms: int = wire.int64("2+", default=NO_VALUE)
    members: list[MemberMetadata] = wire.array(MemberMetadata, "0+")


RecordKey = OffsetCommitKey | GroupMetadataKey

OFFSET_COMMIT_KEY = data_message(OffsetCommitKey, "0-1", "none")
GROUP_METADATA_KEY = data_message(GroupMetadataKey, "2", "none")
OFFSET_COMMIT_VALUE = data_message(OffsetCommitValue, "0-4", "4+")
GROUP_METADATA_VALUE = data_message(GroupMetadataValue, "0-4", "4+")

# The key versions Kafka writes: OffsetCommitKey 1, GroupMetadataKey 2
# (GroupMetadataManager.offsetCommitKey/groupMetadataKey in Kafka 3.x's core,
# the record types of CoordinatorRecordHelpers in its group-coordinator).
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2

# The value versions written (Kafka 3.9's, at any metadata.version from 2.3 on):
# MetadataVersion.offsetCommitValueVersion returns 1 when the commit has an
# expire timestamp, else 3; MetadataVersion.groupMetadataValueVersion returns 3
# (server-common/.../server/common/MetadataVersion.java; the Scala
# GroupMetadataManager.offsetCommitValue/groupMetadataValue choose the same).
_OFFSET_COMMIT_VALUE_WITH_EXPIRE = 1
_OFFSET_COMMIT_VALUE_CURRENT = 3
_GROUP_METADATA_VALUE_CURRENT = 3


# --------------------------------------------------------------------------
# Keys


def encode_key(key: RecordKey) -> bytes:
    """A key in the version Kafka writes (1 for offsets, 2 for groups)."""
    if isinstance(key, OffsetCommitKey):
        return OFFSET_COMMIT_KEY.encode(key, OFFSET_COMMIT_KEY_VERSION)
    return GROUP_METADATA_KEY.encode(key, GROUP_METADATA_KEY_VERSION)


def decode_key(data: Buffer) -> RecordKey:
    """The key of a ``__consumer_offsets`` record.

    Raises :class:`UnknownRecordType` for a key version other than 0, 1 or 2
    and :class:`ProtocolError` for a malformed key.
    """
    reader = Reader(data)
    version = reader.int16()
    if version in OFFSET_COMMIT_KEY.versions:
        return OFFSET_COMMIT_KEY.decode_rest(version, reader)
    if version in GROUP_METADATA_KEY.versions:
        return GROUP_METADATA_KEY.decode_rest(version, reader)
    raise UnknownRecordType(f"unknown __consumer_offsets key version {version}")


# --------------------------------------------------------------------------
# Values


def default_offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The value version Kafka 3.9 writes: 1 if the commit has an expire
    timestamp (only version 1 can hold it), otherwise 3."""
    if value.expire_timestamp_ms != NO_VALUE:
        return _OFFSET_COMMIT_VALUE_WITH_EXPIRE
    return _OFFSET_COMMIT_VALUE_CURRENT


def encode_offset_commit_value(value: OffsetCommitValue, version: int) -> bytes:
    return OFFSET_COMMIT_VALUE.encode(value, version)


def decode_offset_commit_value(data: Buffer) -> OffsetCommitValue:
    """An offset commit value of any version 0 to 4."""
    return OFFSET_COMMIT_VALUE.decode(data)


def encode_group_metadata_value(value: GroupMetadataValue, version: int) -> bytes:
    return GROUP_METADATA_VALUE.encode(value, version)


def decode_group_metadata_value(data: Buffer) -> GroupMetadataValue:
    """A group metadata value of any version 0 to 4."""
    return GROUP_METADATA_VALUE.decode(data)


def encode_offset_commit(
    key: OffsetCommitKey, value: OffsetCommitValue | None, version: int | None = None
) -> tuple[bytes, bytes | None]:
    """The key and value bytes of an offset commit record.

    ``value`` None is a tombstone (value bytes None). ``version`` is the value
    version; by default the one Kafka 3.9 writes (see
    :func:`default_offset_commit_value_version`).
    """
    key_bytes = encode_key(key)
    if value is None:
        return key_bytes, None
    if version is None:
        version = default_offset_commit_value_version(value)
    return key_bytes, encode_offset_commit_value(value, version)


def encode_group_metadata(
    key: GroupMetadataKey, value: GroupMetadataValue | None, version: int | None = None
) -> tuple[bytes, bytes | None]:
    """The key and value bytes of a group metadata record.

    ``value`` None is a tombstone (value bytes None). ``version`` is the value
    version; by default 3, the one Kafka 3.9 writes.
    """
    key_bytes = encode_key(key)
    if value is None:
        return key_bytes, None
    if version is None:
        version = _GROUP_METADATA_VALUE_CURRENT
    return key_bytes, encode_group_metadata_value(value, version)


# --------------------------------------------------------------------------
# Which partition of __consumer_offsets holds a group


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over the UTF-16 code
    units (a character outside the BMP is two units), as a signed int32."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def _kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: like ``Math.abs`` but 0 for Integer.MIN_VALUE
    (clients/.../common/utils/Utils.java)."""
    return 0 if n == -(2**31) else abs(n)


def partition_for_group(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group, as Kafka computes it:
    ``Utils.abs(groupId.hashCode()) % partitions``."""
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, not {partitions}")
    return _kafka_abs(java_string_hash(group_id)) % partitions
