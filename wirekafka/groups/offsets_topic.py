"""Keys and values of the records in Kafka's internal topic ``__consumer_offsets``.

Sans-IO: bytes in, dataclasses out, and back. The layouts follow Kafka's
message specs (Kafka 3.9, ``group-coordinator/src/main/resources/common/
message/``): ``OffsetCommitKey.json``, ``OffsetCommitValue.json``,
``GroupMetadataKey.json`` and ``GroupMetadataValue.json``.

A key starts with an int16 version that names the record type:

* 0 and 1: an offset commit key (both versions have the same layout:
  group, topic, partition; Kafka writes 1);
* 2: a group metadata key (group).

A value starts with its own int16 version, 0 to 4 for both value types.
Versions 0 to 3 use the classic encoding (int16-length strings, int32-length
bytes and arrays); version 4 is flexible: compact strings, bytes and arrays
and a tagged-field section after each struct (the value and every member).
A tombstone (a deleted offset or group) is a record whose value is null.

Fields a version does not carry decode as the spec's default (-1, or None
for ``group_instance_id``); on encoding they are dropped, as Kafka does with
these "ignorable" fields.

Every malformed or unknown input raises :class:`ProtocolError` and nothing
else. Unlike Kafka's generated readers, bytes left over after a key or value
are rejected as malformed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wirekafka.protocol.errors import ProtocolError
from wirekafka.protocol.primitives import Buffer, Reader, Writer

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE_VERSIONS",
    "NO_VALUE",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_VALUE_VERSIONS",
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

# Key versions. Kafka 3.9 writes OffsetCommitKey.HIGHEST_SUPPORTED_VERSION (1)
# and GroupMetadataKey version 2 (GroupMetadataManager.offsetCommitKey and
# groupMetadataKey in core/.../coordinator/group/GroupMetadataManager.scala;
# the same constants in CoordinatorRecordHelpers.newOffsetCommitRecord and
# newGroupMetadataRecord in group-coordinator/.../CoordinatorRecordHelpers.java).
OFFSET_COMMIT_KEY_VERSIONS = range(0, 2)
OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2

OFFSET_COMMIT_VALUE_VERSIONS = range(0, 5)
GROUP_METADATA_VALUE_VERSIONS = range(0, 5)

# The value versions Kafka 3.9 writes (at any metadata.version from 2.3 on):
# MetadataVersion.offsetCommitValueVersion returns 1 when the commit has an
# expire timestamp, else 3; MetadataVersion.groupMetadataValueVersion returns 3
# (server-common/.../server/common/MetadataVersion.java; the Scala
# GroupMetadataManager.offsetCommitValue/groupMetadataValue choose the same).
# Version 4 (flexible) is read but not written by Kafka 3.9.
_OFFSET_COMMIT_VALUE_WITH_EXPIRE = 1
_OFFSET_COMMIT_VALUE_CURRENT = 3
_GROUP_METADATA_VALUE_CURRENT = 3

_FIRST_FLEXIBLE_VALUE_VERSION = 4

# The "not set" value of an int field (Kafka's spec defaults and
# OffsetCommitRequest.DEFAULT_TIMESTAMP / RecordBatch.NO_PARTITION_LEADER_EPOCH).
NO_VALUE = -1

_MAX_STRING_BYTES = 0x7FFF


class UnknownRecordType(ProtocolError):
    """A key version this module does not know (for instance the consumer
    group records of KIP-848, key versions 3 and up), as opposed to a
    malformed key. A loader may skip such records."""


# --------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = NO_VALUE
    metadata: str = ""
    commit_timestamp_ms: int = NO_VALUE
    # Only value version 1 carries it; NO_VALUE means "no expire timestamp".
    expire_timestamp_ms: int = NO_VALUE


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    # Value version 0 has no rebalance timeout; it decodes as NO_VALUE (Kafka's
    # loader then uses the session timeout in its place).
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int = NO_VALUE
    members: list[MemberMetadata] = field(default_factory=list)


RecordKey = OffsetCommitKey | GroupMetadataKey


# --------------------------------------------------------------------------
# Classic or flexible primitives


class _Out:
    """Writes strings, bytes, arrays and tagged fields in one encoding."""

    __slots__ = ("flexible", "w")

    def __init__(self, w: Writer, flexible: bool) -> None:
        self.w = w
        self.flexible = flexible

    def nullable_string(self, value: str | None) -> None:
        if value is not None and len(value.encode()) > _MAX_STRING_BYTES:
            raise ValueError(f"string of {len(value.encode())} bytes is too long")
        if self.flexible:
            self.w.compact_nullable_string(value)
        else:
            self.w.nullable_string(value)

    def string(self, value: str) -> None:
        self.nullable_string(value)

    def bytes(self, value: bytes) -> None:
        if self.flexible:
            self.w.compact_nullable_bytes(value)
        else:
            self.w.nullable_bytes(value)

    def array_length(self, count: int) -> None:
        if self.flexible:
            self.w.compact_array_length(count)
        else:
            self.w.array_length(count)

    def tagged_fields(self) -> None:
        """An empty tagged-field section (none of these specs defines a tag)."""
        if self.flexible:
            self.w.unsigned_varint(0)


class _In:
    """Reads strings, bytes, arrays and tagged fields in one encoding."""

    __slots__ = ("flexible", "r")

    def __init__(self, r: Reader, flexible: bool) -> None:
        self.r = r
        self.flexible = flexible

    def nullable_string(self) -> str | None:
        if self.flexible:
            return self.r.compact_nullable_string()
        return self.r.nullable_string()

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ProtocolError("null in a non-nullable string")
        return value

    def bytes(self) -> bytes:
        value = self.r.compact_nullable_bytes() if self.flexible else self.r.nullable_bytes()
        if value is None:
            raise ProtocolError("null in a non-nullable bytes field")
        return value

    def array_length(self, min_element_bytes: int) -> int:
        if self.flexible:
            count = self.r.compact_array_length(min_element_bytes)
        else:
            count = self.r.array_length(min_element_bytes)
        if count < 0:
            raise ProtocolError("null in a non-nullable array")
        return count

    def tagged_fields(self) -> None:
        """Skip a tagged-field section: no tag is defined, so every tag is
        one from a newer writer."""
        if not self.flexible:
            return
        for _ in range(self.r.unsigned_varint()):
            self.r.unsigned_varint()  # the tag
            self.r.raw(self.r.unsigned_varint(), "tagged field")


def _expect_end(r: Reader, what: str) -> None:
    if r.remaining:
        raise ProtocolError(f"{r.remaining} bytes left over after the {what}")


def _check_version(version: int, versions: range, what: str) -> None:
    if version not in versions:
        raise ValueError(f"{what} version {version} not in {versions.start}..{versions.stop - 1}")


# --------------------------------------------------------------------------
# Keys


def encode_key(key: RecordKey) -> bytes:
    """A key in the version Kafka 3.9 writes (1 for offsets, 2 for groups)."""
    w = Writer()
    out = _Out(w, flexible=False)  # keys are never flexible
    if isinstance(key, OffsetCommitKey):
        w.int16(OFFSET_COMMIT_KEY_VERSION)
        out.string(key.group)
        out.string(key.topic)
        w.int32(key.partition)
    else:
        w.int16(GROUP_METADATA_KEY_VERSION)
        out.string(key.group)
    return w.getvalue()


def decode_key(data: Buffer) -> RecordKey:
    """The key of a ``__consumer_offsets`` record.

    Raises :class:`UnknownRecordType` for a key version other than 0, 1 or 2
    and :class:`ProtocolError` for a malformed key.
    """
    r = Reader(data)
    version = r.int16()
    src = _In(r, flexible=False)
    key: RecordKey
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        key = OffsetCommitKey(group=src.string(), topic=src.string(), partition=r.int32())
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(group=src.string())
    else:
        raise UnknownRecordType(f"unknown __consumer_offsets key version {version}")
    _expect_end(r, "key")
    return key


# --------------------------------------------------------------------------
# Offset commit values


def default_offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The value version Kafka 3.9 writes: 1 if the commit has an expire
    timestamp (only version 1 can hold it), otherwise 3."""
    if value.expire_timestamp_ms != NO_VALUE:
        return _OFFSET_COMMIT_VALUE_WITH_EXPIRE
    return _OFFSET_COMMIT_VALUE_CURRENT


