"""The controller's decisions for one partition: leader and ISR (sans-IO).

What Kafka's controller does in ZooKeeper mode (``PartitionStateMachine``,
``ReplicaStateMachine``, ``Election``), as pure functions of the partition's
assignment, its state and the live brokers, so they are tested without
ZooKeeper; :meth:`wirekafka.zk.cluster.ZkCluster._control` reads the states,
asks :func:`decide` and writes what it answers.

* A new partition (no state yet): leader the first live replica in assignment
  order, ISR the live replicas, leader epoch 0. With no replica live nothing is
  written: the partition waits, as Kafka's stays in NewPartition.
* Dead brokers leave the ISR, except the last member (Kafka's
  ``removeReplicasFromIsr`` keeps it), so that the controller knows whom to wait
  for: only it is known to hold every committed record. When several go at once
  the one kept is the leader, else the first of the ISR.
* A dead leader (or none, -1) is replaced by the first replica in assignment
  order that is live and in the ISR (``offlinePartitionLeaderElection``). With
  none, ``unclean.leader.election.enable`` lets the first live replica lead with
  an ISR of itself (records may be lost); otherwise the leader is -1.
* ``auto.leader.rebalance.enable``: a preferred replica (the first of the
  assignment) that is live and in the ISR but not leader gets leadership back.
* A state with no leader and an empty ISR (a partition never led, as states
  were once written when no replica was live) starts as a new partition.
* Brokers in controlled shutdown (``shutting_down``: they asked the controller
  to move their leaderships and are still registered) are live but never
  elected, by any of the rules above, nor put in a new partition's ISR: Kafka's
  ``isReplicaOnline`` leaves out ``shuttingDownBrokerIds``.
* Every change of leader or ISR made here bumps the leader epoch.

:func:`decide_controlled_shutdown` is the controller's answer to a broker's
ControlledShutdown request, per partition (Kafka's
``ControlledShutdownLeaderElectionStrategy`` and ``OfflineReplica``): a
partition it leads gets the first replica in assignment order that is in the
ISR, live and not shutting down as leader, with the shutting-down brokers out of
the ISR; one it follows loses it from its ISR, unless it is the last member.
Partitions of one replica are left alone, as Kafka leaves them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from wirekafka.zk.znodes import PartitionState

__all__ = [
    "NO_LEADER",
    "Decision",
    "decide",
    "decide_controlled_shutdown",
    "initial_state",
    "shrink_isr",
]

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Decision:
    """The state to write, and why (for the controller's log)."""

    state: PartitionState
    reason: str


def initial_state(
    replicas: Sequence[int],
    live: Collection[int],
    controller_epoch: int,
    shutting_down: Collection[int] = (),
) -> PartitionState | None:
    """A new partition's first state; None while none of its replicas is live (and
    not shutting down)."""
    live_replicas = tuple(r for r in replicas if r in live and r not in shutting_down)
    if not live_replicas:
        return None
    return PartitionState(live_replicas[0], 0, live_replicas, controller_epoch)


def shrink_isr(isr: Sequence[int], leader: int, live: Collection[int]) -> tuple[int, ...]:
    """The ISR without dead brokers, keeping one member when all are dead: the
    leader if it is in the ISR, else the first."""
    kept = tuple(r for r in isr if r in live)
    if kept or not isr:
        return kept
    return (leader,) if leader in isr else (isr[0],)


def decide(
    replicas: Sequence[int],
    current: PartitionState | None,
    live: Collection[int],
    *,
    controller_epoch: int,
    unclean_leader_election: bool = False,
    preferred_leader_election: bool = True,
    shutting_down: Collection[int] = (),
) -> Decision | None:
    """What the controller writes for a partition assigned ``replicas`` whose state
    is ``current`` (None: it has none yet), with ``live`` the live brokers, of
    which ``shutting_down`` may not be elected; None when nothing changes."""
    electable = [r for r in replicas if r in live and r not in shutting_down]
    if current is None:
        first = initial_state(replicas, live, controller_epoch, shutting_down)
        return None if first is None else Decision(first, "new partition")
    if current.leader == NO_LEADER and not current.isr:
        # Never led (written so before states kept their last ISR member): there is
        # no one to wait for, so it starts as a new partition, at the next epoch.
        first = initial_state(replicas, live, controller_epoch, shutting_down)
        if first is None:
            return None
        state = PartitionState(first.leader, current.leader_epoch + 1, first.isr, controller_epoch)
        return Decision(state, f"leader -1 -> {first.leader}: a partition never led")
    leader = current.leader
    isr = shrink_isr(current.isr, leader, live)
    reasons = []
    if isr != tuple(current.isr):
        reasons.append(f"ISR {list(current.isr)} -> {list(isr)} (brokers gone)")
    if leader == NO_LEADER or leader not in live:
        elected = next((r for r in electable if r in isr), None)
        if elected is not None:
            leader = elected
            reason = "leader elected from the ISR"
        elif unclean_leader_election and electable:
            unclean = electable[0]
            leader, isr = unclean, (unclean,)
            reason = "unclean leader election: no live ISR member, records may be lost"
        else:
            leader = NO_LEADER
            reason = "no live replica in the ISR: no leader"
        if leader != current.leader:
            reasons.append(f"leader {current.leader} -> {leader}: {reason}")
    elif preferred_leader_election and replicas:
        preferred = replicas[0]
        if preferred != leader and preferred in electable and preferred in isr:
            reasons.append(f"leader {leader} -> {preferred}: the preferred replica is back")
            leader = preferred
    if leader == current.leader and isr == tuple(current.isr):
        return None
    state = PartitionState(
        leader,
        current.leader_epoch + 1,
        isr,
        controller_epoch,
        current.leader_recovery_state,
    )
    return Decision(state, "; ".join(reasons))


def decide_controlled_shutdown(
    broker_id: int,
    replicas: Sequence[int],
    current: PartitionState | None,
    live: Collection[int],
    shutting_down: Collection[int],
    *,
    controller_epoch: int,
) -> Decision | None:
    """What the controller writes for a partition assigned ``replicas`` whose state
    is ``current`` when broker ``broker_id`` (one of ``shutting_down``) asks for a
    controlled shutdown; None when nothing changes: the partition is not on it,
    has one replica, no state yet, or no other replica could lead it (then it
    still leads it: the request's remaining partitions)."""
    if current is None or broker_id not in replicas or len(replicas) <= 1:
        return None
    leaving = set(shutting_down) | {broker_id}
    if current.leader == broker_id:
        elected = next(
            (r for r in replicas if r in current.isr and r in live and r not in leaving), None
        )
        if elected is None:
            return None
        isr = tuple(r for r in current.isr if r not in leaving)
        reason = (
            f"leader {broker_id} -> {elected}, ISR {list(current.isr)} -> {list(isr)}: "
            f"controlled shutdown of broker {broker_id}"
        )
        state = PartitionState(
            elected, current.leader_epoch + 1, isr, controller_epoch,
            current.leader_recovery_state,
        )  # fmt: skip
        return Decision(state, reason)
    if broker_id not in current.isr or len(current.isr) == 1:
        return None  # not in sync, or the last member, kept as a dead one's would be
    isr = tuple(r for r in current.isr if r != broker_id)
    state = PartitionState(
        current.leader, current.leader_epoch + 1, isr, controller_epoch,
        current.leader_recovery_state,
    )  # fmt: skip
    reason = f"ISR {list(current.isr)} -> {list(isr)}: controlled shutdown of broker {broker_id}"
    return Decision(state, reason)
