"""Reading partitions with kafka-python up to their end, without waiting for silence.

A consumer that reads "until nothing new comes for a few seconds" spends those
seconds on every read. :func:`read_to_end` asks the broker for the end offsets
first and stops once every assigned partition's position reaches its end. The
consumer's ``consumer_timeout_ms`` is left to bound a wait for records that
are not there (compacted away at the end of a log).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from interop_tests.support import Deadline

IDLE_TIMEOUT_MS = 3000  # a consumer_timeout_ms for consumers read with read_to_end
END_OFFSETS_TIMEOUT_S = 60.0


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


def iter_to_end(consumer: KafkaConsumer) -> Iterator[ConsumerRecord]:
    """The records of ``consumer``'s assigned partitions, from their positions up to the
    end offsets the broker gives now, as the consumer delivers them (an error such as
    CorruptRecordError comes after the records before it)."""
    partitions = list(consumer.assignment())
    ends = end_offsets(consumer, partitions)

    def at_end() -> bool:
        return all(consumer.position(tp) >= ends[tp] for tp in partitions)

    if at_end():
        return
    for record in consumer:  # it moves the position past each record before handing it out
        yield record
        if at_end():
            return


def read_to_end(consumer: KafkaConsumer) -> list[ConsumerRecord]:
    return list(iter_to_end(consumer))
