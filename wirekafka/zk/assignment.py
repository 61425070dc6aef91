"""Where a topic's replicas go: Kafka's rack-unaware assignment (sans-IO).

``AdminUtils.assignReplicasToBrokersRackUnaware``: the brokers sorted by id;
partition p's first replica (its preferred leader) is broker
``(p + start_index) % n``, so first replicas go round robin; the others follow
it at a shift, ``1 + (replica_shift + j) % (n - 1)`` places on for the j-th
follower, and the shift grows by one every n partitions, so that the followers
of a broker's partitions are not always the same brokers. Kafka picks the start
index and the first shift at random for a new topic (so that topics do not all
begin on the lowest broker); both can be given, as tests and the addition of
partitions give them. With 5 brokers, start 0 and shift 0 (Kafka's example)::

    broker-0  broker-1  broker-2  broker-3  broker-4
    p0        p1        p2        p3        p4       (1st replica)
    p5        p6        p7        p8        p9       (1st replica)
    p4        p0        p1        p2        p3       (2nd replica)
    p8        p9        p5        p6        p7       (2nd replica)
    p3        p4        p0        p1        p2       (3rd replica)
    p7        p8        p9        p5        p6       (3rd replica)
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

__all__ = [
    "InvalidReplicationFactor",
    "assign_replicas",
    "replicas_for_new_partitions",
    "replication_factor_error",
]


class InvalidReplicationFactor(ValueError):
    """More replicas asked for than there are live brokers, or fewer than one."""


def replication_factor_error(replication_factor: int, live_brokers: int) -> str | None:
    """Kafka's words (``AdminUtils.assignReplicasToBrokers``) for a replication
    factor the live brokers cannot hold; None when they can."""
    if replication_factor <= 0:
        return "Replication factor must be larger than 0."
    if replication_factor > live_brokers:
        return (
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{live_brokers}."
        )
    return None


def assign_replicas(
    brokers: Iterable[int],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions ``first_partition`` .. ``first_partition + partitions - 1``
    over ``brokers`` (sorted here), preferred leader first.

    ``start_index`` and ``replica_shift``: Kafka's ``startIndex`` and first
    ``nextReplicaShift``; None picks each at random (from ``rng``), as Kafka does.
    Raises :class:`InvalidReplicationFactor` as Kafka does."""
    ids = sorted(set(brokers))
    error = replication_factor_error(replication_factor, len(ids))
    if error is not None:
        raise InvalidReplicationFactor(error)
    if partitions < 0:
        raise ValueError(f"partitions must be at least 0, got {partitions}")
    n = len(ids)
    draw = rng or random.Random()
    start = start_index if start_index is not None else draw.randrange(n)
    shift = replica_shift if replica_shift is not None else draw.randrange(n)
    assignment: dict[int, tuple[int, ...]] = {}
    for partition in range(first_partition, first_partition + partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        followers = (
            ids[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(replication_factor - 1)
        )
        assignment[partition] = (ids[first], *followers)
    return assignment


def replicas_for_new_partitions(
    brokers: Iterable[int], existing: Mapping[int, tuple[int, ...]], partitions: int
) -> dict[int, tuple[int, ...]]:
    """Replicas for the partitions added to a topic that has ``existing``, up to
    ``partitions`` in all, as Kafka's ``AdminZkClient.createPartitions`` places them:
    the topic's replication factor (partition 0's), start index and shift both the
    position of partition 0's preferred leader among the brokers (the first broker
    with an id at least as high), continuing from the existing partition count."""
    ids = sorted(set(brokers))
    first = len(existing)
    replication_factor = len(existing[0]) if existing else 1
    leader_0 = existing[0][0] if existing and existing[0] else 0
    start = next((i for i, broker in enumerate(ids) if broker >= leader_0), 0)
    return assign_replicas(
        ids,
        partitions - first,
        replication_factor,
        start_index=start,
        replica_shift=start,
        first_partition=first,
    )
