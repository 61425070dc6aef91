"""How the broker shares its file descriptors: connections, open log files, partitions.

The process may hold ``RLIMIT_NOFILE`` descriptors (its soft limit, which the
``wirekafka serve`` command raises to the hard limit at startup, as the JVM
does for Kafka). A fixed reserve goes to what any broker holds: the standard
streams, listening sockets, trio's wake-up pipe, ZooKeeper's connection, and
files opened for a moment (checkpoints, the fsync of a rolled segment). Of
the rest, connections take ``max.connections`` (half by default) and log files
get what is left: the least recently used open segment files and index maps
are closed beyond that many, and ``max.broker.partitions`` (the name KIP-578
gives it) defaults to it, so every partition's active segment can stay open.
Excess connections are refused; partitions beyond the limit are refused at
CreateTopics and auto-creation.
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass

log = logging.getLogger("wirekafka.fd_budget")

RESERVED_FDS = 128
MIN_FILE_FDS = 64  # fewer open log files than this and the broker cannot do its work
UNLIMITED = 2**31 - 1  # Kafka's default for max.connections and max.connections.per.ip


class FdBudgetError(ValueError):
    """The descriptor limit is too low for the settings; names what to change."""


@dataclass(frozen=True, slots=True)
class FdBudget:
    fd_limit: int
    max_connections: int
    max_connections_per_ip: int
    open_files: int  # segment files and index maps kept open, least recently used closed first
    max_partitions: int


def raise_fd_limit() -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:  # not allowed here: keep the soft limit
            log.warning("cannot raise the open file limit from %d to %d: %s", soft, hard, exc)
    return current_fd_limit()


def current_fd_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return UNLIMITED if soft == resource.RLIM_INFINITY else int(soft)


def fd_budget(
    fd_limit: int,
    *,
    max_connections: int | None = None,
    max_connections_per_ip: int | None = None,
    max_partitions: int | None = None,
) -> FdBudget:
    """Split ``fd_limit`` descriptors. ``None`` means the key was not set: connections
    then get half of what is usable, and partitions one per file descriptor left.

    A ``max.connections`` larger than the limit allows is lowered (with a warning),
    so that a Kafka ``server.properties`` with Kafka's default (2147483647) works;
    a limit too low for any log files raises :class:`FdBudgetError`.
    """
    usable = fd_limit - RESERVED_FDS
    if usable < MIN_FILE_FDS + 1:
        raise FdBudgetError(
            f"the open file limit ({fd_limit}) is too low: the broker needs at least "
            f"{RESERVED_FDS + MIN_FILE_FDS + 1} file descriptors (raise it with ulimit -n)"
        )
    if max_connections == UNLIMITED:  # Kafka's default, written out: not a choice to honour
        max_connections = None
    connections = usable // 2 if max_connections is None else max_connections
    if connections > usable - MIN_FILE_FDS:
        lowered = usable - MIN_FILE_FDS
        if max_connections is not None:
            log.warning(
                "max.connections=%d leaves too few of the %d file descriptors for log files; "
                "using %d",
                max_connections,
                fd_limit,
                lowered,
            )
        connections = lowered
    per_ip = connections
    if max_connections_per_ip is not None:
        per_ip = min(max_connections_per_ip, connections)
    files = usable - connections
    return FdBudget(
        fd_limit=fd_limit,
        max_connections=connections,
        max_connections_per_ip=per_ip,
        open_files=files,
        max_partitions=files if max_partitions is None else max_partitions,
    )
