"""The ``wirekafka`` command: ``serve`` runs a broker; the other subcommands are
tools that work against any Kafka-protocol broker (``--bootstrap-server``).

Each subcommand lives in a module of this package that offers
``add_parser(subparsers)``; the parser it adds sets ``run``, called with the
parsed arguments and returning the exit code (see :mod:`wirekafka.cli.errors`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from types import ModuleType

from wirekafka import __version__
from wirekafka.cli import consume, produce, serve, topics
from wirekafka.cli.errors import EXIT_USAGE, CommandError

COMMANDS: tuple[ModuleType, ...] = (serve, topics, produce, consume)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wirekafka",
        description="A Kafka-compatible broker, and tools for any Kafka-protocol broker.",
        epilog="Exit codes: 0 done; 1 the broker refused or failed (its error is printed); "
        "2 bad usage or config; 3 no broker answered.",
    )
    parser.add_argument("--version", action="version", version=f"wirekafka {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:  # a group (``topics``) named without its subcommand
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
        return EXIT_USAGE
    try:
        return run(args)
    except CommandError as exc:
        print(f"wirekafka {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
