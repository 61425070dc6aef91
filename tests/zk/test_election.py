"""The controller's decisions for one partition, without ZooKeeper."""

from __future__ import annotations

from wirekafka.zk.election import (
    NO_LEADER,
    decide,
    decide_controlled_shutdown,
    initial_state,
    shrink_isr,
)
from wirekafka.zk.znodes import PartitionState

EPOCH = 5  # the controller's


def state(leader: int, isr: tuple[int, ...], leader_epoch: int = 3) -> PartitionState:
    return PartitionState(leader, leader_epoch, isr, controller_epoch=1)


def test_a_new_partition_is_led_by_its_first_live_replica_with_the_live_replicas_in_sync():
    decision = decide((2, 0, 1), None, {0, 1, 2}, controller_epoch=EPOCH)
    assert decision is not None
    assert decision.state == PartitionState(2, 0, (2, 0, 1), EPOCH)
    decision = decide((2, 0, 1), None, {0, 1}, controller_epoch=EPOCH)
    assert decision is not None and decision.state == PartitionState(0, 0, (0, 1), EPOCH)


def test_a_new_partition_without_a_live_replica_waits():
    assert initial_state((1, 2), {0}, EPOCH) is None
    assert decide((1, 2), None, {0}, controller_epoch=EPOCH) is None


def test_nothing_changes_while_leader_and_isr_are_live():
    assert decide((0, 1, 2), state(0, (0, 1, 2)), {0, 1, 2}, controller_epoch=EPOCH) is None
    # an ISR the leader shrank itself stays as it is
    assert decide((0, 1, 2), state(0, (0, 2)), {0, 1, 2}, controller_epoch=EPOCH) is None


def test_a_dead_follower_leaves_the_isr_and_the_epoch_is_bumped():
    decision = decide((0, 1, 2), state(0, (0, 1, 2)), {0, 2}, controller_epoch=EPOCH)
    assert decision is not None
    assert decision.state == PartitionState(0, 4, (0, 2), EPOCH)
    assert "ISR [0, 1, 2] -> [0, 2]" in decision.reason


def test_a_dead_leader_is_replaced_by_the_first_live_isr_member_in_assignment_order():
    decision = decide((0, 1, 2), state(0, (2, 1, 0)), {1, 2}, controller_epoch=EPOCH)
    assert decision is not None
    assert decision.state == PartitionState(1, 4, (2, 1), EPOCH)
    assert "leader 0 -> 1" in decision.reason


def test_a_live_replica_out_of_the_isr_is_not_elected():
    decision = decide((0, 1, 2), state(0, (0, 2)), {1, 2}, controller_epoch=EPOCH)
    assert decision is not None and decision.state.leader == 2


def test_the_last_isr_member_stays_when_it_dies_and_the_partition_has_no_leader():
    decision = decide((0, 1), state(0, (0,)), {1}, controller_epoch=EPOCH)
    assert decision is not None
    assert decision.state == PartitionState(NO_LEADER, 4, (0,), EPOCH)
    # and then nothing more, round after round
    assert decide((0, 1), decision.state, {1}, controller_epoch=EPOCH) is None
    # until it returns: it leads again, from its ISR of one
    back = decide((0, 1), decision.state, {0, 1}, controller_epoch=EPOCH)
    assert back is not None and back.state == PartitionState(0, 5, (0,), EPOCH)


def test_when_the_whole_isr_dies_the_leader_is_the_member_kept():
    assert shrink_isr((0, 1, 2), 1, {3}) == (1,)
    assert shrink_isr((0, 1, 2), NO_LEADER, set()) == (0,)
    assert shrink_isr((0, 1, 2), 1, {2}) == (2,)
    assert shrink_isr((), NO_LEADER, {0}) == ()
    decision = decide((0, 1, 2), state(1, (0, 1, 2)), {3}, controller_epoch=EPOCH)
    assert decision is not None
    assert decision.state == PartitionState(NO_LEADER, 4, (1,), EPOCH)


def test_unclean_election_lets_the_first_live_replica_lead_alone():
    current = state(0, (0,))
    clean = decide((0, 1, 2), current, {1, 2}, controller_epoch=EPOCH)
    assert clean is not None and clean.state.leader == NO_LEADER
    unclean = decide(
        (0, 1, 2), current, {1, 2}, controller_epoch=EPOCH, unclean_leader_election=True
    )
    assert unclean is not None
    assert unclean.state == PartitionState(1, 4, (1,), EPOCH)
    assert "unclean" in unclean.reason
    # a partition already without a leader is taken over the same way
    waiting = PartitionState(NO_LEADER, 4, (0,), EPOCH)
    taken = decide((0, 1, 2), waiting, {2}, controller_epoch=EPOCH, unclean_leader_election=True)
    assert taken is not None and taken.state == PartitionState(2, 5, (2,), EPOCH)
    # a clean choice is still preferred when there is one
    clean_first = decide(
        (0, 1, 2), state(0, (0, 2)), {1, 2}, controller_epoch=EPOCH, unclean_leader_election=True
    )
    assert clean_first is not None and clean_first.state.leader == 2


def test_the_preferred_replica_takes_leadership_back_when_in_sync():
    current = state(1, (1, 0, 2))
    decision = decide((0, 1, 2), current, {0, 1, 2}, controller_epoch=EPOCH)
    assert decision is not None
    assert decision.state == PartitionState(0, 4, (1, 0, 2), EPOCH)
    assert "preferred" in decision.reason
    off = decide(
        (0, 1, 2), current, {0, 1, 2}, controller_epoch=EPOCH, preferred_leader_election=False
    )
    assert off is None
    # not while it is out of the ISR (still catching up) or dead
    assert decide((0, 1, 2), state(1, (1, 2)), {0, 1, 2}, controller_epoch=EPOCH) is None
    assert decide((0, 1, 2), state(1, (1, 2)), {1, 2}, controller_epoch=EPOCH) is None


