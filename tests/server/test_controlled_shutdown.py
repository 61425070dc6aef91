"""The broker's side of a controlled shutdown, without sockets: the controller's
answers are scripted, the cluster and the replicas are fakes, time is trio's mock
clock. Attempts are Kafka's count, retried after the backoff, and given up early
when no other replica of what is in question is registered any more."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from wirekafka.broker.cluster import BrokerEndpoint
from wirekafka.config import broker_config_from_properties
from wirekafka.server import controlled_shutdown as shutdown
from wirekafka.server.controlled_shutdown import Attempt

BACKOFF_MS = 5000


class FakeCluster:
    """Brokers 0 (this one), 1 and 2 registered; every partition on all three."""

    def __init__(self) -> None:
        self.live = [0, 1, 2]

    def brokers(self, listener_name: str | None = None) -> list[BrokerEndpoint]:
        return [BrokerEndpoint(b, "h", 9092 + b) for b in self.live]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return [0, 1, 2]


class FakeReplicas:
    def __init__(self) -> None:
        self.shutting_down = False
        self.led: dict[tuple[str, int], Any] = {("t", 0): None}
        self.followed: dict[tuple[str, int], Any] = {("t", 1): None}
        self.movable: list[tuple[str, int]] = []
        self.reconciled = 0

    async def begin_shutdown(self) -> None:
        self.shutting_down = True

    async def reconcile(self) -> None:
        self.reconciled += 1

    def movable_leaderships(self, live: Any) -> list[tuple[str, int]]:
        return self.movable


def run_shutdown(
    answers: list[Attempt],
    *,
    retries: int = 3,
    cluster: FakeCluster | None = None,
    replicas: FakeReplicas | None = None,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[bool, int, float]:
    """Whether it succeeded, how many requests were sent, how long it took (mock time)."""
    config = broker_config_from_properties(
        {
            "controlled.shutdown.max.retries": str(retries),
            "controlled.shutdown.retry.backoff.ms": str(BACKOFF_MS),
        }
    )
    asked: list[int] = []

    async def ask(zookeeper: object, broker_id: int, connector: object) -> Attempt:
        asked.append(broker_id)
        return answers.pop(0)

    monkeypatch.setattr(shutdown, "_ask_controller", ask)
    replicas = replicas or FakeReplicas()

    async def main() -> tuple[bool, float]:
        started = trio.current_time()
        succeeded = await shutdown.controlled_shutdown(
            config,
            None,  # type: ignore[arg-type]
            replicas,  # type: ignore[arg-type]
            cluster or FakeCluster(),  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
        )
        return succeeded, trio.current_time() - started

    succeeded, took = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert replicas.shutting_down
    assert set(asked) <= {0}
    return succeeded, len(asked), took


def test_an_answer_with_nothing_remaining_is_success(monkeypatch, caplog):
    replicas = FakeReplicas()
    with caplog.at_level(logging.INFO, logger="wirekafka.server"):
        assert run_shutdown(
            [Attempt(answered=True)], replicas=replicas, monkeypatch=monkeypatch
        ) == (
            True,
            1,
            0.0,
        )
    assert "controlled shutdown succeeded" in caplog.text
    assert replicas.reconciled == 1  # it looked once whether it still leads anything


def test_failures_are_retried_after_the_backoff_as_many_times_as_configured(monkeypatch, caplog):
    failures = [Attempt(error="no controller") for _ in range(3)]
    with caplog.at_level(logging.INFO, logger="wirekafka.server"):
        succeeded, asked, took = run_shutdown(failures, monkeypatch=monkeypatch)
    assert (succeeded, asked) == (False, 3)
    assert took == pytest.approx(2 * BACKOFF_MS / 1000)  # none after the last attempt
    assert "attempt 1 of 3 failed: no controller; trying again in 5000 ms" in caplog.text
    assert "attempt 3 of 3 failed: no controller" in caplog.text
    assert "did not succeed; proceeding with the shutdown" in caplog.text


def test_remaining_partitions_are_asked_about_again(monkeypatch):
    answers = [Attempt(remaining=[("t", 0)], answered=True), Attempt(answered=True)]
    assert run_shutdown(answers, monkeypatch=monkeypatch) == (True, 2, BACKOFF_MS / 1000)


def test_retries_end_once_no_other_replica_is_registered(monkeypatch, caplog):
    cluster = FakeCluster()
    cluster.live = [0]  # the others have stopped
    answers = [Attempt(remaining=[("t", 0)], answered=True)]
    with caplog.at_level(logging.INFO, logger="wirekafka.server"):
        assert run_shutdown(answers, cluster=cluster, monkeypatch=monkeypatch) == (False, 1, 0.0)
    assert "no other replica of t-0 is registered any more; not trying again" in caplog.text
    # after a failure, what is in question is every partition led or followed here
    assert run_shutdown([Attempt(error="x")], cluster=cluster, monkeypatch=monkeypatch) == (
        False,
        1,
        0.0,
    )


def test_no_attempt_with_zero_retries(monkeypatch):
    assert run_shutdown([], retries=0, monkeypatch=monkeypatch) == (False, 0, 0.0)


def test_the_wait_for_leaderships_to_move_is_bounded(monkeypatch, caplog):
    replicas = FakeReplicas()
    replicas.movable = [("t", 0)]  # the cache never catches up
    with caplog.at_level(logging.INFO, logger="wirekafka.server"):
        succeeded, _, took = run_shutdown(
            [Attempt(answered=True)], replicas=replicas, monkeypatch=monkeypatch
        )
    assert succeeded
    assert took == pytest.approx(shutdown.LEADERSHIP_WAIT_S)
    assert "still leading t-0 after 5 s" in caplog.text
