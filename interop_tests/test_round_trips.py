"""Every client produces, reads back, seeks and creates topics against wirekafka.

Each scenario runs with every adapter of ``interop_tests/clients/registry.py``
that declares what it needs (see ``interop_tests/scenarios.py``):

* Round trip, per codec the client produces with: it writes 10,000 records
  to 3 partitions of a topic it auto-creates (keys, some null; binary values;
  headers with repeated keys and empty values; its own timestamps: whatever it
  can), each acknowledged at the next offset of its partition; it reads them
  back byte for byte, at offsets 0, 1, 2... (pykafka's 0.10 protocol cannot read
  LZ4: its 0.9 sibling does); the broker stores them as record batches with that
  codec, and with a producer id exactly when the client is idempotent by default.
* Seeking, on the same records and one more produced after them: from the end
  of a partition nothing; from an offset the records from there, the new one
  included; from a time (ListOffsets) the first record at or after it, an exact
  timestamp, one between two records, one past the end; each partition's first
  and end offsets.
* Topics: one created with the admin client is described with its partitions,
  led by broker 0, and listed, and creating it again fails; one auto-created by
  a producer has ``num.partitions`` partitions (describing it first creates it
  only for clients whose Metadata version cannot ask not to); with
  auto-creation off, producing to a missing topic fails with the client's own
  error and the topic stays unknown.
* Producing with acks 0, 1 and all, not idempotently (acks=0: no offsets come
  back), and idempotently where the client can be asked to.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest

from interop_tests.broker import Broker, Brokers
from interop_tests.clients.adapter import (
    LATEST,
    UNTIL_END,
    AtTime,
    Capability,
    ClientAdapter,
    Offset,
    TopicAlreadyExists,
)
from interop_tests.clients.registry import with_capabilities
from interop_tests.scenarios import (
    as_read_by,
    assert_stored,
    clients,
    clients_and_codecs,
    release_clients,  # noqa: F401  (fixture)
)
from interop_tests.support import (
    PARTITIONS,
    RECORDS,
    Got,
    Sample,
    assert_acknowledged_in_order,
    assert_same_records,
    by_partition,
    counts_of,
    first_offset_at_or_after,
)

pytestmark = pytest.mark.usefixtures("release_clients")

TopicName = Callable[[str], str]


def check_read_back(
    writer: ClientAdapter,
    reader: ClientAdapter,
    samples: Sequence[Sample],
    got: Sequence[Got],
    what: str,
) -> None:
    assert_same_records(
        as_read_by(reader, samples),
        got,
        headers=reader.supports(Capability.READS_HEADERS),
        timestamps=reader.supports(Capability.READS_TIMESTAMPS),
        what=f"{reader.name} reading what {writer.name} wrote, {what}",
    )


def check_acknowledged(client: ClientAdapter, samples: Sequence[Sample], acks) -> None:
    if client.supports(Capability.ACKNOWLEDGES):
        assert_acknowledged_in_order(samples, acks)
    else:
        assert acks is None


@dataclass
class Written:
    topic: str
    samples: list[Sample]
    acks: list[tuple[int, int]] | None
    got: list[Got]  # as read back


class RoundTrips:
    """Each (client, codec)'s round-trip topic, written and read back on first use, so the
    seek scenarios run on it whatever ran before them (or in another process)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.done: dict[tuple[str, str], Written] = {}

    def get(self, client: ClientAdapter, codec: str, topic_name: TopicName) -> Written:
        key = (client.name, codec)
        if key not in self.done:
            topic = topic_name(f"{client.name}-{codec}")  # auto-created by the producer
            samples = client.make_samples(RECORDS, f"{client.name}-{codec}")
            acks = client.produce(self.broker.bootstrap, topic, samples, codec=codec)
            got = client.reader_for(codec).read(self.broker.bootstrap, topic, counts_of(samples))
            self.done[key] = Written(topic, samples, acks, got)
        return self.done[key]


@pytest.fixture(scope="module")
def written(broker: Broker) -> Iterator[RoundTrips]:
    yield RoundTrips(broker)


# -- round trips and seeks


@pytest.mark.parametrize(("client", "codec"), clients_and_codecs())
def test_round_trip(
    broker: Broker, written: RoundTrips, topic_name: TopicName, client: ClientAdapter, codec: str
) -> None:
    w = written.get(client, codec, topic_name)
    check_acknowledged(client, w.samples, w.acks)
    check_read_back(client, client.reader_for(codec), w.samples, w.got, codec)
    assert_stored(
        broker,
        w.topic,
        counts_of(w.samples),
        codec,
        idempotent=client.idempotent_by_default,
        strict_codec=client.compresses_every_batch,
        producer_per_partition=client.producer_per_partition,
    )


