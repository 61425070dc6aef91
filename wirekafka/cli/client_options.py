"""The options every client tool takes, and the librdkafka config they make.

``--bootstrap-server`` (default ``localhost:9092``), ``--command-config FILE``
(a properties file of client settings, as Kafka's tools take it) and
``--timeout`` (seconds to wait for the broker). The tools are built on
confluent-kafka (librdkafka): the file's keys are librdkafka's, which for the
usual settings are Kafka's own (``security.protocol``, ``sasl.mechanism``,
``client.id``); the Java client's keys with another shape are translated
(``sasl.jaas.config``'s username and password, PEM ``ssl.truststore.location``
and ``ssl.keystore.location``, an empty ``ssl.endpoint.identification.algorithm``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from wirekafka.cli.errors import EXIT_USAGE, CommandError
from wirekafka.config import read_properties_file
from wirekafka.storage.config import ConfigError

DEFAULT_BOOTSTRAP = "localhost:9092"
DEFAULT_TIMEOUT_S = 30.0

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


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


def client_config(args: argparse.Namespace, **settings: str | int | bool) -> dict[str, object]:
    """librdkafka's config for the tool: the bootstrap servers, the command config's
    settings (translated), then the tool's own ``settings`` (``group.id``, ...)."""
    config: dict[str, object] = {"bootstrap.servers": args.bootstrap_server}
    if args.command_config is not None:
        try:
            properties = read_properties_file(args.command_config)
        except (OSError, ConfigError) as exc:
            raise CommandError(f"--command-config: {exc}", EXIT_USAGE) from exc
        config.update(translate_java_settings(properties))
    config.update(settings)
    return config


def translate_java_settings(properties: dict[str, str]) -> dict[str, str]:
    """Kafka (Java client) settings as librdkafka takes them; others are kept."""
    translated: dict[str, str] = {}
    for key, value in properties.items():
        if key == "sasl.jaas.config":
            options = dict(_JAAS_OPTION.findall(value))
            for option, target in (("username", "sasl.username"), ("password", "sasl.password")):
                if option in options:
                    translated[target] = options[option].replace('\\"', '"')
        elif key == "ssl.truststore.location":
            translated["ssl.ca.location"] = value
        elif key == "ssl.keystore.location":  # PEM: the key and its certificate chain
            translated["ssl.certificate.location"] = value
            translated["ssl.key.location"] = value
        elif key == "ssl.key.password":
            translated["ssl.key.password"] = value
        elif key == "ssl.endpoint.identification.algorithm" and not value:
            translated[key] = "none"
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise CommandError(f"--command-config: {key}={value}: only PEM is read", EXIT_USAGE)
        else:
            translated[key] = value
    return translated
