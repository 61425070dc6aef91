"""``KEY=VALUE`` arguments (``--config``, ``--header``, ``--property``)."""

from __future__ import annotations

from wirekafka.cli.errors import EXIT_USAGE, CommandError


def split_key_value(item: str, option: str) -> tuple[str, str]:
    """``"k=v"`` as ``("k", "v")``: split at the first ``=``; the value may be empty."""
    key, equals, value = item.partition("=")
    if not equals or not key:
        raise CommandError(f"{option} {item!r}: expected KEY=VALUE", EXIT_USAGE)
    return key, value


def key_values(items: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` items as a dict; a later item wins over an earlier one."""
    return dict(split_key_value(item, option) for item in items)
