"""What the tools print: tables for people (rich), JSON for scripts (``--json``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON (one document) instead of a table"
    )


def stdout_console() -> Console:
    """A console on stdout; no colours or wrapping when stdout is not a terminal."""
    return Console(file=sys.stdout, soft_wrap=not sys.stdout.isatty())


def stderr_console() -> Console:
    return Console(file=sys.stderr, soft_wrap=not sys.stderr.isatty())


def print_table(
    columns: Sequence[str], rows: Iterable[Sequence[object]], *, title: str | None = None
) -> None:
    """A table on stdout; cells print as they are (a ``[`` is not rich markup),
    ``None`` cells as ``-``."""
    table = Table(
        title=None if title is None else Text(title), show_edge=False, header_style="bold"
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(Text("-" if cell is None else str(cell)) for cell in row))
    stdout_console().print(table)


def print_json(value: Any) -> None:
    """One JSON document on stdout."""
    json.dump(value, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
    sys.stdout.flush()