def test_a_never_led_partition_with_an_empty_isr_starts_afresh():
    never_led = PartitionState(NO_LEADER, 0, (), 1)
    assert decide((1, 2), never_led, {0}, controller_epoch=EPOCH) is None
    decision = decide((1, 2), never_led, {0, 2}, controller_epoch=EPOCH)
    assert decision is not None and decision.state == PartitionState(2, 1, (2,), EPOCH)


def test_the_leader_recovery_state_is_kept():
    recovering = PartitionState(0, 3, (0, 1), 1, leader_recovery_state=1)
    decision = decide((0, 1), recovering, {0}, controller_epoch=EPOCH)
    assert decision is not None and decision.state.leader_recovery_state == 1


# Controlled shutdown


def shutdown(broker: int, replicas: tuple[int, ...], current: PartitionState | None,
             live: set[int], shutting_down: set[int] | None = None):  # fmt: skip
    return decide_controlled_shutdown(
        broker, replicas, current, live, shutting_down or {broker}, controller_epoch=EPOCH
    )


def test_a_shutting_down_leader_hands_over_to_the_first_live_isr_member():
    decision = shutdown(0, (0, 1, 2), state(0, (0, 2, 1)), {0, 1, 2})
    assert decision is not None
    # assignment order, not ISR order; the leaving broker out of the ISR; epoch bumped
    assert decision.state == PartitionState(1, 4, (2, 1), EPOCH)
    assert "controlled shutdown of broker 0" in decision.reason
    # one out of the ISR, or dead, or shutting down itself, is passed over
    assert shutdown(0, (0, 1, 2), state(0, (0, 2)), {0, 1, 2}).state.leader == 2
    assert shutdown(0, (0, 1, 2), state(0, (0, 1, 2)), {0, 2}).state.leader == 2
    moved = shutdown(0, (0, 1, 2), state(0, (0, 1, 2)), {0, 1, 2}, {0, 1})
    assert moved is not None and moved.state == PartitionState(2, 4, (2,), EPOCH)


def test_a_leadership_nobody_else_can_take_stays():
    assert shutdown(0, (0, 1, 2), state(0, (0,)), {0, 1, 2}) is None  # alone in the ISR
    assert shutdown(0, (0, 1, 2), state(0, (0, 1)), {0, 2}) is None  # the other one dead
    assert shutdown(0, (0, 1), state(0, (0, 1)), {0, 1}, {0, 1}) is None  # both leaving


def test_a_shutting_down_follower_leaves_the_isr_unless_it_is_the_last_member():
    decision = shutdown(1, (0, 1, 2), state(0, (0, 1, 2)), {0, 1, 2})
    assert decision is not None
    assert decision.state == PartitionState(0, 4, (0, 2), EPOCH)
    assert "ISR [0, 1, 2] -> [0, 2]" in decision.reason
    assert shutdown(1, (0, 1, 2), state(0, (0, 2)), {0, 1, 2}) is None  # not in it
    # a partition without a leader keeps its last ISR member, as a dead one's does
    assert shutdown(1, (0, 1), PartitionState(NO_LEADER, 3, (1,), 1), {1}) is None


def test_partitions_not_on_the_broker_of_one_replica_or_without_state_are_left_alone():
    assert shutdown(3, (0, 1, 2), state(0, (0, 1, 2)), {0, 1, 2, 3}) is None
    assert shutdown(0, (0,), state(0, (0,)), {0}) is None
    assert shutdown(0, (0, 1), None, {0, 1}) is None


def test_the_leader_recovery_state_is_kept_by_a_controlled_shutdown():
    recovering = PartitionState(0, 3, (0, 1), 1, leader_recovery_state=1)
    decision = shutdown(0, (0, 1), recovering, {0, 1})
    assert decision is not None and decision.state.leader_recovery_state == 1


def test_no_election_gives_a_shutting_down_broker_leadership():
    down = {0}
    # the preferred replica, in sync, is not given leadership back while shutting down
    current = state(1, (1, 0, 2))
    assert decide((0, 1, 2), current, {0, 1, 2}, controller_epoch=EPOCH, shutting_down=down) is None
    # a dead leader is not replaced by it (the next in assignment order is)
    dead_leader = decide(
        (0, 1, 2), state(2, (2, 0, 1)), {0, 1}, controller_epoch=EPOCH, shutting_down=down
    )
    assert dead_leader is not None and dead_leader.state == PartitionState(1, 4, (0, 1), EPOCH)
    # nor when it is the only ISR member left: the partition waits without a leader
    only = decide((0, 1), state(1, (1, 0)), {0}, controller_epoch=EPOCH, shutting_down=down)
    assert only is not None and only.state == PartitionState(NO_LEADER, 4, (0,), EPOCH)
    unclean = decide(
        (0, 1, 2), state(2, (2,)), {0, 1}, controller_epoch=EPOCH,
        unclean_leader_election=True, shutting_down=down,
    )  # fmt: skip
    assert unclean is not None and unclean.state == PartitionState(1, 4, (1,), EPOCH)
    # a new partition neither starts led by it nor with it in the ISR
    new = decide((0, 1, 2), None, {0, 1, 2}, controller_epoch=EPOCH, shutting_down=down)
    assert new is not None and new.state == PartitionState(1, 0, (1, 2), EPOCH)
    assert initial_state((0,), {0}, EPOCH, down) is None
    # once it is gone from the set (its registration went), it is elected again
    assert decide((0, 1, 2), current, {0, 1, 2}, controller_epoch=EPOCH) is not None
