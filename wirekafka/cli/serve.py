"""``wirekafka serve [--config FILE] [--override key=value ...]``: run a broker."""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
from pathlib import Path

import trio

from wirekafka.cli.errors import EXIT_FAILED, EXIT_USAGE
from wirekafka.cli.log_format import LOG_FORMATS, configure_logging
from wirekafka.config import (
    BrokerConfig,
    broker_config_from_properties,
    parse_overrides,
    read_properties_file,
)
from wirekafka.fd_budget import FdBudgetError, raise_fd_limit
from wirekafka.server.broker import Broker
from wirekafka.storage.cluster_metadata import ClusterMetadataError, MetadataSaveError
from wirekafka.storage.config import ConfigError
from wirekafka.storage.log_manager import LogDirError
from wirekafka.storage.meta_properties import MetaPropertiesError
from wirekafka.zk.session import ZooKeeperError

STARTUP_ERRORS = (
    LogDirError,
    MetaPropertiesError,
    ClusterMetadataError,
    MetadataSaveError,
    ZooKeeperError,
    FdBudgetError,
    OSError,
)
EXIT_CONFIG_ERROR = EXIT_USAGE
EXIT_STARTUP_ERROR = EXIT_FAILED
SWITCH_INTERVAL_S = 0.001  # sys.setswitchinterval of the broker's process (see run)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser("serve", help="run a broker", description="Run a broker.")
    serve.add_argument("--config", type=Path, help="a server.properties file (Kafka's keys)")
    serve.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set one config key; repeatable; wins over --config",
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.add_argument(
        "--log-format",
        default="text",
        choices=LOG_FORMATS,
        help="log lines on stderr: text, or JSON objects (time, level, logger, message)",
    )
    serve.set_defaults(run=run)


def load_config(config_file: Path | None, overrides: list[str]) -> BrokerConfig:
    properties = read_properties_file(config_file) if config_file else {}
    properties.update(parse_overrides(overrides))
    return broker_config_from_properties(properties)


async def _serve(broker: BrokerConfig) -> None:
    server = Broker(broker)
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            endpoint = await nursery.start(server.serve)
            settle_heap()
            data_dirs = ",".join(str(d.resolve()) for d in broker.log_dirs)
            metrics = f", metrics on {server.metrics_url}" if server.metrics_url else ""
            print(
                f"wirekafka: broker {endpoint.node_id} listening on {', '.join(server.listen_urls)}"
                f" (advertised as {endpoint.host}:{endpoint.port}){metrics}, data in {data_dirs}",
                flush=True,
            )
            async for _ in signals:
                server.request_stop()
                break


def settle_heap() -> None:
    """Collect once, then leave what is left out of later collections: called
    once the broker serves, so its modules and the logs loaded at startup.

    A full collection walks every object the collector tracks, holding the
    GIL: ~50,000 once the broker has imported its modules, ~385,000 with
    9,000 partitions loaded. In a broker under load a walk of the ~50,000
    took 56-260 ms (a stall every client sees; the same walk in a fresh
    process takes ~10 ms). Frozen objects are not walked again. Nor can they
    be freed as part of a reference cycle: a log loaded at startup whose topic
    is deleted later keeps its few dozen objects until the broker stops.
    Objects made after startup are collected as usual."""
    gc.collect()
    gc.freeze()


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_level, args.log_format)
    try:
        config = load_config(args.config, args.override)
    except ConfigError as exc:
        print(f"wirekafka: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    # A thread running Python (the maintenance round, a big batch's check,
    # kazoo) keeps the GIL until the switch interval has passed and the loop
    # asks for it: at most 1 ms here, not the interpreter's 5 ms, so that one
    # is not a stall every client sees.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    raise_fd_limit()  # as the JVM does for Kafka: the soft open file limit up to the hard one
    # kazoo reports every failed connection attempt; the broker logs what matters
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    try:
        trio.run(_serve, config)
    except STARTUP_ERRORS as exc:
        print(f"wirekafka: cannot start: {exc}", file=sys.stderr)
        return EXIT_STARTUP_ERROR
    except BaseExceptionGroup as group:  # raised inside the server's nursery
        startup = group.subgroup(STARTUP_ERRORS)
        if startup is None:
            raise
        print(f"wirekafka: cannot start: {_first_leaf(startup)}", file=sys.stderr)
        return EXIT_STARTUP_ERROR
    return 0


def _first_leaf(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
