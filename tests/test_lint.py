"""The code stays ruff-clean and type-checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["wirekafka", "tests", "interop_tests", "spark_tests", "tools", "conftest.py"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_check():
    result = _run("ruff", "check", *SOURCES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    result = _run("ruff", "format", "--check", *SOURCES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict():  # strict = true in pyproject.toml
    result = _run("mypy", "wirekafka")
    assert result.returncode == 0, result.stdout + result.stderr
