"""The Java Admin client in one JVM, driven a call at a time (``jvm/admin/AdminDriver.java``).

:func:`start_admin_driver` compiles the driver against one of the kafka-clients
classpaths (``kafka-clients-3.9``, ``kafka-clients-4``) and starts it; each
:meth:`AdminDriver.call` sends one command line and returns the parsed answer,
or raises :class:`AdminError` with the Java exception's class and message. One
Admin client is kept per bootstrap address, so one JVM serves a whole test
module (and brokers it restarts).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from interop_tests.jvm_jars import JVM_DIR, classpath, java

SOURCE = JVM_DIR / "admin" / "AdminDriver.java"
CALL_TIMEOUT_S = 180.0  # the driver's own futures time out after 60 s
START_TIMEOUT_S = 120.0


class AdminError(Exception):
    """A call failed in the Java client: ``exception`` is its simple class name."""

    def __init__(self, exception: str, message: str) -> None:
        super().__init__(f"{exception}: {message}")
        self.exception = exception
        self.message = message


class AdminDriver:
    def __init__(self, process: subprocess.Popen[str], stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()
        assert self._next(START_TIMEOUT_S) == "READY"

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _next(self, timeout_s: float) -> str:
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(
                f"the Java admin driver gave no answer in {timeout_s} s; its stderr:\n"
                + self.stderr_path.read_text()[-4000:]
            ) from None
        if line is None:
            raise AssertionError(
                "the Java admin driver exited; its stderr:\n" + self.stderr_path.read_text()[-4000:]
            )
        return line

    def call(self, bootstrap: str, name: str, *args: object) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write("\t".join([bootstrap, name, *map(str, args)]) + "\n")
        self.process.stdin.flush()
        line = self._next(CALL_TIMEOUT_S)
        status, _, rest = line.partition(" ")
        if status == "OK":
            return json.loads(rest)
        assert status == "ERR", line
        exception, _, message = rest.partition(" ")
        raise AdminError(exception, message)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_admin_driver(jars: str, work_dir: Path) -> AdminDriver:
    """Compile the driver against the jar set ``jars`` into ``work_dir`` and start it."""
    path = classpath(jars)
    classes = work_dir / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    javac = str(Path(java()).resolve().parent / "javac")
    compiled = subprocess.run(
        [javac, "-nowarn", "-d", str(classes), "-cp", path, str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert compiled.returncode == 0, f"javac failed against {jars}:\n{compiled.stderr}"
    stderr_path = work_dir / "stderr.txt"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [
                java(),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                f"{classes}:{path}",
                "AdminDriver",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    return AdminDriver(process, stderr_path)
