"""How the driver's metadata requests are retried: what waiting may mend, and for how long."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from wirekafka.spark import client
from wirekafka.spark.client import KafkaClientError, retried


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "RETRY_INTERVAL_S", 0.001)


def failing(codes: list[int], result: str = "metadata"):
    calls: list[float] = []

    def attempt(left_s: float) -> str:
        calls.append(left_s)
        if len(calls) <= len(codes):
            raise KafkaException(KafkaError(codes[len(calls) - 1]))
        return result

    return attempt, calls


def test_passing_errors_are_retried_until_the_request_succeeds() -> None:
    attempt, calls = failing([KafkaError._TRANSPORT, KafkaError.LEADER_NOT_AVAILABLE])
    assert retried("list offsets", attempt, timeout_s=10) == "metadata"
    assert len(calls) == 3
    assert all(0 < left <= 10 for left in calls)


def test_errors_that_waiting_cannot_mend_fail_at_once() -> None:
    attempt, calls = failing([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(KafkaClientError, match=r"cannot list offsets: .*TOPIC_AUTHORIZATION"):
        retried("list offsets", attempt, timeout_s=10)
    assert len(calls) == 1


def test_retries_stop_at_the_timeout() -> None:
    attempt, calls = failing([KafkaError._TRANSPORT] * 1_000_000)
    with pytest.raises(KafkaClientError, match=r"cannot read the metadata: .*TRANSPORT"):
        retried("read the metadata", attempt, timeout_s=0.05)
    assert 1 <= len(calls) < 1_000
