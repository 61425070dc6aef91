"""The concurrency rule of :mod:`wirekafka.worker_threads`, checked two ways.

At run time: a function marked ``blocking`` fails when called on the event loop
(the tests run with the check set to ``raise``), and runs in worker threads
through ``run_blocking``, at most a pool's size at a time.

Statically, over the package's source (the AST, nothing imported): no
``async def`` calls a blocking primitive or a marked function directly; a
function calling a blocking primitive is marked; nothing but the seam calls
``trio.to_thread`` or starts a thread. The checker is shown to catch
violations planted in a copy of real modules.
"""

from __future__ import annotations

import ast
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from wirekafka import worker_threads
from wirekafka.storage.config import LogConfig
from wirekafka.storage.log import PartitionLog
from wirekafka.worker_threads import (
    LOG_DIRS,
    METADATA,
    POOLS,
    RECORDS,
    BlockingCallOnEventLoop,
    WorkerPool,
    blocking,
    is_blocking,
    run_blocking,
)

PACKAGE = Path(worker_threads.__file__).resolve().parent
SEAM = "worker_threads.py"
# Code that never runs in the broker: the PySpark source and sink run in Spark's
# processes, without an event loop; the command line tools and the test helpers
# (wirekafka.testing) are plain synchronous programs around clients and broker
# processes (an in-process broker's event loop runs in a thread of its own).
NOT_BROKER = ("wirekafka/spark/", "wirekafka/cli/", "wirekafka/testing/")

# -- the runtime guard


@blocking
def _waits(seconds: float) -> str:
    time.sleep(seconds)
    return threading.current_thread().name


def test_a_blocking_function_called_on_the_event_loop_raises() -> None:
    async def main() -> None:
        with pytest.raises(BlockingCallOnEventLoop, match="_waits may block"):
            _waits(0)

    trio.run(main)


def test_a_blocking_function_runs_through_the_seam_and_outside_trio() -> None:
    async def main() -> str:
        return await run_blocking(METADATA, _waits, 0)

    assert trio.run(main) != threading.current_thread().name  # a worker thread
    assert _waits(0) == threading.current_thread().name  # no event loop here
    assert is_blocking(_waits) and is_blocking(PartitionLog.flush)
    assert not is_blocking(PartitionLog.append) and not is_blocking(run_blocking)


def test_in_log_mode_the_call_is_logged_once_and_goes_on(caplog) -> None:
    async def main() -> None:
        _waits(0)
        _waits(0)

    worker_threads.set_blocking_check("log")
    try:
        with caplog.at_level(logging.ERROR, logger="wirekafka.worker_threads"):
            trio.run(main)
    finally:
        worker_threads.set_blocking_check("raise")
    [record] = caplog.records
    assert "_waits may block and must not run on the event loop" in record.getMessage()
    assert "in main" in record.getMessage()  # the stack of the call


def test_an_unknown_check_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="WIREKAFKA_BLOCKING_CHECK"):
        worker_threads.set_blocking_check("sometimes")


def test_a_storage_flush_on_the_event_loop_is_caught(tmp_path) -> None:
    partition_log = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(), lambda: 0)

    async def main() -> None:
        with pytest.raises(BlockingCallOnEventLoop, match=r"PartitionLog\.flush"):
            partition_log.flush()
        await run_blocking(LOG_DIRS, partition_log.flush)

    trio.run(main)
    partition_log.close()


@pytest.mark.parametrize("pool", POOLS, ids=lambda pool: pool.name)
def test_a_pool_runs_at_most_its_threads_at_once(pool: WorkerPool) -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    @blocking
    def work() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(pool.threads * 3):
                nursery.start_soon(run_blocking, pool, work)

    trio.run(main)
    assert most == pool.threads
    assert (RECORDS.threads, LOG_DIRS.threads, METADATA.threads) == (2, 8, 4)


def test_cancellation_waits_for_a_call_that_has_started() -> None:
    finished = threading.Event()

    @blocking
    def work() -> None:
        time.sleep(0.1)
        finished.set()

    async def main() -> None:
        with trio.move_on_after(0.01):
            await run_blocking(LOG_DIRS, work)
        assert finished.is_set()  # never abandoned: it ended before the task went on

    trio.run(main)


