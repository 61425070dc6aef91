"""What the broker benchmarks share: C programs built once, a wirekafka broker, CPU from /proc.

* :func:`rdkafka_performance`: librdkafka's load generator, compiled from the
  example source Debian's ``librdkafka-dev`` ships (``tools/rdkafka/src``
  stands in for the library's internal ``rd.h``/``rdtime.h``);
* :func:`mock_cluster`: ``tools/rdkafka/mock_cluster.c``, librdkafka's mock
  cluster as a process;
* :func:`sink`: ``tools/rdkafka/sink.c``, a socket that reads and drops what
  it is sent (the receiving end of the plain-sendfile limit);
* :func:`start_wirekafka`, :func:`stop_wirekafka`: a broker from a source tree
  in a subprocess;
* :func:`cpu_seconds`: the user + system time of processes so far.

The programs go to ``build/rdkafka`` and are rebuilt when a source is newer.
They need gcc and librdkafka-dev (``apt-get install librdkafka-dev``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
RDKAFKA_DIR = ROOT / "tools" / "rdkafka"
BUILD_DIR = ROOT / "build" / "rdkafka"
EXAMPLE_SOURCE = Path("/usr/share/doc/librdkafka-dev/examples/rdkafka_performance.c")
LISTENING = re.compile(rb"listening on PLAINTEXT://(?P<host>[^:\s]+):(?P<port>\d+)")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def build(name: str, source: Path, headers: Sequence[Path] = ()) -> Path:
    """``build/rdkafka/<name>``, compiled from ``source`` against librdkafka unless up to date."""
    binary = BUILD_DIR / name
    newest_input = max(p.stat().st_mtime for p in [source, *headers])
    if binary.exists() and binary.stat().st_mtime >= newest_input:
        return binary
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    command = [
        "gcc", "-O2", "-I", str(RDKAFKA_DIR / "src"), "-I", "/usr/include/librdkafka",
        "-o", str(binary), str(source), "-lrdkafka",
    ]  # fmt: skip
    subprocess.run(command, check=True)
    return binary


# rdkafka_performance sets linger.ms=1000 of its own where librdkafka's default is 5, so
# each run would wait up to a second on its last batch. The producers here start from
# librdkafka's default; a row's own linger.ms, later on the command line, wins.
LIBRDKAFKA_DEFAULT_LINGER = ("-X", "linger.ms=5")


def rdkafka_performance() -> Path:
    return build("rdkafka_performance", EXAMPLE_SOURCE, sorted((RDKAFKA_DIR / "src").glob("*.h")))


def mock_cluster() -> Path:
    return build("mock_cluster", RDKAFKA_DIR / "mock_cluster.c")


def sink() -> Path:
    return build("sink", RDKAFKA_DIR / "sink.c")


def cpu_seconds(*pids: int) -> float:
    """User + system CPU time of the processes ``pids`` (all their threads) so far, summed."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / CLOCK_TICKS


def start_wirekafka(
    tree: Path,
    data_dir: Path,
    overrides: Mapping[str, str] | None = None,
    stderr: IO[bytes] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """A broker from the source tree ``tree`` (its ``wirekafka`` first on the path); its port.

    ``overrides``: more broker keys (``broker.id``, ``zookeeper.connect``, ...), or
    other values for these; ``stderr``: where its log (warnings and worse) goes,
    this process's stderr by default."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    settings = {
        "log.dirs": str(data_dir),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "num.partitions": "1",
        **(overrides or {}),
    }
    process = subprocess.Popen(
        [
            sys.executable, "-m", "wirekafka", "serve", "--log-level", "WARNING",
            *(part for key, value in settings.items() for part in ("--override", f"{key}={value}")),
        ],
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=data_dir,
    )  # fmt: skip
    assert process.stdout is not None
    match = LISTENING.search(process.stdout.readline())
    if match is None:
        process.kill()
        process.wait()
        raise SystemExit(f"the broker from {tree} did not start")
    return process, int(match["port"])


def stop_wirekafka(process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """SIGTERM, and SIGKILL if the broker has not exited within ``timeout_s``."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
