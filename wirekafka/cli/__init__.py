"""The ``wirekafka`` command: ``serve`` runs a broker; the other subcommands are
tools that work against any Kafka-protocol broker (``--bootstrap-server``).

Each subcommand lives in a module of this package that offers
``add_parser(subparsers)``; the parser it adds sets ``run``, called with the
parsed arguments and returning the exit code (see :mod:`wirekafka.cli.errors`).
Only the module of the subcommand given is imported, so ``serve`` does not
load the tools' client library.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from wirekafka import __version__
from wirekafka.cli.errors import CommandError, command_name

# name, module, one line for ``wirekafka --help``
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("serve", "wirekafka.cli.serve", "run a broker"),
    ("topics", "wirekafka.cli.topics", "list, describe, create, delete and alter topics"),
    ("produce", "wirekafka.cli.produce", "write records from stdin or a file, a line each"),
    ("consume", "wirekafka.cli.consume", "read records, as raw lines or JSON lines"),
    ("groups", "wirekafka.cli.groups", "list, describe (lag), reset offsets of, delete groups"),
    ("dump-log", "wirekafka.cli.dump_log", "read segment, index and time index files offline"),
    ("perf", "wirekafka.cli.perf", "load tests: produce or consume N records, with latencies"),
)


def _parser(chosen: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wirekafka",
        description="A Kafka-compatible broker, and tools for any Kafka-protocol broker.",
        epilog="Exit codes: 0 done; 1 the broker refused or failed (its error is printed); "
        "2 bad usage or config; 3 no broker answered.",
    )
    parser.add_argument("--version", action="version", version=f"wirekafka {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module, summary in COMMANDS:
        if name == chosen:
            importlib.import_module(module).add_parser(subparsers)
        else:  # listed in the help; its options are known once it is chosen
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The first argument that is not an option (``--version`` and ``--help``
    are the only options before the subcommand)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    parser = _parser(_chosen_command(arguments))
    args = parser.parse_args(arguments)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except CommandError as exc:
        print(f"wirekafka {command_name(args)}: {exc}", file=sys.stderr)
        return exc.exit_code
