"""Apache Kafka 4.3's command-line tools against wirekafka.

Each tool runs as its own JVM (``kafka_tools.py``), the way ``bin/kafka-*.sh``
starts it, against one broker for the module (quick rebalances, and a static
``log.segment.bytes`` so configs show a broker-set source). What a tool prints is
checked against what a second, independent client (confluent-kafka) sees on the
same broker: records, committed offsets, log end offsets, timestamps. A tool that
logs a warning or an error where it should succeed fails its test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from interop_tests.broker import Broker
from interop_tests.clients.confluent_kafka import consumer_for, produce, read_all
from interop_tests.kafka_tools import KafkaTools, ToolRun, table
from interop_tests.polling import wait_for
from interop_tests.support import Got, Sample
from interop_tests.test_groups import start_group_broker

TIMEOUT_S = 60.0
SEGMENT_BYTES = 100 * 1024 * 1024  # the broker's log.segment.bytes, set statically
NUM_PARTITIONS = 3  # the broker's num.partitions, set statically


@pytest.fixture(scope="module")
def tools_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    yield from start_group_broker(
        tmp_path_factory,
        **{"log.segment.bytes": str(SEGMENT_BYTES), "num.partitions": str(NUM_PARTITIONS)},
    )


@pytest.fixture(scope="module")
def tools(tools_broker: Broker) -> KafkaTools:
    return KafkaTools(tools_broker.bootstrap)


@pytest.fixture
def new_topic(topic_name: Callable[[str], str]) -> Callable[[str], str]:
    """Topic names without underscores, which kafka-topics warns about beside periods."""
    return lambda suffix="": topic_name(suffix).replace("_", "-")


# -- what confluent-kafka sees


def create_topic(bootstrap: str, topic: str, partitions: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=configs)
    (future,) = admin.create_topics([new]).values()
    assert future.result(TIMEOUT_S) is None


def topic_partitions(bootstrap: str, topic: str) -> list[int] | None:
    """The topic's partitions in the broker's metadata; None when it has no such topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    if topic not in metadata.topics:
        return None
    return sorted(metadata.topics[topic].partitions)


