"""Kafka's rack-unaware replica assignment, against the examples Kafka documents and tests."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from wirekafka.zk.assignment import (
    InvalidReplicationFactor,
    assign_replicas,
    replicas_for_new_partitions,
    replication_factor_error,
)


def test_kafkas_documented_example_five_brokers_ten_partitions_three_replicas():
    # AdminUtils' doc comment (start index 0, shift 0), as AdminUtilsTest expects it
    assert assign_replicas(range(5), 10, 3, start_index=0, replica_shift=0) == {
        0: (0, 1, 2),
        1: (1, 2, 3),
        2: (2, 3, 4),
        3: (3, 4, 0),
        4: (4, 0, 1),
        5: (0, 2, 3),
        6: (1, 3, 4),
        7: (2, 4, 0),
        8: (3, 0, 1),
        9: (4, 1, 2),
    }


def test_brokers_are_taken_in_id_order_whatever_order_they_come_in():
    assert assign_replicas([12, 10, 11], 3, 2, start_index=1, replica_shift=0) == {
        0: (11, 12),
        1: (12, 10),
        2: (10, 11),
    }


def test_a_random_start_and_shift_still_balance_leaders_and_replicas():
    for seed in range(20):
        assignment = assign_replicas(range(4), 8, 3, rng=random.Random(seed))
        leaders = Counter(replicas[0] for replicas in assignment.values())
        assert sorted(leaders.values()) == [2, 2, 2, 2]
        hosted = Counter(r for replicas in assignment.values() for r in replicas)
        assert sorted(hosted.values()) == [6, 6, 6, 6]
        assert all(len(set(replicas)) == 3 for replicas in assignment.values())


def test_the_random_start_and_shift_come_from_the_rng_given():
    first = assign_replicas(range(6), 12, 3, rng=random.Random(7))
    assert assign_replicas(range(6), 12, 3, rng=random.Random(7)) == first
    starts = {assign_replicas(range(6), 1, 1, rng=random.Random(seed))[0][0] for seed in range(50)}
    assert len(starts) > 1  # not always the lowest broker


@pytest.mark.parametrize(
    ("replication_factor", "brokers", "message"),
    [
        (3, 1, "Replication factor: 3 larger than available brokers: 1."),
        (4, 3, "Replication factor: 4 larger than available brokers: 3."),
        (0, 3, "Replication factor must be larger than 0."),
        (-1, 3, "Replication factor must be larger than 0."),
    ],
)
def test_a_replication_factor_the_brokers_cannot_hold_is_refused_in_kafkas_words(
    replication_factor, brokers, message
):
    assert replication_factor_error(replication_factor, brokers) == message
    with pytest.raises(InvalidReplicationFactor, match=message.replace(".", r"\.")):
        assign_replicas(range(brokers), 2, replication_factor, start_index=0, replica_shift=0)
    assert replication_factor_error(brokers, brokers) is None


def test_added_partitions_continue_the_topics_assignment():
    # Kafka starts them at partition 0's preferred leader, with that index as the shift:
    # a topic placed from start 0 grows as if it had been created with every partition.
    whole = assign_replicas(range(5), 10, 3, start_index=0, replica_shift=0)
    first_four = {p: whole[p] for p in range(4)}
    assert replicas_for_new_partitions(range(5), first_four, 10) == {
        p: whole[p] for p in range(4, 10)
    }


def test_added_partitions_keep_the_replication_factor_and_start_at_partition_0s_leader():
    existing = {0: (2, 3), 1: (3, 1)}  # partition 0 led by broker 2: index 1 of [1, 2, 3]
    added = replicas_for_new_partitions([1, 2, 3], existing, 5)
    assert added == assign_replicas(
        [1, 2, 3], 3, 2, start_index=1, replica_shift=1, first_partition=2
    )
    assert list(added) == [2, 3, 4]
    assert all(len(replicas) == 2 for replicas in added.values())
    with pytest.raises(InvalidReplicationFactor, match="larger than available brokers: 1"):
        replicas_for_new_partitions([1], existing, 3)
