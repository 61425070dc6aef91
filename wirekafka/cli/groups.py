"""``wirekafka groups list|describe|reset-offsets|delete``: consumer groups, as
Kafka's ``kafka-consumer-groups`` shows and changes them, against any
Kafka-protocol broker.

``describe --json`` prints a list with one object per group asked::

    {"group_id": str, "state": "Stable" | "Empty" | "PreparingRebalance" | ...,
     "coordinator": {"id": int, "host": str, "port": int} | null,
     "partition_assignor": str,
     "members": [{"member_id": str, "group_instance_id": str | null,
                  "client_id": str, "host": str,
                  "assignment": [{"topic": str, "partition": int}]}],
     "partitions": [{"topic": str, "partition": int,
                     "committed_offset": int | null, "log_end_offset": int | null,
                     "lag": int | null, "member_id": str | null,
                     "client_id": str | null, "host": str | null}],
     "total_lag": int}

``partitions`` holds every partition the group has committed an offset for or
has assigned to a member; ``lag`` is ``log_end_offset - committed_offset``
(``null`` when nothing is committed) and ``total_lag`` their sum. ``list
--json`` prints ``[{"group_id", "state", "protocol_type"}]``; ``reset-offsets
GROUP --json`` prints ``{"group_id", "executed", "partitions": [{"topic",
"partition", "committed_offset", "new_offset"}]}``, and ``reset-offsets
--all-groups --json`` a list of those.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupState, KafkaError
from confluent_kafka.admin import ConsumerGroupDescription, OffsetSpec
from rich.markup import escape

from wirekafka.cli.client_options import add_client_options
from wirekafka.cli.errors import EXIT_OK, EXIT_USAGE, CommandError, command_name
from wirekafka.cli.group_admin import STATE_NAMES, GroupAdmin, Partition, state_name
from wirekafka.cli.iso_datetime import ISO_DATETIME_EXAMPLE, parse_iso_datetime_ms
from wirekafka.cli.iso_duration import ISO_DURATION_EXAMPLE, parse_iso_duration_ms
from wirekafka.cli.offset_reset import (
    PartitionOffsets,
    PlannedOffset,
    ResetKind,
    ResetPlanError,
    ResetStrategy,
    parse_topic_partitions,
    plan_reset,
)
from wirekafka.cli.output import add_output_options, print_json, print_table, stdout_console
from wirekafka.cli.reset_plan_csv import format_reset_csv, parse_reset_csv

# Kafka resets a group's offsets only while no consumer is in it
INACTIVE_STATES = frozenset({ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD})
_STATES_BY_NAME = {name.lower(): state for state, name in STATE_NAMES.items()}
# a partition a group committed for whose topic is gone: described without a log end
_GONE = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    groups = subparsers.add_parser(
        "groups",
        help="list, describe, reset and delete consumer groups",
        description="Consumer groups, as Kafka's kafka-consumer-groups shows and changes them.",
    )
    commands = groups.add_subparsers(dest="groups_command", metavar="SUBCOMMAND", required=True)

    listing = commands.add_parser(
        "list", help="the consumer groups", description="List consumer groups and their states."
    )
    listing.add_argument(
        "--state",
        action="append",
        default=[],
        choices=sorted(STATE_NAMES.values()),
        metavar="STATE",
        help="only groups in this state (Stable, Empty, PreparingRebalance, "
        "CompletingRebalance, Dead); repeatable",
    )
    add_output_options(listing)
    add_client_options(listing)
    listing.set_defaults(run=run_list)

    describe = commands.add_parser(
        "describe",
        help="members, committed offsets and lag of groups",
        description="State, coordinator and members of each group, and per partition its "
        "committed offset, log end offset, lag and owning consumer.",
    )
    describe.add_argument("group", nargs="*", metavar="GROUP")
    describe.add_argument("--all-groups", action="store_true", help="every consumer group")
    add_output_options(describe)
    add_client_options(describe)
    describe.set_defaults(run=run_describe)

    reset = commands.add_parser(
        "reset-offsets",
        help="move an inactive group's committed offsets (a dry run unless --execute)",
        description="Plan new committed offsets for an inactive group (or every group, "
        "--all-groups: active ones are reported and skipped) and print them; with "
        "--execute, commit them. Offsets are kept within each partition's "
        "[log start, log end] (--to-current's are kept as committed).",
    )
    reset.add_argument("group", nargs="?", metavar="GROUP")
    reset.add_argument(
        "--all-groups", action="store_true", help="every consumer group (instead of GROUP)"
    )
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="a topic (all its partitions, or those listed); repeatable",
    )
    scope.add_argument(
        "--all-topics",
        action="store_true",
        help="every topic the group has committed offsets for",
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the log start offset")
    to.add_argument("--to-latest", action="store_true", help="the log end offset")
    to.add_argument(
        "--to-current",
        action="store_true",
        help="the committed offset (the log end offset where none is committed)",
    )
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    to.add_argument(
        "--to-datetime",
        metavar="ISO8601",
        help=f"the first offset at or after this time ({ISO_DATETIME_EXAMPLE}; UTC without a zone)",
    )
    to.add_argument(
        "--by-duration",
        metavar="DURATION",
        help=f"the first offset at or after this long ago (ISO-8601, {ISO_DURATION_EXAMPLE})",
    )
    to.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N")
    to.add_argument(
        "--from-file",
        type=Path,
        metavar="CSV",
        help="the offsets in this file: topic,partition,offset lines (with the group "
        "first for --all-groups), as --export writes them; no --topic needed",
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the planned offsets")
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    add_output_options(reset)
    reset.add_argument(
        "--export",
        action="store_true",
        help="print the planned offsets as CSV, the format --from-file reads",
    )
    add_client_options(reset)
    reset.set_defaults(run=run_reset_offsets)

    delete = commands.add_parser(
        "delete",
        help="delete groups and their committed offsets",
        description="Delete groups that have no members, with their committed offsets.",
    )
    delete.add_argument("group", nargs="+", metavar="GROUP")
    add_client_options(delete)
    delete.set_defaults(run=run_delete)


# -- list


def run_list(args: argparse.Namespace) -> int:
    admin = GroupAdmin(args)
    listed = admin.list_groups({_STATES_BY_NAME[state.lower()] for state in args.state})
    rows = [
        {
            "group_id": listing.group_id,
            "state": state_name(listing.state),
            # librdkafka lists groups of the "consumer" protocol and those that only commit
            "protocol_type": "" if listing.is_simple_consumer_group else "consumer",
        }
        for listing in listed
    ]
    if args.json:
        print_json(rows)
    else:
        print_table(
            ["GROUP", "STATE", "PROTOCOL-TYPE"],
            [(r["group_id"], r["state"], r["protocol_type"] or None) for r in rows],
        )
    return EXIT_OK


# -- describe


def _member_json(description: ConsumerGroupDescription) -> list[dict[str, Any]]:
    return [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "host": m.host,
            "assignment": [
                {"topic": tp.topic, "partition": tp.partition}
                for tp in sorted(
                    m.assignment.topic_partitions if m.assignment else [],
                    key=lambda tp: (tp.topic, tp.partition),
                )
            ],
        }
        for m in description.members
    ]


def _group_json(
    description: ConsumerGroupDescription,
    committed: dict[Partition, int],
    log_ends: dict[Partition, int | KafkaError],
) -> dict[str, Any]:
    members = _member_json(description)
    owners = {
        (tp["topic"], tp["partition"]): member for member in members for tp in member["assignment"]
    }
    partitions = []
    for key in sorted(committed.keys() | owners.keys()):
        offset = committed.get(key)
        found = log_ends.get(key)
        log_end = found if isinstance(found, int) and found >= 0 else None
        owner = owners.get(key)
        partitions.append(
            {
                "topic": key[0],
                "partition": key[1],
                "committed_offset": offset,
                "log_end_offset": log_end,
                "lag": None if offset is None or log_end is None else log_end - offset,
                "member_id": owner["member_id"] if owner else None,
                "client_id": owner["client_id"] if owner else None,
                "host": owner["host"] if owner else None,
            }
        )
    coordinator = description.coordinator
    return {
        "group_id": description.group_id,
        "state": state_name(description.state),
        "coordinator": (
            None
            if coordinator is None
            else {"id": coordinator.id, "host": coordinator.host, "port": coordinator.port}
        ),
        "partition_assignor": description.partition_assignor,
        "members": members,
        "partitions": partitions,
        "total_lag": sum(p["lag"] for p in partitions if p["lag"] is not None),
    }


def _print_group(group: dict[str, Any]) -> None:
    coordinator = group["coordinator"]
    where = (
        f"coordinator {coordinator['host']}:{coordinator['port']} (id {coordinator['id']})"
        if coordinator
        else "no coordinator"
    )
    stdout_console().print(
        f"Group [bold]{escape(group['group_id'])}[/bold]: {group['state']}, {where}, "
        f"{len(group['members'])} member(s), total lag {group['total_lag']}",
        highlight=False,
        markup=True,
    )
    print_table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST"],
        [
            (
                p["topic"], p["partition"], p["committed_offset"], p["log_end_offset"],
                p["lag"], p["member_id"], p["host"],
            )
            for p in group["partitions"]
        ],
    )  # fmt: skip
    if group["members"]:
        print_table(
            ["MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"],
            [
                (
                    m["member_id"],
                    m["client_id"],
                    m["host"],
                    ", ".join(f"{tp['topic']}-{tp['partition']}" for tp in m["assignment"]) or None,
                )
                for m in group["members"]
            ],
        )


def _chosen_groups(admin: GroupAdmin, named: list[str], all_groups: bool) -> list[str]:
    """The groups ``named``, or every consumer group with ``--all-groups``."""
    if all_groups:
        return [listing.group_id for listing in admin.list_groups()]
    return list(dict.fromkeys(named))


def run_describe(args: argparse.Namespace) -> int:
    if bool(args.group) == args.all_groups:
        raise CommandError("name the groups (GROUP ...) or give --all-groups", EXIT_USAGE)
    admin = GroupAdmin(args)
    group_ids = _chosen_groups(admin, args.group, args.all_groups)
    descriptions = admin.describe(group_ids) if group_ids else {}
    found: list[tuple[ConsumerGroupDescription, dict[Partition, int]]] = []
    missing = []
    for group in group_ids:
        description = descriptions[group]
        committed = admin.committed(group)
        if description.state == ConsumerGroupState.DEAD and not committed:
            missing.append(group)
        else:
            found.append((description, committed))
    wanted: set[Partition] = set()
    for description, committed in found:
        wanted |= committed.keys()
        for member in description.members:
            assigned = member.assignment.topic_partitions if member.assignment else []
            wanted |= {(tp.topic, tp.partition) for tp in assigned}
    log_ends = admin.list_offsets(sorted(wanted), OffsetSpec.latest())
    for (topic, partition), value in sorted(log_ends.items()):
        if isinstance(value, KafkaError) and value.code() not in _GONE:
            raise admin.error(value, doing=f"list offsets (partition {partition}) of", topic=topic)
    reports = [_group_json(description, committed, log_ends) for description, committed in found]
    if args.json:
        print_json(reports)
    elif not group_ids:
        print(f"No consumer groups on {admin.broker}.")
    else:
        for number, report in enumerate(reports):
            if number:
                print()
            _print_group(report)
    if missing:
        names = ", ".join(repr(group) for group in missing)
        plural = len(missing) > 1
        raise CommandError(
            f"consumer group{'s' if plural else ''} {names} "
            f"{'do' if plural else 'does'} not exist on {admin.broker} "
            "(no members and no committed offsets)"
        )
    return EXIT_OK


# -- reset-offsets


def _strategy(args: argparse.Namespace) -> ResetStrategy:
    if args.to_earliest:
        return ResetStrategy(ResetKind.EARLIEST)
    if args.to_latest:
        return ResetStrategy(ResetKind.LATEST)
    if args.to_current:
        return ResetStrategy(ResetKind.CURRENT)
    if args.to_offset is not None:
        return ResetStrategy(ResetKind.OFFSET, args.to_offset)
    if args.to_datetime is not None:
        try:
            return ResetStrategy(ResetKind.DATETIME, parse_iso_datetime_ms(args.to_datetime))
        except ValueError as exc:
            raise ResetPlanError(f"--to-datetime {exc}") from None
    if args.by_duration is not None:
        try:
            ago_ms = parse_iso_duration_ms(args.by_duration)
        except ValueError as exc:
            raise ResetPlanError(f"--by-duration {exc}") from None
        # not before the epoch: a negative ListOffsets timestamp means something else
        return ResetStrategy(ResetKind.DATETIME, max(0, int(time.time() * 1000) - ago_ms))
    if args.from_file is not None:
        return ResetStrategy(ResetKind.FILE)
    return ResetStrategy(ResetKind.SHIFT, args.shift_by)


def _check_reset_usage(args: argparse.Namespace) -> None:
    if (args.group is None) != args.all_groups:
        raise CommandError("name one GROUP or give --all-groups", EXIT_USAGE)
    if args.json and args.export:
        raise CommandError("--json and --export: choose one output", EXIT_USAGE)
    scoped = bool(args.topic) or args.all_topics
    if args.from_file is not None and scoped:
        raise CommandError(
            "--from-file takes the partitions from the file: leave out --topic and --all-topics",
            EXIT_USAGE,
        )
    if args.from_file is None and not scoped:
        raise CommandError(
            "name the partitions: --topic TOPIC[:P,P...] or --all-topics", EXIT_USAGE
        )


def _read_reset_file(path: Path, group: str | None) -> dict[str, dict[Partition, int]]:
    try:
        return parse_reset_csv(path.read_text(encoding="utf-8"), group=group)
    except OSError as exc:
        raise ResetPlanError(f"--from-file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise ResetPlanError(f"--from-file {path}: {exc}") from None


def _partitions_to_reset(
    admin: GroupAdmin,
    group: str,
    topics: list[tuple[str, tuple[int, ...] | None]] | None,
    committed: dict[Partition, int],
) -> list[Partition]:
    """The partitions named by ``--topic`` (``topics``), or with ``--all-topics``
    (``None``) those the group has committed offsets for."""
    if topics is None:
        if not committed:
            raise CommandError(
                f"--all-topics: group {group!r} has no committed offsets on "
                f"{admin.broker}; name the topics with --topic"
            )
        return sorted(committed)
    chosen: set[Partition] = set()
    for topic, listed in topics:
        existing = admin.partitions_of(topic)
        absent = [p for p in listed or () if p not in existing]
        if absent:
            raise CommandError(
                f"topic {topic!r} on {admin.broker} has no partition "
                f"{', '.join(map(str, absent))} (it has {len(existing)})"
            )
        chosen.update((topic, p) for p in (listed if listed is not None else existing))
    return sorted(chosen)


def _offsets(
    admin: GroupAdmin, partitions: list[Partition], spec: OffsetSpec, group: str
) -> dict[Partition, int]:
    found = admin.list_offsets(partitions, spec)
    offsets: dict[Partition, int] = {}
    for (topic, partition), value in sorted(found.items()):
        if isinstance(value, KafkaError):
            raise admin.error(
                value, doing=f"list offsets (partition {partition}) for", group=group, topic=topic
            )
        offsets[(topic, partition)] = value
    return offsets


def _plan(
    admin: GroupAdmin,
    group: str,
    strategy: ResetStrategy,
    partitions: list[Partition],
    committed: dict[Partition, int],
    requested: dict[Partition, int],
) -> list[PlannedOffset]:
    starts = _offsets(admin, partitions, OffsetSpec.earliest(), group)
    ends = _offsets(admin, partitions, OffsetSpec.latest(), group)
    at_time: dict[Partition, int] = {}
    if strategy.kind == ResetKind.DATETIME:
        at_time = _offsets(admin, partitions, OffsetSpec.for_timestamp(strategy.value), group)
    return plan_reset(
        strategy,
        [
            PartitionOffsets(
                topic=key[0],
                partition=key[1],
                committed_offset=committed.get(key),
                log_start_offset=starts[key],
                log_end_offset=ends[key],
                offset_at_time=at_time[key] if at_time.get(key, -1) >= 0 else None,
                requested_offset=requested.get(key),
            )
            for key in partitions
        ],
    )


def _reset_group(
    admin: GroupAdmin,
    args: argparse.Namespace,
    description: ConsumerGroupDescription,
    strategy: ResetStrategy,
    topics: list[tuple[str, tuple[int, ...] | None]] | None,
    requested: dict[Partition, int],
) -> list[PlannedOffset]:
    """One inactive group's plan (``requested``: its offsets from ``--from-file``),
    committed with ``--execute``."""
    group = description.group_id
    if description.state not in INACTIVE_STATES:
        raise CommandError(
            f"group {group!r} on {admin.broker} is {state_name(description.state)} "
            f"with {len(description.members)} member(s): offsets can only be reset while "
            "the group is inactive (Empty); stop its consumers first"
        )
    committed = admin.committed(group)
    if strategy.kind == ResetKind.FILE:
        if not requested:
            raise CommandError(f"--from-file {args.from_file}: no offsets for group {group!r}")
        partitions = sorted(requested)
    else:
        partitions = _partitions_to_reset(admin, group, topics, committed)
    try:
        plan = _plan(admin, group, strategy, partitions, committed, requested)
    except ResetPlanError as exc:
        raise CommandError(f"group {group!r}: {exc}") from None
    if args.execute and plan:
        admin.alter(group, {(p.topic, p.partition): p.new_offset for p in plan})
    return plan


def _planned_json(group: str, executed: bool, plan: list[PlannedOffset]) -> dict[str, Any]:
    return {
        "group_id": group,
        "executed": executed,
        "partitions": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "committed_offset": p.committed_offset,
                "new_offset": p.new_offset,
            }
            for p in plan
        ],
    }


def _print_plans(args: argparse.Namespace, plans: list[tuple[str, list[PlannedOffset]]]) -> None:
    executed = bool(args.execute)
    if args.export:
        rows = [(g, p.topic, p.partition, p.new_offset) for g, plan in plans for p in plan]
        sys.stdout.write(format_reset_csv(rows, with_group=args.all_groups))
    elif args.json:
        documents = [_planned_json(group, executed, plan) for group, plan in plans]
        print_json(documents if args.all_groups else documents[0])
    else:
        print_table(
            ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
            [
                (group, p.topic, p.partition, p.committed_offset, p.new_offset)
                for group, plan in plans
                for p in plan
            ],
            title=(
                "New offsets committed"
                if executed
                else "Dry run: nothing changed (--execute commits these offsets)"
            ),
        )


def run_reset_offsets(args: argparse.Namespace) -> int:
    _check_reset_usage(args)
    try:
        strategy = _strategy(args)
        topics = (
            [parse_topic_partitions(t) for t in args.topic]
            if args.topic and not args.all_topics
            else None
        )
        file_plans = {} if args.from_file is None else _read_reset_file(args.from_file, args.group)
    except ResetPlanError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    admin = GroupAdmin(args)
    group_ids = _chosen_groups(admin, [args.group] if args.group else [], args.all_groups)
    descriptions = admin.describe(group_ids) if group_ids else {}
    plans: list[tuple[str, list[PlannedOffset]]] = []
    exit_code = EXIT_OK
    for group, description in descriptions.items():
        try:
            requested = file_plans.get(group, {})
            plans.append(
                (group, _reset_group(admin, args, description, strategy, topics, requested))
            )
        except CommandError as exc:
            if not args.all_groups:
                raise
            # as Kafka's tool does, the other groups are still reset
            print(f"wirekafka groups reset-offsets: {exc}", file=sys.stderr)
            exit_code = max(exit_code, exc.exit_code)
    _print_plans(args, plans)
    return exit_code


# -- delete


def run_delete(args: argparse.Namespace) -> int:
    admin = GroupAdmin(args)
    exit_code = EXIT_OK
    for group, failure in admin.delete(args.group).items():
        if failure is None:
            print(f"Deleted consumer group {group!r}.")
        else:
            print(f"wirekafka {command_name(args)}: {failure}", file=sys.stderr)
            exit_code = max(exit_code, failure.exit_code)
    return exit_code