def extra_record(client: ClientAdapter, after: Written) -> Sample:
    """One more record for partition 1, later than every record written."""
    last = max((g.timestamp or 0) for g in after.got)
    (sample,) = client.make_samples(1, f"{client.name}-extra", partitions=1, t0=last + 10)
    return dataclasses.replace(sample, partition=1, key=b"after-the-end")


@pytest.mark.parametrize(("client", "codec"), clients_and_codecs(Capability.SEEK))
def test_seek_to_the_end_and_to_offsets(
    broker: Broker, written: RoundTrips, topic_name: TopicName, client: ClientAdapter, codec: str
) -> None:
    w = written.get(client, codec, topic_name)
    counts = counts_of(w.samples)
    extra = extra_record(client, w)
    acks = client.produce(broker.bootstrap, w.topic, [extra], codec=codec)
    if client.supports(Capability.ACKNOWLEDGES):
        assert acks == [(1, counts[1])]

    # Partition 0 from its end: nothing. Partition 1 from 3 records before its old end: those
    # and the new one. Partition 2 from its middle: 5 records (at least) from there.
    from_1, from_2 = counts[1] - 3, counts[2] // 2
    got = client.reader_for(codec).read(
        broker.bootstrap,
        w.topic,
        {0: UNTIL_END, 1: UNTIL_END, 2: 5},
        {0: LATEST, 1: Offset(from_1), 2: Offset(from_2)},
    )
    read = by_partition(got)
    assert 0 not in read, f"read from the end of partition 0: {read[0][:3]}"
    written_1 = by_partition(w.got)[1]
    assert [(g.offset, g.key, g.value) for g in read[1]] == [
        (g.offset, g.key, g.value) for g in written_1[from_1:]
    ] + [(counts[1], extra.key, extra.value)]
    written_2 = by_partition(w.got)[2]
    assert [(g.offset, g.key, g.value) for g in read[2][:5]] == [
        (g.offset, g.key, g.value) for g in written_2[from_2 : from_2 + 5]
    ]
    if client.supports(Capability.WATERMARKS):
        assert client.watermarks(broker.bootstrap, w.topic, range(PARTITIONS)) == {
            0: (0, counts[0]),
            1: (0, counts[1] + 1),
            2: (0, counts[2]),
        }


