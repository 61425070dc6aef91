"""``wirekafka topics list|describe|create|delete|alter``: manage topics, as
Kafka's ``kafka-topics`` does, through the admin client."""

from __future__ import annotations

import argparse

from wirekafka.cli.client_options import add_client_options
from wirekafka.cli.output import add_output_options
from wirekafka.cli.topic_changes import run_alter, run_create, run_delete
from wirekafka.cli.topic_views import run_describe, run_list


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    topics = subparsers.add_parser(
        "topics", help="list, describe, create, delete and alter topics", description=__doc__
    )
    commands = topics.add_subparsers(dest="topics_command", metavar="SUBCOMMAND", required=True)

    listing = commands.add_parser(
        "list",
        help="the topics, with their partition counts and replication factors",
        description="List the topics: name, partitions, replication factor. "
        "--json prints a list of {name, partitions, replication_factor, internal}.",
    )
    listing.add_argument(
        "--internal", action="store_true", help="include internal topics (__consumer_offsets)"
    )
    add_output_options(listing)
    add_client_options(listing)
    listing.set_defaults(run=run_list)

    describe = commands.add_parser(
        "describe",
        help="partitions (leader, replicas, ISR) and non-default configs of topics",
        description="Describe topics (all of them when none is named): per partition its "
        "leader, replicas and in-sync replicas; the configs that are not defaults, with "
        "their source. --json prints a list of {name, internal, partitions: [{partition, "
        "leader, replicas, isr}], replication_factor, configs: {KEY: {value, source}}}.",
    )
    describe.add_argument("topics", nargs="*", metavar="TOPIC")
    describe.add_argument(
        "--internal",
        action="store_true",
        help="with no TOPIC, include internal topics (__consumer_offsets)",
    )
    add_output_options(describe)
    add_client_options(describe)
    describe.set_defaults(run=run_describe)

    create = commands.add_parser(
        "create", help="create a topic", description="Create a topic (CreateTopics)."
    )
    create.add_argument("topic", metavar="TOPIC")
    create.add_argument(
        "--partitions",
        type=positive_int,
        metavar="N",
        help="the partition count (default: the broker's num.partitions)",
    )
    create.add_argument(
        "--replication-factor",
        type=positive_int,
        metavar="R",
        help="replicas per partition (default: the broker's default.replication.factor)",
    )
    create.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config (retention.ms=86400000); repeatable",
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="succeed when the topic exists already"
    )
    add_output_options(create)
    add_client_options(create)
    create.set_defaults(run=run_create)

    delete = commands.add_parser(
        "delete", help="delete topics", description="Delete topics (DeleteTopics)."
    )
    delete.add_argument("topics", nargs="+", metavar="TOPIC")
    delete.add_argument(
        "--if-exists", action="store_true", help="succeed for a topic that does not exist"
    )
    add_output_options(delete)
    add_client_options(delete)
    delete.set_defaults(run=run_delete)

    alter = commands.add_parser(
        "alter",
        help="add partitions to a topic, set or delete its configs",
        description="Raise a topic's partition count (CreatePartitions) and set or delete "
        "its configs (IncrementalAlterConfigs; other configs are kept).",
    )
    alter.add_argument("topic", metavar="TOPIC")
    alter.add_argument(
        "--partitions", type=positive_int, metavar="N", help="the new, higher partition count"
    )
    alter.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a topic config; repeatable",
    )
    alter.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="KEY",
        help="remove a topic config (back to the broker's default); repeatable",
    )
    add_output_options(alter)
    add_client_options(alter)
    alter.set_defaults(run=run_alter)
