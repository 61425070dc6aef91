"""kcat (Debian's 1.7.1, librdkafka 2.0.2) against wirekafka, as a subprocess.

Producing: one ``kcat -P -p <partition>`` per partition, records split by
``-D '\\x01'`` and key and value by ``-K '\\x02'`` (a record without the key
delimiter has a null key); ``-H`` headers are the same for every record of a
run. kcat sets the timestamps. Consuming: ``kcat -C -e`` with a format that
gives each record's partition, offset, timestamp, key and value lengths, so
keys and values are read back byte for byte, then its headers.

kcat has no admin client: topics are auto-created.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence

import pytest

from interop_tests.broker import Broker
from interop_tests.conftest import BrokerFactory
from interop_tests.support import (
    PARTITIONS,
    RECORDS,
    Got,
    Sample,
    assert_same_records,
    by_partition,
    first_offset_at_or_after,
    make_samples,
)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TIMEOUT_S = 60
RECORD_DELIMITER = b"\x01"
KEY_DELIMITER = b"\x02"
# partition, offset, timestamp, key length (-1: null), value length (-1: null), then
# key and value bytes, then headers as "k=v,k=v", then a record separator.
FORMAT = "%p,%o,%T,%K,%S:%k%s%h\\x1e"
INSTALL_HINT = "kcat is not installed: apt-get install -y kcat (Debian bookworm: kcat 1.7.1)"


def kcat_binary() -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.fail(INSTALL_HINT)
    return path


def run_kcat(
    args: Sequence[str], stdin: bytes | None = None, *, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(
        [kcat_binary(), *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if check and result.returncode != 0:
        pytest.fail(
            f"kcat {' '.join(args)} exited with {result.returncode}\n"
            f"stderr: {result.stderr.decode(errors='replace')[-5000:]}"
        )
    return result


def kcat_headers(codec: str) -> tuple[tuple[str, bytes], ...]:
    return (("client", b"kcat"), ("codec", codec.encode()))


def samples_for(count: int, tag: str, codec: str) -> list[Sample]:
    samples = make_samples(
        count,
        tag,
        headers=False,
        timestamps=False,
        delimiters=RECORD_DELIMITER + KEY_DELIMITER,
    )
    return [dataclasses.replace(s, headers=kcat_headers(codec)) for s in samples]


def produce(bootstrap: str, topic: str, samples: Sequence[Sample], codec: str = "none") -> None:
    for partition, records in sorted(by_partition(samples).items()):
        lines = []
        for s in records:
            assert s.value is not None
            assert RECORD_DELIMITER not in s.value and KEY_DELIMITER not in s.value
            lines.append(s.value if s.key is None else s.key + KEY_DELIMITER + s.value)
        header_args = [f"{k}={v.decode()}" for k, v in records[0].headers]
        args = ["-P", "-b", bootstrap, "-t", topic, "-p", str(partition)]
        args += ["-K", "\\x02", "-D", "\\x01", "-X", f"compression.codec={codec}"]
        args += ["-X", "acks=all", "-m", "30"]
        for header in header_args:
            args += ["-H", header]
        run_kcat(args, RECORD_DELIMITER.join(lines) + RECORD_DELIMITER)


def parse(output: bytes) -> list[Got]:
    """Records printed with FORMAT."""
    got: list[Got] = []
    position = 0
    while position < len(output):
        colon = output.index(b":", position)
        partition, offset, timestamp, key_length, value_length = (
            int(field) for field in output[position:colon].split(b",")
        )
        position = colon + 1
        key = None if key_length < 0 else output[position : position + key_length]
        position += max(key_length, 0)
        value = None if value_length < 0 else output[position : position + value_length]
        position += max(value_length, 0)
        end = output.index(b"\x1e", position)
        raw_headers = output[position:end]
        position = end + 1
        headers = tuple(
            (name.decode(), value_)
            for name, _, value_ in (h.partition(b"=") for h in raw_headers.split(b",") if h)
        )
        got.append(Got(partition, offset, key, value, headers, timestamp))
    return got


def consume(bootstrap: str, topic: str, *args: str) -> list[Got]:
    result = run_kcat(["-C", "-b", bootstrap, "-t", topic, "-e", "-q", "-f", FORMAT, *args])
    return parse(result.stdout)


def query_offset(bootstrap: str, topic: str, partition: int, timestamp: int) -> int:
    result = run_kcat(["-Q", "-b", bootstrap, "-t", f"{topic}:{partition}:{timestamp}"])
    match = re.search(rb"\[(\d+)\] offset (-?\d+)", result.stdout)
    assert match, result.stdout
    assert int(match.group(1)) == partition
    return int(match.group(2))


@pytest.mark.parametrize("codec", CODECS)
def test_produce_read_back_and_seek(
    broker: Broker, topic_name: Callable[[str], str], codec: str
) -> None:
    topic = topic_name(codec)  # auto-created by kcat's producer
    samples = samples_for(RECORDS, f"kcat-{codec}", codec)
    produce(broker.bootstrap, topic, samples, codec)
    counts = {p: len(records) for p, records in by_partition(samples).items()}

    got = consume(broker.bootstrap, topic, "-o", "beginning")
    assert_same_records(samples, got, what=f"kcat, {codec}")
    assert {g.partition for g in got} == set(range(PARTITIONS))

    # The end: nothing; 5 from the end: the last 5 of each partition; an absolute offset.
    assert consume(broker.bootstrap, topic, "-o", "end") == []
    tail = consume(broker.bootstrap, topic, "-o", "-5")
    assert sorted((g.partition, g.offset) for g in tail) == sorted(
        (p, counts[p] - 5 + i) for p in range(PARTITIONS) for i in range(5)
    )
    middle = consume(broker.bootstrap, topic, "-p", "1", "-o", "1000")
    assert [g.offset for g in middle] == list(range(1000, counts[1]))
    assert [(g.key, g.value) for g in middle] == [
        (s.key, s.value) for s in by_partition(samples)[1][1000:]
    ]

    # By timestamp: a timestamp that is not the first of the partition (kcat stamps many
    # records within the same millisecond).
    partition_0 = [g for g in got if g.partition == 0]
    target = next(
        g for g in partition_0[len(partition_0) // 2 :] if g.timestamp != partition_0[0].timestamp
    )
    assert target.timestamp is not None
    expected = first_offset_at_or_after(got, 0, target.timestamp)
    assert expected is not None and expected <= target.offset
    from_time = consume(broker.bootstrap, topic, "-p", "0", "-o", f"s@{target.timestamp}")
    assert [g.offset for g in from_time] == list(range(expected, counts[0]))
    assert query_offset(broker.bootstrap, topic, 0, target.timestamp) == expected
    last_timestamp = max(g.timestamp or 0 for g in got)
    assert query_offset(broker.bootstrap, topic, 0, last_timestamp + 60_000) == -1


def test_auto_created_topic_gets_num_partitions(
    broker: Broker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name()
    samples = samples_for(30, "kcat-auto", "none")
    produce(broker.bootstrap, topic, samples)
    listing = run_kcat(["-L", "-b", broker.bootstrap, "-t", topic]).stdout.decode()
    assert f'topic "{topic}" with {PARTITIONS} partitions' in listing, listing
    assert_same_records(samples, consume(broker.bootstrap, topic, "-o", "beginning"))


def test_unknown_topic_without_auto_create(
    broker_factory: BrokerFactory, topic_name: Callable[[str], str]
) -> None:
    broker = broker_factory(auto_create_topics_enable=False)
    topic = topic_name()
    # librdkafka waits this long (30 s by default) for a missing topic to appear.
    no_wait = ["-X", "topic.metadata.propagation.max.ms=1000"]
    listing = run_kcat(["-L", "-b", broker.bootstrap, "-t", topic], check=False)
    assert "Broker: Unknown topic or partition" in listing.stdout.decode(), listing

    produced = run_kcat(
        ["-P", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-m", "5", *no_wait],
        b"value\n",
        check=False,
    )
    assert produced.returncode != 0, "kcat produced to a topic that does not exist"
    assert "Unknown topic or partition" in produced.stderr.decode(), produced.stderr

    consumed = run_kcat(
        ["-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-e", "-m", "5", *no_wait],
        check=False,
    )
    assert consumed.returncode != 0, "kcat consumed from a topic that does not exist"
    assert "Unknown topic or partition" in consumed.stderr.decode(), consumed.stderr