def group_consumer(bootstrap: str, group: str, **config) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 3,
            **config,
        }
    )


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` for ``group``, which has no members, as a simple consumer does."""
    consumer = group_consumer(bootstrap, group)
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset of each partition that has one."""
    consumer = group_consumer(bootstrap, group)
    try:
        found = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=TIMEOUT_S
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    with consumer_for(bootstrap) as consumer:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)[1]
            for p in range(partitions)
        }


def read_everything(bootstrap: str, topic: str, partitions: int) -> list[Got]:
    counts = end_offsets(bootstrap, topic, partitions)
    with consumer_for(bootstrap) as consumer:
        return read_all(consumer, topic, counts)


def timed_samples(counts: dict[int, int], t0: int, tag: str) -> list[Sample]:
    """``counts[p]`` records for partition p, the i-th of each stamped t0 + i seconds."""
    return [
        Sample(partition=p, key=f"{tag}-{p}-{i}".encode(), value=b"v" * 10, timestamp=t0 + i * 1000)
        for p, count in counts.items()
        for i in range(count)
    ]


def iso_utc(ms: int) -> str:
    """The timestamp as the tools' --to-datetime takes it: 2023-11-14T22:13:20.500+00:00."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def whole_seconds_ago(seconds: int) -> int:
    return (int(time.time()) - seconds) * 1000


# -- what the tools print


def described(line: str) -> dict[str, str]:
    """One line of ``kafka-topics --describe``: ``Topic: t<TAB>PartitionCount: 3<TAB>...``."""
    fields = {}
    for part in line.strip().split("\t"):
        name, _, value = part.partition(": ")
        fields[name] = value
    return fields


def config_lines(run: ToolRun) -> dict[str, str]:
    """``kafka-configs --describe`` of one entity: name -> the rest of its line."""
    found = {}
    for line in run.lines[1:]:
        name, _, rest = line.strip().partition("=")
        found[name] = rest
    return found


# -- kafka-topics


@pytest.mark.slow
def test_topics_create_list_describe_delete(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    created = tools.topics(
        "--create", "--topic", topic, "--partitions", "4", "--replication-factor", "1",
        "--config", "retention.ms=3600000", "--config", "cleanup.policy=compact",
    )  # fmt: skip
    assert created.lines == [f"Created topic {topic}."]
    assert topic_partitions(tools_broker.bootstrap, topic) == [0, 1, 2, 3]

    again = tools.topics("--create", "--topic", topic, "--partitions", "4", expect_status=1)
    assert f"Topic '{topic}' already exists" in again.stdout + again.stderr or (
        "TopicExistsException" in again.stderr
    ), again.report()
    tools.topics("--create", "--if-not-exists", "--topic", topic, "--partitions", "4")
    unmade = new_topic("rf3")
    too_many = tools.topics(
        "--create", "--topic", unmade, "--replication-factor", "3", expect_status=1
    )
    assert "InvalidReplicationFactorException" in too_many.stderr, too_many.report()

    listed = tools.topics("--list", "--exclude-internal").lines
    assert topic in listed and unmade not in listed
    assert "__consumer_offsets" not in listed

    header, *partitions = tools.topics("--describe", "--topic", topic).lines
    assert described(header) == {
        "Topic": topic,
        "PartitionCount": "4",
        "ReplicationFactor": "1",
        # What is not a default: the topic's own, and the broker's static log.segment.bytes
        "Configs": f"cleanup.policy=compact,retention.ms=3600000,segment.bytes={SEGMENT_BYTES}",
    }
    assert [described(line) for line in partitions] == [
        {
            "Topic": topic,
            "Partition": str(p),
            "Leader": "0",
            "Replicas": "0",
            "Isr": "0",
            "Elr": "N/A",
            "LastKnownElr": "N/A",
        }
        for p in range(4)
    ]

    deleted = tools.topics("--delete", "--topic", topic)
    assert deleted.lines == []
    wait_for(
        lambda: topic_partitions(tools_broker.bootstrap, topic) is None,
        f"{topic} gone from the metadata",
        TIMEOUT_S,
    )
    assert topic not in tools.topics("--list").lines
    missing = tools.topics("--describe", "--topic", topic, expect_status=1)
    assert f"Topic '{topic}' does not exist as expected" in missing.stdout, missing.report()


@pytest.mark.slow
def test_topics_alter_partitions(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    tools.topics("--create", "--topic", topic, "--partitions", "2")
    tools.topics("--alter", "--topic", topic, "--partitions", "5")
    header, *partitions = tools.topics("--describe", "--topic", topic).lines
    assert described(header)["PartitionCount"] == "5"
    assert [(described(line)["Partition"], described(line)["Leader"]) for line in partitions] == [
        (str(p), "0") for p in range(5)
    ]
    # The new partitions take records and give them back.
    samples = [Sample(partition=p, key=b"k%d" % p, value=b"v%d" % p) for p in range(5)]
    assert produce(tools_broker.bootstrap, topic, samples) == [(p, 0) for p in range(5)]
    assert sorted(
        (g.partition, g.value) for g in read_everything(tools_broker.bootstrap, topic, 5)
    ) == [(p, b"v%d" % p) for p in range(5)]

    fewer = tools.topics("--alter", "--topic", topic, "--partitions", "3", expect_status=1)
    assert "InvalidPartitionsException" in fewer.stderr, fewer.report()
    assert topic_partitions(tools_broker.bootstrap, topic) == list(range(5))


# -- kafka-console-producer and kafka-console-consumer

NULL = "<null>"  # the producer's null.marker
PRODUCER_PARSING = (
    "--reader-property", "parse.key=true",
    "--reader-property", "key.separator=|",
    "--reader-property", "parse.headers=true",  # headers, a tab, then key|value
    "--reader-property", f"null.marker={NULL}",
)  # fmt: skip
CONSUMER_PRINTING = (
    "--formatter-property", "print.timestamp=true",
    "--formatter-property", "print.partition=true",
    "--formatter-property", "print.offset=true",
    "--formatter-property", "print.headers=true",
    "--formatter-property", "print.key=true",
    "--formatter-property", "key.separator=|",
    "--timeout-ms", str(int(TIMEOUT_S * 1000)),  # a missing record fails, not hangs
)  # fmt: skip

Record = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def console_lines(first: int, count: int) -> tuple[list[str], list[Record]]:
    """Lines for the console producer, and the (key, value, headers) each must become.

    Some keys, values and header values are null (the null marker); one record
    has no headers at all, one a header with an empty value.
    """
    lines, records = [], []
    for i in range(first, first + count):
        headers: list[tuple[str, bytes | None]] = [("index", str(i).encode()), ("from", b"cli")]
        key: bytes | None = f"key-{i}".encode()
        value: bytes | None = f"value {i}: with spaces, commas and colons".encode()
        if i % 5 == 1:
            key = None
        if i % 5 == 2:
            value = None
        if i % 5 == 3:
            headers += [("empty", b""), ("gone", None)]
        header_text = ",".join(f"{k}:{NULL if v is None else v.decode()}" for k, v in headers)
        if i % 5 == 4:
            headers, header_text = [], NULL
        text = lambda data: NULL if data is None else data.decode()  # noqa: E731
        lines.append(f"{header_text}\t{text(key)}|{text(value)}")
        records.append((key, value, tuple(headers)))
    return lines, records


def printed(got: Got) -> str:
    """The line the console consumer prints for a record, with CONSUMER_PRINTING."""
    if got.headers:
        headers = ",".join(f"{k}:{'null' if v is None else v.decode()}" for k, v in got.headers)
    else:
        headers = "NO_HEADERS"
    key = "null" if got.key is None else got.key.decode()
    value = "null" if got.value is None else got.value.decode()
    return (
        f"CreateTime:{got.timestamp}|Partition:{got.partition}|Offset:{got.offset}|"
        f"{headers}|{key}|{value}"
    )


def content(got: Got) -> Record:
    return (got.key, got.value, got.headers)


@pytest.mark.slow
def test_console_producer_and_consumer_round_trip(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic, group = new_topic(), new_topic("group")
    bootstrap = tools_broker.bootstrap
    lines, expected = console_lines(0, 10)
    tools.console_producer("--topic", topic, *PRODUCER_PARSING, stdin="\n".join(lines) + "\n")

    # Every line became the record it describes, and each partition holds its
    # records in the order of the lines.
    got = read_everything(bootstrap, topic, NUM_PARTITIONS)
    assert sorted(map(content, got), key=repr) == sorted(expected, key=repr)
    for p in range(NUM_PARTITIONS):
        indexes = [expected.index(content(g)) for g in got if g.partition == p]
        assert indexes == sorted(indexes), f"partition {p} holds lines {indexes}"

    # The console consumer prints each of them as it is stored, and commits.
    consumed = tools.console_consumer(
        "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "10",
        *CONSUMER_PRINTING,
    )  # fmt: skip
    assert sorted(consumed.lines) == sorted(map(printed, got))
    assert "Processed a total of 10 messages" in consumed.stderr, consumed.report()
    ends = end_offsets(bootstrap, topic, NUM_PARTITIONS)
    assert committed(bootstrap, group, topic, NUM_PARTITIONS) == ends

    # The group goes on from what it committed: only the new records.
    more_lines, more = console_lines(10, 3)
    tools.console_producer("--topic", topic, *PRODUCER_PARSING, stdin="\n".join(more_lines))
    resumed = tools.console_consumer(
        "--topic", topic, "--group", group, "--max-messages", "3", *CONSUMER_PRINTING
    )
    got_more = [
        g
        for g in read_everything(bootstrap, topic, NUM_PARTITIONS)
        if g.offset >= ends[g.partition]
    ]
    assert sorted(map(content, got_more), key=repr) == sorted(more, key=repr)
    assert sorted(resumed.lines) == sorted(map(printed, got_more))
    assert committed(bootstrap, group, topic, NUM_PARTITIONS) == end_offsets(
        bootstrap, topic, NUM_PARTITIONS
    )


def test_console_consumer_partition_and_offset(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    samples = [
        Sample(partition=i % 3, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(15)
    ]
    produce(tools_broker.bootstrap, topic, samples)
    consumed = tools.console_consumer(
        "--topic", topic, "--partition", "1", "--offset", "2", "--max-messages", "2",
        "--formatter-property", "print.offset=true",
        "--formatter-property", "print.partition=true",
        "--formatter-property", "print.key=true",
        "--timeout-ms", str(int(TIMEOUT_S * 1000)),
    )  # fmt: skip
    # Partition 1 holds records 1, 4, 7, 10, 13 at offsets 0-4.
    assert consumed.lines == [
        "Partition:1\tOffset:2\tk7\tv7",
        "Partition:1\tOffset:3\tk10\tv10",
    ]


# -- kafka-consumer-groups

GROUP_COUNTS = {0: 5, 1: 3, 2: 0}  # records per partition


def group_with_offsets(bootstrap: str, topic: str, group: str, offsets: dict[int, int]) -> int:
    """A topic with GROUP_COUNTS records, stamped t0 + i s; ``group`` committed ``offsets``
    and has no members. Returns t0."""
    t0 = whole_seconds_ago(3600)
    create_topic(bootstrap, topic, len(GROUP_COUNTS))
    produce(bootstrap, topic, timed_samples(GROUP_COUNTS, t0, topic))
    commit(bootstrap, group, topic, offsets)
    return t0


def offsets_table(run: ToolRun) -> dict[int, tuple[str, ...]]:
    """``--describe --group`` as partition -> (current offset, log end offset, lag, consumer id)."""
    return {
        int(row["PARTITION"]): (
            row["CURRENT-OFFSET"],
            row["LOG-END-OFFSET"],
            row["LAG"],
            row["CONSUMER-ID"],
        )
        for row in table(run.lines, "GROUP")
    }


@pytest.mark.slow
def test_consumer_groups_list_and_describe_lag(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic, group = new_topic(), new_topic("group")
    bootstrap = tools_broker.bootstrap
    group_with_offsets(bootstrap, topic, group, {0: 2, 1: 3, 2: 0})

    assert group in tools.consumer_groups("--list").lines
    assert offsets_table(tools.consumer_groups("--describe", "--group", group)) == {
        0: ("2", "5", "3", "-"),
        1: ("3", "3", "0", "-"),
        2: ("0", "0", "0", "-"),
    }
    (state,) = table(
        tools.consumer_groups("--describe", "--group", group, "--state").lines, "GROUP"
    )
    assert (state["STATE"], state["#MEMBERS"]) == ("Empty", "0")

    # With a member: its id owns every partition; the offsets are the committed ones.
    member = group_consumer(bootstrap, group, **{"partition.assignment.strategy": "range"})
    try:
        member.subscribe([topic])
        wait_for(
            lambda: (member.poll(0.2), len(member.assignment()) == 3)[1],
            "the member's assignment",
            TIMEOUT_S,
        )
        member_id = member.memberid()
        assert offsets_table(tools.consumer_groups("--describe", "--group", group)) == {
            0: ("2", "5", "3", member_id),
            1: ("3", "3", "0", member_id),
            2: ("0", "0", "0", member_id),
        }
        (state,) = table(
            tools.consumer_groups("--describe", "--group", group, "--state").lines, "GROUP"
        )
        assert (state["STATE"], state["#MEMBERS"], state["ASSIGNMENT-STRATEGY"]) == (
            "Stable",
            "1",
            "range",
        )
        (row,) = table(
            tools.consumer_groups("--describe", "--group", group, "--members").lines, "GROUP"
        )
        assert (row["CONSUMER-ID"], row["HOST"], row["#PARTITIONS"]) == (
            member_id,
            "/127.0.0.1",
            "3",
        )
        listed = table(tools.consumer_groups("--list", "--state", "Stable").lines, "GROUP")
        assert {"GROUP": group, "STATE": "Stable"} in listed

        # An active group's offsets are not reset, nor is it deleted (the tool says so,
        # and exits with 0 as it does).
        refused = tools.consumer_groups(
            "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"
        )
        assert (
            f"Error: Assignments can only be reset if the group '{group}' is inactive, "
            "but the current state is Stable."
        ) in refused.lines, refused.report()
        assert table(refused.lines, "GROUP") == []
        kept = tools.consumer_groups("--delete", "--group", group)
        assert (
            f"* Group '{group}' could not be deleted due to: "
            "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."
        ) in kept.lines, kept.report()
        assert committed(bootstrap, group, topic, 3) == {0: 2, 1: 3, 2: 0}
    finally:
        member.close()
    listed = table(tools.consumer_groups("--list", "--state", "Stable").lines, "GROUP")
    assert group not in [row["GROUP"] for row in listed]


@pytest.mark.slow
def test_consumer_groups_reset_offsets(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic, group = new_topic(), new_topic("group")
    bootstrap = tools_broker.bootstrap
    t0 = group_with_offsets(bootstrap, topic, group, {0: 4, 1: 2, 2: 0})
    reset = ("--reset-offsets", "--group", group, "--topic", topic)

    def new_offsets(run: ToolRun) -> dict[int, int]:
        return {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(run.lines, "GROUP")}

    planned = tools.consumer_groups(*reset, "--to-earliest", "--dry-run")
    assert new_offsets(planned) == {0: 0, 1: 0, 2: 0}
    assert committed(bootstrap, group, topic, 3) == {0: 4, 1: 2, 2: 0}  # a dry run changes nothing

    done = tools.consumer_groups(*reset, "--to-earliest", "--execute")
    assert new_offsets(done) == {0: 0, 1: 0, 2: 0}
    assert committed(bootstrap, group, topic, 3) == {0: 0, 1: 0, 2: 0}

    # 2.5 s after t0: partition 0's first record at or after it is offset 3 (t0 + 3 s);
    # partition 1 has none (its last is t0 + 2 s) and partition 2 no records: both go
    # to their log end.
    at = iso_utc(t0 + 2500)
    assert new_offsets(tools.consumer_groups(*reset, "--to-datetime", at, "--dry-run")) == {
        0: 3,
        1: 3,
        2: 0,
    }
    assert committed(bootstrap, group, topic, 3) == {0: 0, 1: 0, 2: 0}
    tools.consumer_groups(*reset, "--to-datetime", at, "--execute")
    assert committed(bootstrap, group, topic, 3) == {0: 3, 1: 3, 2: 0}
    assert offsets_table(tools.consumer_groups("--describe", "--group", group)) == {
        0: ("3", "5", "2", "-"),
        1: ("3", "3", "0", "-"),
        2: ("0", "0", "0", "-"),
    }


@pytest.mark.slow
def test_consumer_groups_delete(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic, group, other = new_topic(), new_topic("group"), new_topic("other")
    bootstrap = tools_broker.bootstrap
    group_with_offsets(bootstrap, topic, group, {0: 1})
    commit(bootstrap, other, topic, {1: 2, 2: 0})

    # One partition's offset of a group (OffsetDelete), then a whole group.
    removed = tools.consumer_groups("--delete-offsets", "--group", other, "--topic", f"{topic}:2")
    assert f"Request succeeded for deleting offsets from group {other}." in removed.lines
    assert [(r["TOPIC"], r["PARTITION"], r["STATUS"]) for r in table(removed.lines, "TOPIC")] == [
        (topic, "2", "Successful")
    ]
    assert committed(bootstrap, other, topic, 3) == {1: 2}
    deleted = tools.consumer_groups("--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.lines
    listed = tools.consumer_groups("--list").lines
    assert group not in listed and other in listed
    assert committed(bootstrap, group, topic, 3) == {}
    assert committed(bootstrap, other, topic, 3) == {1: 2}
    gone = tools.consumer_groups("--describe", "--group", group)
    assert f"Error: Consumer group '{group}' does not exist." in gone.lines, gone.report()


# -- kafka-configs


@pytest.mark.slow
def test_configs_describe_topic_and_broker(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    create_topic(
        tools_broker.bootstrap, topic, 1, **{"retention.ms": "3600000", "cleanup.policy": "compact"}
    )
    of_topic = ("--entity-type", "topics", "--entity-name", topic)

    # Without --all, the topic's own configs, each with the broker keys that would
    # set it otherwise.
    own = tools.configs("--describe", *of_topic)
    assert own.lines[0] == f"Dynamic configs for topic {topic} are:"
    assert config_lines(own) == {
        "cleanup.policy": "compact sensitive=false synonyms="
        "{DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "retention.ms": "3600000 sensitive=false synonyms="
        "{DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}",
    }
    every = tools.configs("--describe", "--all", *of_topic)
    assert every.lines[0] == f"All configs for topic {topic} are:"
    every_config = config_lines(every)
    assert every_config["segment.bytes"] == (
        f"{SEGMENT_BYTES} sensitive=false synonyms={{STATIC_BROKER_CONFIG:log.segment.bytes="
        f"{SEGMENT_BYTES}, DEFAULT_CONFIG:log.segment.bytes={1024**3}}}"
    )
    assert every_config["segment.ms"] == (
        "604800000 sensitive=false synonyms={DEFAULT_CONFIG:log.roll.hours=168}"
    )
    assert every_config["retention.ms"] == config_lines(own)["retention.ms"]
    assert every_config["delete.retention.ms"] == (
        "86400000 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000}"
    )

    # The broker: nothing set at run time; with --all, every key and where it comes from.
    of_broker = ("--entity-type", "brokers", "--entity-name", "0")
    assert tools.configs("--describe", *of_broker).lines == ["Dynamic configs for broker 0 are:"]
    cluster_defaults = ("--entity-type", "brokers", "--entity-default")
    assert tools.configs("--describe", "--all", *cluster_defaults).lines == [
        "Default configs for brokers in the cluster are:"
    ]
    broker_all = tools.configs("--describe", "--all", *of_broker)
    assert broker_all.lines[0] == "All configs for broker 0 are:"
    broker_config = config_lines(broker_all)
    assert broker_config["num.partitions"] == (
        f"{NUM_PARTITIONS} sensitive=false synonyms={{STATIC_BROKER_CONFIG:num.partitions="
        f"{NUM_PARTITIONS}, DEFAULT_CONFIG:num.partitions=1}}"
    )
    assert broker_config["log.segment.bytes"] == every_config["segment.bytes"]
    assert broker_config["log.retention.hours"] == (
        "168 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}"
    )
    assert broker_config["log.retention.ms"] == "null sensitive=false synonyms={}"
    assert broker_config["log.dirs"] == (
        f"{tools_broker.data_dir} sensitive=false "
        f"synonyms={{STATIC_BROKER_CONFIG:log.dirs={tools_broker.data_dir}}}"
    )

    unknown = new_topic("none")
    assert tools.configs(
        "--describe", "--entity-type", "topics", "--entity-name", unknown
    ).lines == [f"The topic '{unknown}' doesn't exist and doesn't have dynamic config."]


@pytest.mark.slow
def test_configs_alter_topic(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    bootstrap = tools_broker.bootstrap
    create_topic(bootstrap, topic, 1, **{"retention.ms": "3600000"})
    of_topic = ("--entity-type", "topics", "--entity-name", topic)
    an_hour_ago = whole_seconds_ago(3600)

    def stamped(index: int) -> tuple[int, int]:
        """Produce a record stamped an hour ago; the (type, timestamp) it is read with."""
        produce(bootstrap, topic, [Sample(0, b"k", b"v%d" % index, timestamp=an_hour_ago)])
        with consumer_for(bootstrap) as consumer:
            consumer.assign([TopicPartition(topic, 0, index)])
            deadline = time.monotonic() + TIMEOUT_S
            while time.monotonic() < deadline:
                for message in consumer.consume(num_messages=1, timeout=0.5):
                    assert message.error() is None, message.error()
                    assert (message.offset(), message.value()) == (index, b"v%d" % index)
                    return message.timestamp()
        raise AssertionError(f"record {index} of {topic} not read within {TIMEOUT_S} s")

    assert stamped(0) == (TIMESTAMP_CREATE_TIME, an_hour_ago)

    altered = tools.configs(
        "--alter", *of_topic,
        "--add-config", "message.timestamp.type=LogAppendTime,retention.ms=7200000",
    )  # fmt: skip
    assert altered.lines == [f"Completed updating config for topic {topic}."]
    assert config_lines(tools.configs("--describe", *of_topic)) == {
        "message.timestamp.type": "LogAppendTime sensitive=false synonyms="
        "{DYNAMIC_TOPIC_CONFIG:message.timestamp.type=LogAppendTime, "
        "DEFAULT_CONFIG:log.message.timestamp.type=CreateTime}",
        "retention.ms": "7200000 sensitive=false synonyms="
        "{DYNAMIC_TOPIC_CONFIG:retention.ms=7200000, DEFAULT_CONFIG:log.retention.hours=168}",
    }
    # In effect: the broker stamps what it appends.
    before = int(time.time() * 1000)
    kind, timestamp = stamped(1)
    assert kind == TIMESTAMP_LOG_APPEND_TIME and timestamp >= before - 1000

    removed = tools.configs("--alter", *of_topic, "--delete-config", "message.timestamp.type")
    assert removed.lines == [f"Completed updating config for topic {topic}."]
    assert list(config_lines(tools.configs("--describe", *of_topic))) == ["retention.ms"]
    assert stamped(2) == (TIMESTAMP_CREATE_TIME, an_hour_ago)

    bad = tools.configs("--alter", *of_topic, "--add-config", "retention.ms=soon", expect_status=1)
    assert "InvalidConfigurationException" in bad.stdout + bad.stderr, bad.report()
    assert list(config_lines(tools.configs("--describe", *of_topic))) == ["retention.ms"]


# -- kafka-get-offsets


@pytest.mark.slow
def test_get_offsets(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    bootstrap = tools_broker.bootstrap
    t0 = whole_seconds_ago(3600)
    create_topic(bootstrap, topic, 3)
    produce(bootstrap, topic, timed_samples({0: 5, 1: 3, 2: 0}, t0, topic))
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    (deleted,) = admin.delete_records([TopicPartition(topic, 0, 2)]).values()
    assert deleted.result(TIMEOUT_S).low_watermark == 2  # partition 0 now starts at 2

    def offsets(*args: str) -> list[str]:
        return tools.get_offsets("--topic", topic, *args).lines

    assert offsets() == [f"{topic}:0:5", f"{topic}:1:3", f"{topic}:2:0"]  # --time -1, latest
    assert offsets("--time", "-1") == [f"{topic}:0:5", f"{topic}:1:3", f"{topic}:2:0"]
    assert offsets("--time", "-2") == [f"{topic}:0:2", f"{topic}:1:0", f"{topic}:2:0"]
    # The record with the largest timestamp (the last); an empty partition has none.
    assert offsets("--time", "-3") == [f"{topic}:0:4", f"{topic}:1:2"]
    # The first record at or after 1.5 s past t0 (none in partition 1 after 2.5 s).
    assert offsets("--time", str(t0 + 1500)) == [f"{topic}:0:2", f"{topic}:1:2"]
    assert offsets("--time", str(t0 + 2500), "--partitions", "0,1") == [f"{topic}:0:3"]
    assert tools.get_offsets("--topic-partitions", f"{topic}:1,{topic}:2").lines == [
        f"{topic}:1:3",
        f"{topic}:2:0",
    ]


# -- kafka-producer-perf-test and kafka-consumer-perf-test

PERF_RECORDS = 5000
PERF_RECORD_BYTES = 100


def test_producer_and_consumer_perf_tests(
    tools: KafkaTools, tools_broker: Broker, new_topic: Callable[[str], str]
) -> None:
    topic = new_topic()
    bootstrap = tools_broker.bootstrap
    produced = tools.producer_perf_test(
        "--topic", topic, "--num-records", str(PERF_RECORDS),
        "--record-size", str(PERF_RECORD_BYTES), "--throughput", "-1",
        "--command-property", "acks=all", "linger.ms=5",
    )  # fmt: skip
    summary = produced.lines[-1]
    assert summary.startswith(f"{PERF_RECORDS} records sent, "), produced.report()
    for part in ("records/sec", "ms avg latency", "ms max latency", "99.9th."):
        assert part in summary, produced.report()

    # Every record is there, as the tool made it: no key, 100 random capital letters.
    got = read_everything(bootstrap, topic, NUM_PARTITIONS)
    assert len(got) == PERF_RECORDS
    assert {g.key for g in got} == {None}
    assert all(
        g.value is not None and len(g.value) == PERF_RECORD_BYTES and g.value.isupper() for g in got
    )

    consumed = tools.consumer_perf_test(
        "--topic", topic, "--num-records", str(PERF_RECORDS), "--timeout", str(int(TIMEOUT_S * 1000))
    )  # fmt: skip
    header, row = consumed.lines[-2:]
    stats = dict(zip(header.split(", "), row.split(", "), strict=True))
    assert int(stats["data.consumed.in.nMsg"]) == PERF_RECORDS, consumed.report()
    megabytes = PERF_RECORDS * PERF_RECORD_BYTES / 1024 / 1024
    assert float(stats["data.consumed.in.MB"]) == pytest.approx(megabytes, abs=0.0001)
    assert float(stats["nMsg.sec"]) > 0
