"""The admin requests the ``groups`` tool makes, through confluent-kafka's
AdminClient, with every failure turned into a :class:`CommandError` that names
the broker, the group or topic, and Kafka's error code.

Groups come from ListGroups and DescribeGroups, committed offsets from
OffsetFetch, new ones go out in OffsetCommit (AlterConsumerGroupOffsets),
deletion is DeleteGroups, and a partition's log start, log end and offset at
a time come from ListOffsets. Topic metadata comes from a Metadata request
that does not create topics.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    OffsetSpec,
)

from wirekafka.cli.errors import CommandError, from_kafka_error
from wirekafka.cli.kafka_clients import admin_client, kafka_error, wait

Partition = tuple[str, int]  # (topic, partition)

# Kafka's names of the group states, as DescribeGroups and ListGroups spell them
STATE_NAMES: dict[ConsumerGroupState, str] = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}


def state_name(state: object) -> str:
    """Kafka's name of a state confluent-kafka reports (``Unknown`` for others)."""
    return STATE_NAMES.get(state, "Unknown") if isinstance(state, ConsumerGroupState) else "Unknown"


class GroupAdmin:
    """One AdminClient for one run of the tool (``--bootstrap-server``,
    ``--command-config``; ``--timeout`` bounds each request)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.broker: str = args.bootstrap_server
        self.timeout_s: float = args.timeout
        self._args = args
        self._admin = admin_client(args)

    def error(
        self, error: KafkaError, *, doing: str, group: str | None = None, topic: str | None = None
    ) -> CommandError:
        return from_kafka_error(error, broker=self.broker, doing=doing, group=group, topic=topic)

    def list_groups(self, states: Iterable[ConsumerGroupState] = ()) -> list[ConsumerGroupListing]:
        """Every consumer group (ListGroups to each broker), optionally only in ``states``."""
        options: dict[str, Any] = {"request_timeout": self.timeout_s}
        wanted = set(states)
        if wanted:
            options["states"] = wanted
        result = wait(
            self._admin.list_consumer_groups(**options), self._args, doing="list consumer groups"
        )
        if result.errors:
            raise self.error(result.errors[0], doing="list consumer groups")
        listed: list[ConsumerGroupListing] = result.valid
        return sorted(listed, key=lambda listing: listing.group_id)

    def describe(self, group_ids: list[str]) -> dict[str, ConsumerGroupDescription]:
        """DescribeGroups: state, coordinator and members of each group (a group
        the coordinator does not know comes back ``Dead`` with no members)."""
        futures = self._admin.describe_consumer_groups(
            list(dict.fromkeys(group_ids)), request_timeout=self.timeout_s
        )
        return {
            group: wait(future, self._args, doing="describe", group=group)
            for group, future in futures.items()
        }

    def committed(self, group: str) -> dict[Partition, int]:
        """OffsetFetch: the group's committed offsets (partitions without one left out)."""
        futures = self._admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout_s
        )
        answer = wait(futures[group], self._args, doing="fetch committed offsets of", group=group)
        committed: dict[Partition, int] = {}
        for tp in answer.topic_partitions or []:
            if tp.error is not None:
                raise self.error(tp.error, doing="fetch committed offsets of", group=group)
            if tp.offset >= 0:
                committed[(tp.topic, tp.partition)] = tp.offset
        return committed

    def list_offsets(
        self, partitions: Iterable[Partition], spec: OffsetSpec
    ) -> dict[Partition, int | KafkaError]:
        """ListOffsets for each partition: the offset (-1: none), or the partition's error."""
        wanted = {TopicPartition(topic, partition): spec for topic, partition in partitions}
        if not wanted:
            return {}
        futures = self._admin.list_offsets(wanted, request_timeout=self.timeout_s)
        found: dict[Partition, int | KafkaError] = {}
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException as exc:
                found[(tp.topic, tp.partition)] = kafka_error(exc)
        return found

    def partitions_of(self, topic: str) -> list[int]:
        """The topic's partition numbers (Metadata; an unknown topic is an error)."""
        futures = self._admin.describe_topics(
            TopicCollection([topic]), request_timeout=self.timeout_s
        )
        described = wait(futures[topic], self._args, doing="describe", topic=topic)
        return sorted(p.id for p in described.partitions)

    def alter(self, group: str, offsets: Mapping[Partition, int]) -> None:
        """OffsetCommit outside membership: the group's new offsets (AlterConsumerGroupOffsets)."""
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, offset) for (t, p), offset in sorted(offsets.items())]
        )
        futures = self._admin.alter_consumer_group_offsets(
            [request], request_timeout=self.timeout_s
        )
        answer = wait(futures[group], self._args, doing="commit offsets of", group=group)
        for tp in answer.topic_partitions or []:
            if tp.error is not None:
                raise self.error(
                    tp.error,
                    doing=f"commit offset {tp.offset} (partition {tp.partition}) of",
                    group=group,
                    topic=tp.topic,
                )

    def delete(self, group_ids: list[str]) -> dict[str, CommandError | None]:
        """DeleteGroups: each group's failure (its error code named), or ``None``."""
        futures = self._admin.delete_consumer_groups(
            list(dict.fromkeys(group_ids)), request_timeout=self.timeout_s
        )
        outcome: dict[str, CommandError | None] = {}
        for group, future in futures.items():
            try:
                future.result()
            except KafkaException as exc:
                outcome[group] = self.error(kafka_error(exc), doing="delete", group=group)
            else:
                outcome[group] = None
        return outcome
