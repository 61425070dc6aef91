"""The states of a classic consumer group and the moves allowed between them."""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    EMPTY = "Empty"  # no members; committed offsets may remain
    PREPARING_REBALANCE = "PreparingRebalance"  # waiting for members to (re)join
    COMPLETING_REBALANCE = "CompletingRebalance"  # joined; waiting for the leader's assignment
    STABLE = "Stable"  # every member has its assignment
    DEAD = "Dead"  # deleted; nothing left


# The one table of transitions: a state and the states it may move to.
ALLOWED_TRANSITIONS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE, GroupState.DEAD}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.COMPLETING_REBALANCE, GroupState.EMPTY, GroupState.DEAD}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.DEAD}
    ),
    GroupState.STABLE: frozenset({GroupState.PREPARING_REBALANCE, GroupState.DEAD}),
    GroupState.DEAD: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A bug: the coordinator tried a move the table does not allow."""


def check_transition(old: GroupState, new: GroupState) -> None:
    if new not in ALLOWED_TRANSITIONS[old]:
        raise IllegalTransition(f"{old.value} -> {new.value} is not allowed")
