"""CreateAcls' and DeleteAcls' changes: written where the ACLs are kept, then held.

The ACLs are kept in the embedded default's security metadata file or, with
ZooKeeper, in Kafka's ``/kafka-acl`` znodes. A change is written there first
(in a worker thread) and only what was written reaches the authorizer; a
pattern whose write failed keeps what the authorizer held. Changes on one
broker are made one at a time; with ZooKeeper, other brokers' changes arrive
through its change notifications (:meth:`AclChanges.follow`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import trio

from wirekafka.security.acl import (
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from wirekafka.security.acl_updates import AclChange, AclUpdate, adding, by_pattern, removing
from wirekafka.security.authorizer import AclAuthorizer
from wirekafka.storage.cluster_metadata import MetadataSaveError
from wirekafka.storage.security_metadata import SecurityMetadata
from wirekafka.worker_threads import METADATA, blocking, run_blocking
from wirekafka.zk.acl_store import ZkAclStore
from wirekafka.zk.session import ZooKeeperError

AclResults = dict[ResourcePattern, AclUpdate | MetadataSaveError]


@dataclass(frozen=True, slots=True)
class DeletedAcl:
    """A binding a DeleteAcls filter matched, and why it is still there (None: deleted)."""

    binding: AclBinding
    error: MetadataSaveError | None = None


def _named_pattern(binding_filter: AclBindingFilter) -> ResourcePattern | None:
    """The one pattern a filter can match, when it names it whole (Kafka's
    ``matchesAtMostOne``): its node is looked at even if this broker holds
    nothing for it yet."""
    name = binding_filter.resource_name
    if (
        name is None
        or "/" in name
        or binding_filter.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN)
        or binding_filter.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED)
    ):
        return None
    return ResourcePattern(binding_filter.resource_type, name, binding_filter.pattern_type)


@dataclass(slots=True)
class AclChanges:
    """The store the broker's ACLs are kept in, and the changes made to it."""

    store: SecurityMetadata | ZkAclStore
    _lock: trio.Lock = field(default_factory=trio.Lock)

    @blocking
    def load(self) -> list[AclBinding]:
        """Every binding kept (ZooKeeperError when ZooKeeper cannot be read)."""
        if isinstance(self.store, ZkAclStore):
            return self.store.load_acls()
        return self.store.acl_bindings()

    @blocking
    def _write(self, changes: Mapping[ResourcePattern, AclChange]) -> AclResults:
        if isinstance(self.store, ZkAclStore):
            return {
                pattern: MetadataSaveError(str(result))
                if isinstance(result, ZooKeeperError)
                else result
                for pattern, result in self.store.update_acls(changes).items()
            }
        try:
            return dict(self.store.update_acls(changes))
        except MetadataSaveError as exc:
            return dict.fromkeys(changes, exc)

    async def _apply(
        self, authorizer: AclAuthorizer, changes: Mapping[ResourcePattern, AclChange]
    ) -> AclResults:
        results = await run_blocking(METADATA, self._write, changes)
        for pattern, result in results.items():
            if isinstance(result, AclUpdate):
                authorizer.replace(pattern, result.after)
        return results

    async def create(
        self, authorizer: AclAuthorizer, bindings: Sequence[AclBinding]
    ) -> list[MetadataSaveError | None]:
        """Keep ``bindings`` (checked already) and hold them; per binding, why it
        could not be kept (None: kept)."""
        changes = {pattern: adding(held) for pattern, held in by_pattern(bindings).items()}
        async with self._lock:
            results = await self._apply(authorizer, changes)
        return [
            result if isinstance(result := results[b.pattern], MetadataSaveError) else None
            for b in bindings
        ]

    async def delete(
        self, authorizer: AclAuthorizer, filters: Sequence[AclBindingFilter]
    ) -> list[list[DeletedAcl]]:
        """Delete what ``filters`` (usable ones) match; per filter, the bindings it
        matched, each with why it could not be deleted (None: deleted)."""
        async with self._lock:
            patterns = {b.pattern for f in filters for b in authorizer.describe(f)}
            patterns.update(p for f in filters if (p := _named_pattern(f)) is not None)
            held = {pattern: authorizer.bindings_for(pattern) for pattern in patterns}
            changes = {
                pattern: removing([f for f in filters if f.matches_pattern(pattern)])
                for pattern in sorted(patterns)
            }
            results = await self._apply(authorizer, changes)
        matched: list[list[DeletedAcl]] = [[] for _ in filters]
        for pattern, result in results.items():
            if isinstance(result, AclUpdate):
                gone = [DeletedAcl(binding) for binding in sorted(result.removed)]
            else:
                gone = [DeletedAcl(binding, result) for binding in held[pattern]]
            for index, binding_filter in enumerate(filters):
                matched[index].extend(d for d in gone if binding_filter.matches(d.binding))
        return matched

    async def follow(self, authorizer: AclAuthorizer) -> None:
        """With ZooKeeper, apply other brokers' changes until cancelled; at once
        otherwise (nothing else writes the embedded file)."""
        if isinstance(self.store, ZkAclStore):
            await self.store.follow_changes(authorizer.replace)
