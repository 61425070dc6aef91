"""``wirekafka topics create``, ``delete`` and ``alter``: CreateTopics,
DeleteTopics, CreatePartitions and IncrementalAlterConfigs through the admin
client. Each prints one line per topic changed on stdout, or with ``--json``
one document saying what was done::

    create: {"topic": str, "created": bool (false: it existed, --if-not-exists),
             "partitions": int | null, "replication_factor": int | null,
             "configs": {KEY: VALUE}}     (null: the broker's default)
    delete: {"deleted": [str], "not_found": [str] (skipped, --if-exists),
             "failed": [{"topic": str, "error": str, "error_code": int}]}
    alter:  {"topic": str, "partitions": int | null (the new count, when raised),
             "set_configs": {KEY: VALUE}, "deleted_configs": [KEY]}

A failure still exits 1 naming the error on stderr; ``delete --json`` prints
its document first, so the topics that were deleted are known.
"""

from __future__ import annotations

import argparse
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from wirekafka.cli.errors import EXIT_USAGE, CommandError, from_kafka_error
from wirekafka.cli.kafka_clients import admin_client, kafka_error, wait
from wirekafka.cli.key_values import key_values
from wirekafka.cli.output import print_json

# NewTopic's "the broker's default" (num.partitions, default.replication.factor)
BROKER_DEFAULT = -1


def run_create(args: argparse.Namespace) -> int:
    configs = key_values(args.config, "--config")
    new_topic = NewTopic(
        args.topic,
        num_partitions=args.partitions if args.partitions is not None else BROKER_DEFAULT,
        replication_factor=(
            args.replication_factor if args.replication_factor is not None else BROKER_DEFAULT
        ),
        config=configs,
    )
    client = admin_client(args)
    futures = client.create_topics(
        [new_topic], request_timeout=args.timeout, operation_timeout=args.timeout
    )
    created = True
    try:
        futures[args.topic].result()
    except KafkaException as exc:
        error = kafka_error(exc)
        if not (args.if_not_exists and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
            raise from_kafka_error(
                error, broker=args.bootstrap_server, topic=args.topic, doing="create"
            ) from exc
        created = False
    if args.json:
        print_json(
            {
                "topic": args.topic,
                "created": created,
                "partitions": args.partitions,
                "replication_factor": args.replication_factor,
                "configs": configs,
            }
        )
    else:
        print(f"Created topic {args.topic}." if created else f"Topic {args.topic} already exists.")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    client = admin_client(args)
    topics = list(dict.fromkeys(args.topics))
    futures = client.delete_topics(
        topics, request_timeout=args.timeout, operation_timeout=args.timeout
    )
    failures: list[CommandError] = []
    done: dict[str, list[Any]] = {"deleted": [], "not_found": [], "failed": []}
    for topic in topics:
        try:
            futures[topic].result()
        except KafkaException as exc:
            error = kafka_error(exc)
            if args.if_exists and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                done["not_found"].append(topic)
                continue
            failures.append(
                from_kafka_error(error, broker=args.bootstrap_server, topic=topic, doing="delete")
            )
            done["failed"].append(
                {"topic": topic, "error": error.name(), "error_code": error.code()}
            )
            continue
        done["deleted"].append(topic)
        if not args.json:
            print(f"Deleted topic {topic}.")
    if args.json:
        print_json(done)
    if failures:
        raise CommandError("; ".join(map(str, failures)), failures[0].exit_code)
    return 0


def run_alter(args: argparse.Namespace) -> int:
    configs = key_values(args.config, "--config")
    if args.partitions is None and not configs and not args.delete_config:
        raise CommandError("alter: give --partitions, --config or --delete-config", EXIT_USAGE)
    both = set(configs) & set(args.delete_config)
    if both:
        raise CommandError(f"alter: {', '.join(sorted(both))} both set and deleted", EXIT_USAGE)
    client = admin_client(args)
    if args.partitions is not None:
        futures = client.create_partitions(
            [NewPartitions(args.topic, args.partitions)],
            request_timeout=args.timeout,
            operation_timeout=args.timeout,
        )
        wait(futures[args.topic], args, topic=args.topic, doing="add partitions to")
        if not args.json:
            print(f"Topic {args.topic} now has {args.partitions} partitions.")
    if configs or args.delete_config:
        changes = [
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
            for key, value in configs.items()
        ] + [
            ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)
            for key in args.delete_config
        ]
        resource = ConfigResource(ResourceType.TOPIC, args.topic, incremental_configs=changes)
        config_futures = client.incremental_alter_configs([resource], request_timeout=args.timeout)
        wait(config_futures[resource], args, topic=args.topic, doing="alter configs of")
        if not args.json:
            print(f"Altered the configs of topic {args.topic}.")
    if args.json:
        print_json(
            {
                "topic": args.topic,
                "partitions": args.partitions,
                "set_configs": configs,
                "deleted_configs": list(dict.fromkeys(args.delete_config)),
            }
        )
    return 0
