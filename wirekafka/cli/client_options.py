"""The options every client tool takes, and the librdkafka config they make.

``--bootstrap-server`` (default ``localhost:9092``), ``--command-config FILE``
(a properties file of client settings, as Kafka's tools take it),
``--timeout`` (seconds to wait for the broker) and ``--debug CONTEXTS``.

librdkafka's own log is off in every tool (``log_level`` 0): each failure
reaches the user once, as the tool's error naming the broker and Kafka's
error code. ``--debug CONTEXTS`` (librdkafka's ``debug``: ``broker,protocol``,
``all``, ...) turns it on with those contexts at level 7; a ``log_level`` or
``debug`` in the command config or in a tool's ``--property`` options wins. The tools are built on
confluent-kafka (librdkafka): the file's keys are librdkafka's, which for the
usual settings are Kafka's own (``security.protocol``, ``sasl.mechanism``,
``client.id``); the Java client's keys with another shape are translated
(:mod:`wirekafka.java_client_settings`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from confluent_kafka import KafkaError

from wirekafka.cli.errors import EXIT_USAGE, CommandError
from wirekafka.config import read_properties_file
from wirekafka.java_client_settings import translate_java_settings
from wirekafka.storage.config import ConfigError

DEFAULT_BOOTSTRAP = "localhost:9092"
DEFAULT_TIMEOUT_S = 30.0
QUIET_LOG_LEVEL = 0  # librdkafka's syslog levels: nothing
DEBUG_LOG_LEVEL = 7  # everything, with --debug


class LoginFailures:
    """The failed logins librdkafka reports (through ``error_cb``): a request that then
    fails as a lost connection is reported as the broker's refusal, which says why."""

    def __init__(self) -> None:
        self.last: KafkaError | None = None

    def note(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            self.last = error


LOGIN_FAILURES = LoginFailures()  # one command runs per process


def add_client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT[,...]",
        help=f"the broker(s) to connect to (default {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="client settings as properties (security.protocol, sasl.*, ssl.*, client.id, ...)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the broker (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--debug",
        metavar="CONTEXTS",
        help="print librdkafka's debug log of these contexts on stderr "
        "(broker,protocol,consumer,...; all); without it the client library is silent",
    )


def client_config(args: argparse.Namespace, **settings: str | int | bool) -> dict[str, object]:
    """librdkafka's config for the tool: the bootstrap servers and the log policy
    (``--debug``), the command config's settings (translated), then the tool's
    own ``settings`` (``group.id``, ...)."""
    config: dict[str, object] = {
        "bootstrap.servers": args.bootstrap_server,
        "error_cb": LOGIN_FAILURES.note,
    }
    if args.debug:
        config.update({"debug": args.debug, "log_level": DEBUG_LOG_LEVEL})
    else:
        config["log_level"] = QUIET_LOG_LEVEL
    if args.command_config is not None:
        try:
            properties = read_properties_file(args.command_config)
        except (OSError, ConfigError) as exc:
            raise CommandError(f"--command-config: {exc}", EXIT_USAGE) from exc
        try:
            config.update(translate_java_settings(properties))
        except ValueError as exc:
            raise CommandError(f"--command-config: {exc}", EXIT_USAGE) from None
    config.update(settings)
    return config