def encode_offset_commit_value(value: OffsetCommitValue, version: int) -> bytes:
    _check_version(version, OFFSET_COMMIT_VALUE_VERSIONS, "OffsetCommitValue")
    w = Writer()
    out = _Out(w, flexible=version >= _FIRST_FLEXIBLE_VALUE_VERSION)
    w.int16(version)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    out.string(value.metadata)
    w.int64(value.commit_timestamp_ms)
    if version == 1:
        w.int64(value.expire_timestamp_ms)
    out.tagged_fields()
    return w.getvalue()


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


def decode_offset_commit_value(data: Buffer) -> OffsetCommitValue:
    """An offset commit value of any version 0 to 4."""
    r = Reader(data)
    version = r.int16()
    if version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise ProtocolError(f"unknown OffsetCommitValue version {version}")
    src = _In(r, flexible=version >= _FIRST_FLEXIBLE_VALUE_VERSION)
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else NO_VALUE
    metadata = src.string()
    commit_timestamp_ms = r.int64()
    expire_timestamp_ms = r.int64() if version == 1 else NO_VALUE
    src.tagged_fields()
    _expect_end(r, "OffsetCommitValue")
    return OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp_ms=commit_timestamp_ms,
        expire_timestamp_ms=expire_timestamp_ms,
    )


