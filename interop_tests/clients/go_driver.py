"""The Go client drivers of the interop suite, and how to run them (``franz_go.py``,
``kafka_go.py`` are their adapters).

``interop_tests/go/build`` (run by the README's test command) builds one
program per Go client into ``interop_tests/go/bin`` (``franz-go``,
``kafka-go``) and stamps them with a hash of their sources. A test that needs
one fails with a message saying how to build it, also when the sources changed
since: the suite never skips the Go side, nor runs stale drivers.

Each program takes a command: ``produce`` and ``consume`` read one JSON job on
stdin (records as :mod:`interop_tests.support` writes them) and print one JSON
line with the result; ``group CONFIG`` is a group member speaking
:mod:`interop_tests.group_driver`'s protocol (see :func:`member_command`).

What the drivers do is the same for both clients, so :class:`GoClient` is both
adapters but for their names and what their clients can do.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from interop_tests.clients.adapter import (
    Capability,
    ClientAdapter,
    Counts,
    Edge,
    MemberConfig,
    Start,
)
from interop_tests.group_driver import Member, MemberEvents
from interop_tests.support import Got, Sample, got_from_json, sample_to_json

GO_DIR = Path(__file__).resolve().parent.parent / "go"
BIN_DIR = GO_DIR / "bin"
BUILD = GO_DIR / "build"
TIMEOUT_S = 180.0


class DriverMissing(AssertionError):
    """A Go driver was not built, or was built from other sources."""


def sources_stamp() -> str:
    """The hash ``build`` writes to ``bin/.built``: go.mod, go.sum, then every .go file in
    the order of their ``./`` paths."""
    paths = [GO_DIR / "go.mod", GO_DIR / "go.sum"]
    paths += sorted(
        (p for p in GO_DIR.rglob("*.go") if BIN_DIR not in p.parents),
        key=lambda p: "./" + p.relative_to(GO_DIR).as_posix(),
    )
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def binary(client: str) -> Path:
    """The driver of ``client``; fails if it is missing or older than its sources."""
    path = BIN_DIR / client
    stamp = BIN_DIR / ".built"
    if not path.exists() or not stamp.exists():
        raise DriverMissing(f"no Go driver {path}: run {BUILD} (Go fetches the modules once)")
    if stamp.read_text().strip() != sources_stamp():
        raise DriverMissing(f"{path} was built from other sources than {GO_DIR}'s: run {BUILD}")
    return path


def member_command(client: str) -> list[str]:
    """The argv of a group member of ``client`` (group_driver.Member adds the config)."""
    return [str(binary(client)), "group"]


def run(client: str, command: str, job: dict, timeout_s: float = TIMEOUT_S) -> dict:
    """Run one job; the result event. Fails with the driver's error and stderr otherwise."""
    try:
        result = subprocess.run(
            [str(binary(client)), command],
            input=json.dumps(job).encode(),
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = (exc.stderr or b"").decode(errors="replace")[-4000:]
        raise AssertionError(
            f"{client} {command} did not finish within {timeout_s} s\nstderr:\n{stderr}"
        ) from None
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    errors = [e["error"] for e in events if e.get("type") == "error"]
    stderr = result.stderr.decode(errors="replace")[-4000:]
    if result.returncode != 0 or errors or not events:
        raise AssertionError(
            f"{client} {command} failed (exit {result.returncode}): {errors}\nstderr:\n{stderr}"
        )
    return events[-1]


def produce(
    client: str, bootstrap: str, topic: str, samples: Sequence[Sample], codec: str
) -> list[tuple[int, int]]:
    """Produce with acks=all; the (partition, offset) acknowledged for each sample, in order."""
    answer = run(
        client,
        "produce",
        {
            "bootstrap": bootstrap,
            "topic": topic,
            "compression": codec,
            "records": [sample_to_json(s) for s in samples],
        },
    )
    return [(p, o) for p, o in answer["acks"]]


def consume(client: str, bootstrap: str, topic: str, counts: Mapping[int, int]) -> list[Got]:
    """Read ``counts[p]`` records from the beginning of each partition ``p``, in the
    order the client delivered them."""
    answer = run(
        client,
        "consume",
        {"bootstrap": bootstrap, "topic": topic, "counts": {str(p): n for p, n in counts.items()}},
    )
    return [got_from_json(g) for g in answer["records"]]


class GoClient(ClientAdapter):
    """A Go client's driver: it produces with acks=all, reads from the beginning of each
    partition (no seeking, a count of records each) and runs group members, each a process."""

    def __init__(self, name: str, capabilities: frozenset[Capability]) -> None:
        self.name = name
        self.capabilities = capabilities
        # A Go client may send a batch uncompressed where the codec would not make it smaller.
        self.compresses_every_batch = False

    def produce(
        self,
        bootstrap: str,
        topic: str,
        samples: Sequence[Sample],
        *,
        codec: str = "none",
        acks: str = "all",
        idempotent: bool | None = None,
    ) -> list[tuple[int, int]]:
        assert acks == "all" and idempotent in (None, self.idempotent_by_default), (
            f"the {self.name} driver produces with its defaults only"
        )
        return produce(self.name, bootstrap, topic, samples, codec)

    def read(
        self, bootstrap: str, topic: str, counts: Counts, starts: Mapping[int, Start] | None = None
    ) -> list[Got]:
        assert all(s == Edge.EARLIEST for s in (starts or {}).values()), (
            f"the {self.name} driver reads from the beginning"
        )
        assert None not in counts.values(), f"the {self.name} driver reads a count of records"
        return consume(self.name, bootstrap, topic, counts)  # type: ignore[arg-type]

    def start_member(self, name: str, config: MemberConfig, log_dir: Path) -> MemberEvents:
        return Member(
            name,
            member_command(self.name),
            config.driver_config(name, self),
            log_dir=log_dir,
            client=self.name,
        )
