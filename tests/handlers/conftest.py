from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.handlers.support import TestBroker


@pytest.fixture
def broker(tmp_path) -> Iterator[TestBroker]:
    made = TestBroker(tmp_path / "logs")
    yield made
    made.close()


@pytest.fixture
def make_broker(tmp_path) -> Iterator:
    """A factory for brokers with extra server.properties keys."""
    made: list[TestBroker] = []

    def make(properties: dict[str, str]) -> TestBroker:
        result = TestBroker(tmp_path / f"logs{len(made)}", properties)
        made.append(result)
        return result

    yield make
    for result in made:
        result.close()