# --------------------------------------------------------------------------
# Group metadata values


def encode_group_metadata_value(value: GroupMetadataValue, version: int) -> bytes:
    _check_version(version, GROUP_METADATA_VALUE_VERSIONS, "GroupMetadataValue")
    w = Writer()
    out = _Out(w, flexible=version >= _FIRST_FLEXIBLE_VALUE_VERSION)
    w.int16(version)
    out.string(value.protocol_type)
    w.int32(value.generation)
    out.nullable_string(value.protocol)
    out.nullable_string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp_ms)
    out.array_length(len(value.members))
    for member in value.members:
        _encode_member(out, member, version)
    out.tagged_fields()
    return w.getvalue()


def _encode_member(out: _Out, member: MemberMetadata, version: int) -> None:
    w = out.w
    out.string(member.member_id)
    if version >= 3:
        out.nullable_string(member.group_instance_id)
    out.string(member.client_id)
    out.string(member.client_host)
    if version >= 1:
        w.int32(member.rebalance_timeout_ms)
    w.int32(member.session_timeout_ms)
    out.bytes(member.subscription)
    out.bytes(member.assignment)
    out.tagged_fields()


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


# The fewest bytes a member can take: three empty strings, the session
# timeout and two empty byte strings (classic: 2+2+2+4+4+4; flexible:
# 1+1+1+4+1+1 and an empty tagged-field section).
_MIN_MEMBER_BYTES_CLASSIC = 18
_MIN_MEMBER_BYTES_FLEXIBLE = 10


def decode_group_metadata_value(data: Buffer) -> GroupMetadataValue:
    """A group metadata value of any version 0 to 4."""
    r = Reader(data)
    version = r.int16()
    if version not in GROUP_METADATA_VALUE_VERSIONS:
        raise ProtocolError(f"unknown GroupMetadataValue version {version}")
    flexible = version >= _FIRST_FLEXIBLE_VALUE_VERSION
    src = _In(r, flexible)
    protocol_type = src.string()
    generation = r.int32()
    protocol = src.nullable_string()
    leader = src.nullable_string()
    current_state_timestamp_ms = r.int64() if version >= 2 else NO_VALUE
    count = src.array_length(_MIN_MEMBER_BYTES_FLEXIBLE if flexible else _MIN_MEMBER_BYTES_CLASSIC)
    members = [_decode_member(src, version) for _ in range(count)]
    src.tagged_fields()
    _expect_end(r, "GroupMetadataValue")
    return GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp_ms=current_state_timestamp_ms,
        members=members,
    )


def _decode_member(src: _In, version: int) -> MemberMetadata:
    r = src.r
    member_id = src.string()
    group_instance_id = src.nullable_string() if version >= 3 else None
    client_id = src.string()
    client_host = src.string()
    rebalance_timeout_ms = r.int32() if version >= 1 else NO_VALUE
    session_timeout_ms = r.int32()
    subscription = src.bytes()
    assignment = src.bytes()
    src.tagged_fields()
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=group_instance_id,
        client_id=client_id,
        client_host=client_host,
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_timeout_ms=session_timeout_ms,
        subscription=subscription,
        assignment=assignment,
    )


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
