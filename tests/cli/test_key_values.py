"""KEY=VALUE arguments."""

from __future__ import annotations

import pytest

from wirekafka.cli.errors import EXIT_USAGE, CommandError
from wirekafka.cli.key_values import key_values, split_key_value


def test_split_at_the_first_equals_sign() -> None:
    assert split_key_value("a=b=c", "--config") == ("a", "b=c")
    assert split_key_value("a=", "--config") == ("a", "")


@pytest.mark.parametrize("item", ["a", "=b", ""])
def test_items_without_a_key_are_usage_errors(item: str) -> None:
    with pytest.raises(CommandError, match=r"--header .*KEY=VALUE") as caught:
        split_key_value(item, "--header")
    assert caught.value.exit_code == EXIT_USAGE


def test_a_later_item_wins() -> None:
    assert key_values(["a=1", "b=2", "a=3"], "--property") == {"a": "3", "b": "2"}
