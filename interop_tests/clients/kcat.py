"""kcat (Debian's 1.7.1, librdkafka 2.0.2), run as a subprocess for each call.

Producing: one ``kcat -P -p <partition>`` per partition, records split by
``-D '\\x01'`` and key and value by ``-K '\\x02'`` (a record without the key
delimiter has a null key); ``-H`` headers are the same for every record of a
run, so kcat's samples carry the same headers on every record, and values
never hold a delimiter. kcat sets the timestamps and does not print the
offsets it was given. Consuming: ``kcat -C -e -o <start>`` with a format that
gives each record's partition, offset, timestamp, key and value lengths, so keys
and values are read back byte for byte, then its headers. ``-L`` lists
metadata, ``-Q`` finds offsets by time. kcat has no admin client.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence

from interop_tests.clients.adapter import (
    Capability,
    ClientAdapter,
    Counts,
    Edge,
    Offset,
    Start,
)
from interop_tests.support import PARTITIONS, Got, Sample, by_partition, make_samples

TIMEOUT_S = 60
RECORD_DELIMITER = b"\x01"
KEY_DELIMITER = b"\x02"
# partition, offset, timestamp, key length (-1: null), value length (-1: null), then
# key and value bytes, then headers as "k=v,k=v", then a record separator.
FORMAT = "%p,%o,%T,%K,%S:%k%s%h\\x1e"
INSTALL_HINT = "kcat is not installed: apt-get install -y kcat (Debian bookworm: kcat 1.7.1)"
# librdkafka waits this long (30 s by default) for a missing topic to appear.
NO_WAIT = ["-X", "topic.metadata.propagation.max.ms=1000"]


class KcatFailed(AssertionError):
    """kcat is missing, or exited with an error."""


def kcat_binary() -> str:
    path = shutil.which("kcat")
    if path is None:
        raise KcatFailed(INSTALL_HINT)
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
        raise KcatFailed(
            f"kcat {' '.join(args)} exited with {result.returncode}\n"
            f"stderr: {result.stderr.decode(errors='replace')[-5000:]}"
        )
    return result


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
    """``kcat -C -e`` with ``args`` (``-o``, ``-p``...): every record up to the end."""
    result = run_kcat(["-C", "-b", bootstrap, "-t", topic, "-e", "-q", "-f", FORMAT, *args])
    return parse(result.stdout)


def _offset_word(start: Start) -> str:
    if isinstance(start, Edge):
        return "beginning" if start == Edge.EARLIEST else "end"
    if isinstance(start, Offset):
        return str(start.offset)
    return f"s@{start.timestamp_ms}"


class Kcat(ClientAdapter):
    name = "kcat"
    capabilities = frozenset(
        {
            Capability.READS_HEADERS,
            Capability.READS_TIMESTAMPS,
            Capability.NULL_KEYS,
            Capability.ACKS,
            Capability.IDEMPOTENCE,
            Capability.METADATA,
            Capability.SEEK,
            Capability.SEEK_BY_TIME,
        }
    )
    cross_codec = "gzip"
    finds_timestamps = False  # -Q prints offsets only
    describe_creates_topics = True  # -L asks Metadata as a producer, which may create
    producer_per_partition = True
    # librdkafka sends a batch uncompressed when the codec's output would be larger.
    compresses_every_batch = False
    missing_topic_error = r"Unknown topic or partition"

    def make_samples(
        self, count: int, tag: str, *, partitions: int = PARTITIONS, t0: int | None = None
    ) -> list[Sample]:
        """No delimiter in a value, no timestamps, the same two headers on every record."""
        samples = make_samples(
            count,
            tag,
            partitions=partitions,
            headers=False,
            timestamps=False,
            delimiters=RECORD_DELIMITER + KEY_DELIMITER,
        )
        headers = (("client", b"kcat"), ("tag", tag.encode()))
        return [dataclasses.replace(s, headers=headers) for s in samples]

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> None:
        for partition, records in sorted(by_partition(samples).items()):
            lines = []
            for s in records:
                assert s.value is not None and s.timestamp is None
                assert RECORD_DELIMITER not in s.value and KEY_DELIMITER not in s.value
                assert s.headers == records[0].headers, "kcat writes one set of headers a run"
                lines.append(s.value if s.key is None else s.key + KEY_DELIMITER + s.value)
            args = ["-P", "-b", bootstrap, "-t", topic, "-p", str(partition)]
            args += ["-K", "\\x02", "-D", "\\x01", "-X", f"compression.codec={codec}"]
            args += ["-X", f"acks={acks}", "-m", "30"]
            if idempotent is not None:
                args += ["-X", f"enable.idempotence={str(idempotent).lower()}"]
            for name, value in records[0].headers:
                assert value is not None
                args += ["-H", f"{name}={value.decode()}"]
            run_kcat(args, RECORD_DELIMITER.join(lines) + RECORD_DELIMITER)
        return None

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        """One ``kcat -C -e`` for the partitions of each start (``-o`` applies to every
        partition); each reads to the end."""
        by_start: dict[str, list[int]] = {}
        for p in sorted(counts):
            by_start.setdefault(_offset_word((starts or {}).get(p, Edge.EARLIEST)), []).append(p)
        got: list[Got] = []
        for word, partitions in by_start.items():
            only = ["-p", str(partitions[0])] if len(partitions) == 1 else []
            got += [
                g for g in consume(bootstrap, topic, *only, "-o", word) if g.partition in partitions
            ]
        for p, want in counts.items():
            read = sum(1 for g in got if g.partition == p)
            assert want is None or read >= want, (
                f"kcat read {read} records of {topic} partition {p}, expected {want}"
            )
        return got

    def topics(self, bootstrap: str) -> set[str]:
        listing = run_kcat(["-L", "-b", bootstrap]).stdout.decode()
        return set(re.findall(r'^\s*topic "([^"]+)" with \d+ partitions', listing, re.MULTILINE))

    def describe_topic(self, bootstrap: str, topic: str) -> dict[int, int] | None:
        listing = run_kcat(["-L", "-b", bootstrap, "-t", topic, *NO_WAIT], check=False)
        text = listing.stdout.decode()
        if "Broker: Unknown topic or partition" in text:
            return None
        assert listing.returncode == 0, text + listing.stderr.decode(errors="replace")
        return {
            int(p): int(leader) for p, leader in re.findall(r"partition (\d+), leader (\d+)", text)
        }

    def produce_to_missing_topic(self, bootstrap: str, topic: str) -> str:
        produced = run_kcat(
            ["-P", "-b", bootstrap, "-t", topic, "-p", "0", "-m", "5", *NO_WAIT],
            b"value\n",
            check=False,
        )
        assert produced.returncode != 0, f"kcat produced to {topic}, which does not exist"
        return produced.stderr.decode(errors="replace")

    def offsets_for_times(
        self, bootstrap: str, topic: str, times: Mapping[int, int]
    ) -> dict[int, tuple[int, int | None] | None]:
        found: dict[int, tuple[int, int | None] | None] = {}
        for p, timestamp in times.items():
            result = run_kcat(["-Q", "-b", bootstrap, "-t", f"{topic}:{p}:{timestamp}"])
            match = re.search(rb"\[(\d+)\] offset (-?\d+)", result.stdout)
            assert match and int(match.group(1)) == p, result.stdout
            offset = int(match.group(2))
            found[p] = None if offset < 0 else (offset, None)
        return found


ADAPTER = Kcat()
