"""``wirekafka topics list`` and ``topics describe``: what the broker reports of topics.

``list --json`` prints a list of ``{"name", "partitions", "replication_factor",
"internal"}``; ``describe --json`` a list of ``{"name", "internal",
"partitions": [{"partition", "leader", "replicas", "isr"}], "replication_factor",
"configs": {KEY: {"value", "source"}}}``. ``configs`` holds the topic's configs
that are not defaults, as DescribeConfigs reports them, with Kafka's name of
their source (``DYNAMIC_TOPIC_CONFIG`` for the topic's own, ``STATIC_BROKER_CONFIG``
for a broker's setting); a sensitive value is ``null``. A leader of ``-1`` (none)
is ``null``.
"""

from __future__ import annotations

import argparse
from typing import Any

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from wirekafka.cli.kafka_clients import admin_client, cluster_metadata, wait
from wirekafka.cli.output import print_json, print_table

TopicView = dict[str, Any]


def run_list(args: argparse.Namespace) -> int:
    client = admin_client(args)
    views = _describe_topics(client, args, _topic_names(client, args), args.internal)
    rows = [
        {
            "name": view["name"],
            "partitions": len(view["partitions"]),
            "replication_factor": view["replication_factor"],
            "internal": view["internal"],
        }
        for view in views
    ]
    if args.json:
        print_json(rows)
    else:
        print_table(
            ["TOPIC", "PARTITIONS", "REPLICATION FACTOR"],
            [(row["name"], row["partitions"], row["replication_factor"]) for row in rows],
        )
    return 0


def run_describe(args: argparse.Namespace) -> int:
    client = admin_client(args)
    names = args.topics or _topic_names(client, args)
    # a topic named is described, internal or not
    views = _describe_topics(client, args, names, args.internal or bool(args.topics))
    _add_configs(client, args, views)
    if args.json:
        print_json(views)
        return 0
    for view in views:
        title = (
            f"{view['name']}: {len(view['partitions'])} partitions, "
            f"replication factor {view['replication_factor']}"
            + (", internal" if view["internal"] else "")
        )
        print_table(
            ["PARTITION", "LEADER", "REPLICAS", "ISR"],
            [
                (p["partition"], p["leader"], _ids(p["replicas"]), _ids(p["isr"]))
                for p in view["partitions"]
            ],
            title=title,
        )
        if view["configs"]:
            print_table(
                ["CONFIG", "VALUE", "SOURCE"],
                [(key, c["value"], c["source"]) for key, c in view["configs"].items()],
            )
    return 0


def _ids(node_ids: list[int]) -> str:
    return ",".join(str(node_id) for node_id in node_ids)


def _topic_names(client: AdminClient, args: argparse.Namespace) -> list[str]:
    """Every topic's name (internal ones only with ``--internal``; their flag is
    checked when they are described)."""
    return sorted(cluster_metadata(client, args).topics)


def _describe_topics(
    client: AdminClient, args: argparse.Namespace, names: list[str], include_internal: bool
) -> list[TopicView]:
    if not names:
        return []
    futures = client.describe_topics(TopicCollection(names), request_timeout=args.timeout)
    views = []
    for name in names:
        description = wait(futures[name], args, topic=name, doing="describe")
        if description.is_internal and not include_internal:
            continue
        partitions = [
            {
                "partition": p.id,
                "leader": None if p.leader is None or p.leader.id < 0 else p.leader.id,
                "replicas": [node.id for node in p.replicas],
                "isr": [node.id for node in p.isr],
            }
            for p in sorted(description.partitions, key=lambda p: p.id)
        ]
        views.append(
            {
                "name": name,
                "internal": description.is_internal,
                "partitions": partitions,
                "replication_factor": len(partitions[0]["replicas"]) if partitions else 0,
            }
        )
    return views


def _add_configs(client: AdminClient, args: argparse.Namespace, views: list[TopicView]) -> None:
    """Each view's ``configs``: the topic's configs that are not defaults."""
    if not views:
        return
    resources = {view["name"]: ConfigResource(ResourceType.TOPIC, view["name"]) for view in views}
    futures = client.describe_configs(list(resources.values()), request_timeout=args.timeout)
    for view in views:
        name = view["name"]
        entries = wait(futures[resources[name]], args, topic=name, doing="describe configs of")
        view["configs"] = {
            key: {
                "value": None if entry.is_sensitive else entry.value,
                "source": _source_name(entry.source),
            }
            for key, entry in sorted(entries.items())
            if not entry.is_default
        }


def _source_name(source: object) -> str:
    if isinstance(source, ConfigSource):
        return source.name
    try:
        return ConfigSource(source).name
    except ValueError:
        return ConfigSource.UNKNOWN_CONFIG.name