@pytest.mark.parametrize(("client", "codec"), clients_and_codecs(Capability.SEEK_BY_TIME))
def test_seek_by_time(
    broker: Broker, written: RoundTrips, topic_name: TopicName, client: ClientAdapter, codec: str
) -> None:
    w = written.get(client, codec, topic_name)
    read = by_partition(w.got)
    exact = read[0][len(read[0]) // 3]  # a record's own timestamp
    before = read[1][len(read[1]) // 2]  # a millisecond after a record's
    assert exact.timestamp is not None and before.timestamp is not None
    past = max(g.timestamp or 0 for g in w.got) + 3_600_000  # after every record
    times = {0: exact.timestamp, 1: before.timestamp + 1, 2: past}
    found = client.offsets_for_times(broker.bootstrap, w.topic, times)

    def expected(partition: int) -> tuple[int, int | None] | None:
        offset = first_offset_at_or_after(w.got, partition, times[partition])
        if offset is None:
            return None
        timestamp = read[partition][offset].timestamp
        return offset, timestamp if client.finds_timestamps else None

    assert found == {p: expected(p) for p in range(PARTITIONS)}
    assert found[0] is not None and found[0][0] <= exact.offset  # a repeated time: the first
    assert found[1] is not None and found[1][0] > before.offset

    got = client.reader_for(codec).read(
        broker.bootstrap, w.topic, {0: 3}, {0: AtTime(exact.timestamp)}
    )
    assert [g.offset for g in got[:3]] == [found[0][0] + i for i in range(3)]
    assert [g.key for g in got[:3]] == [g.key for g in read[0][found[0][0] : found[0][0] + 3]]


# -- topics


@pytest.mark.parametrize("client", clients(Capability.ADMIN, Capability.METADATA))
def test_admin_created_topic(broker: Broker, topic_name: TopicName, client: ClientAdapter) -> None:
    topic = topic_name()
    client.create_topic(broker.bootstrap, topic, 5)
    assert client.describe_topic(broker.bootstrap, topic) == dict.fromkeys(range(5), 0)
    assert topic in client.topics(broker.bootstrap)
    with pytest.raises(TopicAlreadyExists):
        client.create_topic(broker.bootstrap, topic, 5)

    samples = client.make_samples(1000, f"{client.name}-admin", partitions=5)
    acks = client.produce(broker.bootstrap, topic, samples, codec=client.cross_codec)
    check_acknowledged(client, samples, acks)
    got = client.read(broker.bootstrap, topic, counts_of(samples, 5))
    check_read_back(client, client, samples, got, "an admin-created topic")


@pytest.mark.parametrize("client", clients(Capability.METADATA))
def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: TopicName, client: ClientAdapter
) -> None:
    topic = topic_name()
    assert topic not in client.topics(broker.bootstrap)
    created = dict.fromkeys(range(PARTITIONS), 0)
    # A consumer's Metadata request does not ask for auto-creation, unless its version
    # cannot say so.
    before = client.describe_topic(broker.bootstrap, topic)
    assert before == (created if client.describe_creates_topics else None)
    samples = client.make_samples(30, f"{client.name}-auto")
    check_acknowledged(client, samples, client.produce(broker.bootstrap, topic, samples))
    assert client.describe_topic(broker.bootstrap, topic) == created
    assert topic in client.topics(broker.bootstrap)
    got = client.read(broker.bootstrap, topic, counts_of(samples))
    check_read_back(client, client, samples, got, "an auto-created topic")


@pytest.fixture(scope="module")
def no_auto_create_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """The module's broker that creates no topic unasked."""
    brokers = Brokers(tmp_path_factory.mktemp("no-auto-create"))
    try:
        broker = brokers(auto_create_topics_enable=False)
        yield broker
        broker.assert_running()
        broker.stop()
    finally:
        brokers.close_all()


@pytest.mark.parametrize("client", clients(Capability.METADATA))
def test_unknown_topic_without_auto_create(
    no_auto_create_broker: Broker, topic_name: TopicName, client: ClientAdapter
) -> None:
    broker = no_auto_create_broker
    topic = topic_name()
    error = client.produce_to_missing_topic(broker.bootstrap, topic)
    assert re.search(client.missing_topic_error, error), error
    assert client.describe_topic(broker.bootstrap, topic) is None
    assert topic not in client.topics(broker.bootstrap)


# -- producer settings


def acks_settings() -> list:
    """acks 0 and 1; and all where the client is idempotent by default (otherwise acks=all,
    not idempotent, is every round trip's)."""
    return [
        pytest.param(c, acks, id=f"{c.name}-{acks}")
        for c in with_capabilities(Capability.ACKS)
        for acks in ["0", "1", "all"]
        if acks != "all" or c.idempotent_by_default
    ]


@pytest.mark.parametrize(("client", "acks"), acks_settings())
def test_producer_acks(
    broker: Broker, topic_name: TopicName, client: ClientAdapter, acks: str
) -> None:
    topic = topic_name()
    samples = client.make_samples(500, f"{client.name}-acks-{acks}")
    acknowledged = client.produce(
        broker.bootstrap, topic, samples, codec=client.cross_codec, acks=acks, idempotent=False
    )
    if acks == "0" and acknowledged is not None:
        # No answer, so no offsets: what a client reports (-1, or what it counted) is its own.
        assert [p for p, _ in acknowledged] == [s.partition for s in samples]
    else:
        check_acknowledged(client, samples, acknowledged)
    counts = counts_of(samples)
    got = client.read(broker.bootstrap, topic, counts)
    check_read_back(client, client, samples, got, f"acks={acks}")
    assert_stored(
        broker,
        topic,
        counts,
        client.cross_codec,
        idempotent=False,
        strict_codec=client.compresses_every_batch,
    )


@pytest.mark.parametrize(
    "client",
    clients(Capability.IDEMPOTENCE, where=lambda c: not c.idempotent_by_default),
)
def test_idempotent_producer(broker: Broker, topic_name: TopicName, client: ClientAdapter) -> None:
    """Clients idempotent by default show it in every round trip."""
    topic = topic_name()
    samples = client.make_samples(3000, f"{client.name}-idempotent")
    acks = client.produce(broker.bootstrap, topic, samples, codec="zstd", idempotent=True)
    check_acknowledged(client, samples, acks)
    counts = counts_of(samples)
    got = client.read(broker.bootstrap, topic, counts)
    check_read_back(client, client, samples, got, "idempotent")
    assert_stored(
        broker,
        topic,
        counts,
        "zstd",
        idempotent=True,
        strict_codec=client.compresses_every_batch,
        producer_per_partition=client.producer_per_partition,
    )