# -- the static check


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


# Calls that block whoever makes them: name them only in a function marked blocking.
BLOCKING_PRIMITIVES = frozenset(
    {
        "os.fsync",
        "os.fdatasync",
        "os.sync",
        "time.sleep",
        "socket.getaddrinfo",
        "socket.gethostbyname",
    }
)
FORBIDDEN_OUTSIDE_SEAM = ("trio.to_thread", "to_thread.run_sync", "threading.Thread")


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_marked(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        _dotted(d) in ("blocking", "worker_threads.blocking") for d in function.decorator_list
    )


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or lambdas in it
    (they run when they are called, wherever that is)."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    pending: list[ast.AST] = [node for node in function.body if not isinstance(node, scopes)]
    while pending:
        node = pending.pop()
        yield node
        pending += [child for child in ast.iter_child_nodes(node) if not isinstance(child, scopes)]


def _kazoo_clients(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names bound in the function to a kazoo client (``x = ....client``,
    ``x = KazooClient(...)``), and ``client`` itself."""
    names = {"client"}
    for node in _own_nodes(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.Call):
                value = value.func
            dotted = _dotted(value)
            if dotted is not None and dotted.split(".")[-1] in ("client", "KazooClient"):
                names.add(target.id)
    return names


def _primitive(call: ast.Call, kazoo: set[str] | None) -> str | None:
    """The blocking primitive ``call`` makes, if any. ``kazoo``: the names of
    kazoo clients in scope (None outside the modules that import kazoo)."""
    dotted = _dotted(call.func)
    if dotted is None:
        return None
    if dotted in BLOCKING_PRIMITIVES:
        return dotted
    if kazoo is not None and isinstance(call.func, ast.Attribute):
        receiver = _dotted(call.func.value)
        if receiver is not None and (receiver in kazoo or receiver.endswith(".client")):
            return f"the kazoo client's {call.func.attr}"
    return None


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def marked_names(sources: Mapping[str, str]) -> set[str]:
    """The names of every function and method marked ``blocking``."""
    return {
        function.name
        for source in sources.values()
        for function in _functions(ast.parse(source))
        if _is_marked(function)
    }


def check_sources(sources: Mapping[str, str], marked: set[str] | None = None) -> list[Finding]:
    """Every breach of the rule in ``sources`` (path -> module source)."""
    if marked is None:
        marked = marked_names(sources)
    findings = []
    for path, source in sorted(sources.items()):
        tree = ast.parse(source)
        uses_kazoo = any(
            isinstance(node, (ast.Import, ast.ImportFrom))
            and any(
                (alias.name if isinstance(node, ast.Import) else node.module or "").startswith(
                    "kazoo"
                )
                for alias in node.names
            )
            for node in ast.walk(tree)
        )
        if not path.endswith(SEAM):
            inner = {
                id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            }  # the ``a.b`` of ``a.b.c``: reported as ``a.b.c``
            for node in ast.walk(tree):
                if id(node) in inner:
                    continue
                dotted = _dotted(node) if isinstance(node, ast.Attribute) else None
                if dotted is not None and dotted.endswith(FORBIDDEN_OUTSIDE_SEAM):
                    findings.append(
                        Finding(path, node.lineno, f"{dotted} outside wirekafka/{SEAM}")
                    )
        for function in _functions(tree):
            kazoo = _kazoo_clients(function) if uses_kazoo else None
            awaited = {
                id(node.value)
                for node in _own_nodes(function)
                if isinstance(node, ast.Await) and isinstance(node.value, ast.Call)
            }
            is_async = isinstance(function, ast.AsyncFunctionDef)
            for node in _own_nodes(function):
                if not isinstance(node, ast.Call) or id(node) in awaited:
                    continue
                primitive = _primitive(node, kazoo)
                if is_async:
                    called = node.func.attr if isinstance(node.func, ast.Attribute) else None
                    called = node.func.id if isinstance(node.func, ast.Name) else called
                    blocking_call = primitive or (
                        f"{called} (marked blocking)" if called in marked else None
                    )
                    if blocking_call is not None:
                        findings.append(
                            Finding(
                                path,
                                node.lineno,
                                f"async def {function.name} calls {blocking_call} on the "
                                "event loop: go through run_blocking",
                            )
                        )
                elif primitive is not None and not _is_marked(function):
                    findings.append(
                        Finding(
                            path,
                            node.lineno,
                            f"{function.name} calls {primitive} but is not marked blocking",
                        )
                    )
    return findings


def package_sources() -> dict[str, str]:
    sources = {
        str(path.relative_to(PACKAGE.parent)): path.read_text()
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    return {path: source for path, source in sources.items() if not path.startswith(NOT_BROKER)}


def test_the_package_keeps_the_rule() -> None:
    findings = check_sources(package_sources())
    assert not findings, "\n".join(map(str, findings))


def test_the_check_sees_the_package_s_blocking_functions() -> None:
    marked = marked_names(package_sources())
    for name in ("fsync_dir", "flush", "roll_when_due", "swap_in_prepared", "create_topic"):
        assert name in marked
    for name in ("append", "read", "local_log", "partition_log", "deliver"):
        assert name not in marked


PLANTED = """
import os
import threading

import trio

from wirekafka.worker_threads import LOG_DIRS, blocking, run_blocking


@blocking
def flush_everything() -> None: ...


def sync_unmarked(fd: int) -> None:
    os.fsync(fd)


async def handler(log, fd: int) -> None:
    os.fsync(fd)
    log.flush_everything()
    flush_everything()
    await trio.to_thread.run_sync(flush_everything)
    threading.Thread(target=flush_everything).start()


async def fine(log) -> None:
    await run_blocking(LOG_DIRS, flush_everything)
    await run_blocking(LOG_DIRS, lambda: log.flush_everything())


@blocking
def marked(fd: int) -> None:
    os.fsync(fd)
"""


def test_the_check_catches_planted_violations() -> None:
    found = {(f.line, f.message) for f in check_sources({"wirekafka/planted.py": PLANTED})}
    assert found == {
        (15, "sync_unmarked calls os.fsync but is not marked blocking"),
        (
            19,
            "async def handler calls os.fsync on the event loop: go through run_blocking",
        ),
        (
            20,
            "async def handler calls flush_everything (marked blocking) on the event loop: "
            "go through run_blocking",
        ),
        (
            21,
            "async def handler calls flush_everything (marked blocking) on the event loop: "
            "go through run_blocking",
        ),
        (22, "trio.to_thread.run_sync outside wirekafka/worker_threads.py"),
        (23, "threading.Thread outside wirekafka/worker_threads.py"),
    }


@pytest.mark.parametrize(
    ("module", "seam", "regression", "reported"),
    [
        (
            "handlers/produce.py",
            "await run_blocking(LOG_DIRS, flush_all)",
            "flush_all()",
            "async def _flush calls flush_all (marked blocking)",
        ),
        (
            "handlers/produce.py",
            "await run_blocking(LOG_DIRS, partition_log.roll_when_due)",
            "partition_log.roll_when_due()",
            "async def _append_all calls roll_when_due (marked blocking)",
        ),
        (
            "handlers/metadata.py",
            "await run_blocking(METADATA, ctx.topics.auto_create, name)",
            "ctx.topics.auto_create(name)",
            "async def _answer calls auto_create (marked blocking)",
        ),
        (
            "zk/cluster.py",
            "snapshot = await run_blocking(METADATA, self._round)",
            "snapshot = self._round()",
            "async def one_round calls _round (marked blocking)",
        ),
        (
            "server/broker.py",
            "await run_blocking(LOG_DIRS, logs.clean, partition_log)",
            "logs.clean(partition_log)",
            "async def _compact calls clean (marked blocking)",
        ),
    ],
)
def test_the_check_catches_a_regression_in_a_real_module(
    module: str, seam: str, regression: str, reported: str
) -> None:
    sources = package_sources()
    path = f"wirekafka/{module}"
    assert seam in sources[path]
    sources[path] = sources[path].replace(seam, regression)
    messages = [f.message for f in check_sources(sources) if f.path == path]
    assert any(reported in message for message in messages), messages
