"""Reading partitions with kafka-python up to their end, without waiting for silence.

A consumer that reads "until nothing new comes for a few seconds" spends those
seconds on every read. :func:`read_to_end` asks the broker for the end offsets
first and stops once every assigned partition's position reaches its end.

The consumer's ``consumer_timeout_ms`` (:data:`IDLE_TIMEOUT_MS`) ends its
iteration after that long without a record. On a loaded machine a broker can
be that slow, so the reading goes on until :data:`READ_TIMEOUT_S` and then
fails naming the positions it reached: a short read never passes for the
whole log. Only where records may be missing at the end of a log (compacted
away) does one idle period end the reading (``may_end_short``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from interop_tests.support import Deadline

IDLE_TIMEOUT_MS = 3000  # a consumer_timeout_ms for consumers read with read_to_end
END_OFFSETS_TIMEOUT_S = 60.0
READ_TIMEOUT_S = 60.0  # to read up to the end offsets, however long the idle periods


def end_offsets(consumer: KafkaConsumer, partitions: list[TopicPartition]) -> dict:
    """The partitions' end offsets. While a partition has no leader (a broker of a
    cluster restarting), kafka-python 3.0 answers for the others only and then
    fails on a KeyError: asked again until every partition has one."""
    deadline = Deadline(END_OFFSETS_TIMEOUT_S)
    while True:
        try:
            return consumer.end_offsets(partitions)
        except KeyError:
            deadline.check(f"the end offsets of {partitions}")
            time.sleep(0.1)


def iter_to_end(
    consumer: KafkaConsumer,
    *,
    may_end_short: bool = False,
    ends: dict[TopicPartition, int] | None = None,
) -> Iterator[ConsumerRecord]:
    """The records of ``consumer``'s assigned partitions, from their positions up to the
    end offsets the broker gives now (or ``ends``), as the consumer delivers them (an
    error such as CorruptRecordError comes after the records before it)."""
    partitions = list(consumer.assignment())
    if ends is None:
        ends = end_offsets(consumer, partitions)
    deadline = Deadline(READ_TIMEOUT_S)

    def at_end() -> bool:
        return all(consumer.position(tp) >= ends[tp] for tp in partitions)

    while not at_end():
        # it moves the position past each record before handing it out, and stops
        # after consumer_timeout_ms without one
        for record in consumer:
            yield record
            if at_end():
                return
        if may_end_short:
            return
        positions = {f"{tp.topic}/{tp.partition}": consumer.position(tp) for tp in partitions}
        deadline.check(f"records up to the end offsets; positions {positions}, ends {ends}")


def read_to_end(
    consumer: KafkaConsumer,
    *,
    may_end_short: bool = False,
    ends: dict[TopicPartition, int] | None = None,
) -> list[ConsumerRecord]:
    return list(iter_to_end(consumer, may_end_short=may_end_short, ends=ends))
