"""How a ``wirekafka`` tool fails: exit codes, and errors that name what failed.

A tool raises :class:`CommandError`; :func:`wirekafka.cli.main` prints it as
``wirekafka <command>: <message>`` on stderr and exits with its code. Errors a
client library reports become one with :func:`from_kafka_error`, which names
the broker, the topic (when there is one) and Kafka's error code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # confluent-kafka is loaded by the tools, not by ``serve``
    import argparse

    from confluent_kafka import KafkaError

EXIT_OK = 0
EXIT_FAILED = 1  # the broker refused or failed a request; the message names its error code
EXIT_USAGE = 2  # bad arguments or config (argparse exits with 2 too)
EXIT_UNREACHABLE = 3  # no broker answered within the timeout

# librdkafka's own (negative) codes that mean no broker could be reached in time
_UNREACHABLE_NAMES = ("_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "_RESOLVE")


class CommandError(Exception):
    """A tool's failure: printed as ``wirekafka <command>: <message>``, then exit ``exit_code``."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def command_name(args: argparse.Namespace) -> str:
    """The command as a message names it: ``groups delete``, ``produce``."""
    # a group command's parser keeps its subcommand as ``<command>_command``
    action = getattr(args, f"{args.command.replace('-', '_')}_command", None)
    return f"{args.command} {action}" if action else str(args.command)


def from_kafka_error(
    error: KafkaError,
    *,
    broker: str,
    topic: str | None = None,
    doing: str | None = None,
    group: str | None = None,
) -> CommandError:
    """A :class:`CommandError` naming the broker, the topic, the consumer group
    (when there is one) and the error's code.

    ``doing`` says what was asked (``"create topic"``); a code of librdkafka's
    that means no broker answered exits with :data:`EXIT_UNREACHABLE`.
    """
    what = f"{doing} " if doing else ""
    where = f"topic {topic!r} on {broker}" if topic else broker
    if group:
        where = f"group {group!r}, {where}" if topic else f"group {group!r} on {broker}"
    code = error.code()
    detail = error.str()
    name = error.name()
    message = f"{what}{where}: {name} (error code {code})"
    if detail and detail != name:
        message += f": {detail}"
    exit_code = EXIT_UNREACHABLE if unreachable(error) else EXIT_FAILED
    return CommandError(message, exit_code)


def unreachable(error: KafkaError) -> bool:
    """Whether librdkafka reports that no broker could be reached (in time)."""
    return error.name() in _UNREACHABLE_NAMES
