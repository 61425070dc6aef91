"""Changes of the ACLs kept for resource patterns, as a store applies them.

A store (the embedded metadata file, ZooKeeper) keeps one set of bindings per
resource pattern. A change is a function from the set it holds now to the set
it should hold; the store reads, applies and writes it (with ZooKeeper, again
after another broker's write came first), and tells what it held before and
after. Sans-IO.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from wirekafka.security.acl import AclBinding, AclBindingFilter, ResourcePattern

# the bindings a pattern holds now -> the bindings it should hold
AclChange = Callable[[frozenset[AclBinding]], frozenset[AclBinding]]

NO_BINDINGS: frozenset[AclBinding] = frozenset()


@dataclass(frozen=True, slots=True)
class AclUpdate:
    """One pattern's bindings before and after a change was written."""

    before: frozenset[AclBinding]
    after: frozenset[AclBinding]

    @property
    def removed(self) -> frozenset[AclBinding]:
        return self.before - self.after

    @property
    def changed(self) -> bool:
        return self.before != self.after


def by_pattern(bindings: Iterable[AclBinding]) -> dict[ResourcePattern, frozenset[AclBinding]]:
    """``bindings`` grouped by their resource pattern."""
    grouped: dict[ResourcePattern, set[AclBinding]] = {}
    for binding in bindings:
        grouped.setdefault(binding.pattern, set()).add(binding)
    return {pattern: frozenset(held) for pattern, held in grouped.items()}


def adding(bindings: Iterable[AclBinding]) -> AclChange:
    """The change that adds ``bindings`` (all of one pattern) to what is held."""
    added = frozenset(bindings)
    return lambda held: held | added


def removing(filters: Iterable[AclBindingFilter]) -> AclChange:
    """The change that drops what any of ``filters`` matches."""
    kept_out = tuple(filters)
    return lambda held: frozenset(b for b in held if not any(f.matches(b) for f in kept_out))


def apply_changes(
    held: Mapping[ResourcePattern, frozenset[AclBinding]],
    changes: Mapping[ResourcePattern, AclChange],
) -> dict[ResourcePattern, AclUpdate]:
    """What each change makes of the bindings ``held`` for its pattern."""
    updates = {}
    for pattern, change in changes.items():
        before = held.get(pattern, NO_BINDINGS)
        after = frozenset(b for b in change(before) if b.pattern == pattern)
        updates[pattern] = AclUpdate(before, after)
    return updates
